#!/usr/bin/env bash
# Sets up (Debian packages, .venv), builds with warnings as errors, and runs every test:
# the C++ unit and integration tests (CTest) and the Python harness and template tests
# (pytest under Triton's CPU interpreter). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$(date +%s)
bash scripts/setup.sh
# -O1 without debug info, in its own folder: the tests need no debugger, and the build
# stays short on 2 cores.
KAGENT_BUILD_DIR=build-test bash scripts/build.sh -DKAGENT_WERROR=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_C_FLAGS_RELEASE=-O1
echo "build: done in $(( $(date +%s) - start )) s"

status=0
export TRITON_INTERPRET=1
echo "== pytest: harness and templates (Triton interpreter, CPU) =="
# One run per folder: each has its own conftest.py.
for d in python/tests engines/heuristic/tests problems; do
  .venv/bin/python -m pytest -q -p no:cacheprovider "$d" || status=1
done
echo "== ctest: C++ unit and integration tests =="
(cd build-test && ctest --output-on-failure -j2 --timeout 1500) || status=1
echo "tests: done in $(( $(date +%s) - start )) s (status $status)"
exit $status
