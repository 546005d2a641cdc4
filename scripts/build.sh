#!/usr/bin/env bash
# Configures and builds into $KAGENT_BUILD_DIR, default build/ (Ninja, all cores):
# everything, or only the targets named in $KAGENT_BUILD_TARGETS (space-separated).
# Usage: scripts/build.sh [cmake args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${KAGENT_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# shellcheck disable=SC2086  # the targets are a word list on purpose
ninja -C "$dir" ${KAGENT_BUILD_TARGETS:-}
