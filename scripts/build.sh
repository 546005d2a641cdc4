#!/usr/bin/env bash
# Configures and builds everything into build/ (Ninja, all cores). Usage: scripts/build.sh [cmake args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C build
