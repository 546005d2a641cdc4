#!/usr/bin/env bash
# Configures and builds everything (Ninja, all cores) into $KAGENT_BUILD_DIR, default build/.
# Usage: scripts/build.sh [cmake args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${KAGENT_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$dir"
