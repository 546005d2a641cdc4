#!/usr/bin/env bash
# Installs what the build and the tests need on a Debian 12 machine:
# Debian packages (C++ toolchain and libraries, PostgreSQL server for storage tests, Go for
# the chart test, prometheus for promtool: the alert rules' tests, chromium and a font for
# the HTML report's headless-browser test)
# and a project-local Python virtual environment (.venv) with torch, triton, numpy, pytest,
# grpcio, grpcio-tools and nvidia-cutlass (the CUTLASS headers).
# Idempotent: a second run only checks. Usage: scripts/setup.sh [--no-python]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

pkgs=(build-essential cmake ninja-build pkg-config git curl ca-certificates
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
      libcurl4-openssl-dev nlohmann-json3-dev prometheus-cpp-dev catch2 libsqlite3-dev
      libpq-dev libssl-dev python3 python3-venv python3-dev bubblewrap
      postgresql golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev
      prometheus chromium fonts-dejavu-core)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${1:-}" != "--no-python" ]; then
  py=${KAGENT_PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($py --version)"
    "$py" -m venv .venv
  fi
  if ! .venv/bin/python -c "import torch, triton, numpy" 2>/dev/null; then
    # PyPI's torch brings its CUDA libraries: about 3 GB of wheels, 5.5 GB installed.
    # --no-cache-dir keeps pip from storing a second copy of the wheels under ~/.cache.
    need_kb=$((9 * 1024 * 1024))
    free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
    echo "setup: installing torch, triton, numpy into .venv (PyPI; $((free_kb / 1024 / 1024)) GB free here)"
    if [ "$free_kb" -lt "$need_kb" ]; then
      echo "setup: warning: under 9 GB free on $(df -P . | awk 'NR == 2 { print $6 }'); the install may run out of space" >&2
    fi
    if ! { .venv/bin/pip install -q --no-cache-dir --upgrade pip &&
           .venv/bin/pip install -q --no-cache-dir torch triton numpy pytest; }; then
      echo "setup: pip failed; $(df -Ph . | awk 'NR == 2 { print $4 " free on " $6 }')." \
           "torch with its CUDA libraries needs about 9 GB free while it installs." >&2
      exit 1
    fi
  fi
  # The Python client example (examples/python_client.py) and its test: gRPC for Python
  # and grpcio-tools, whose bundled protoc generates the stubs (docs/api.md).
  if ! .venv/bin/python -c "import grpc, grpc_tools" 2>/dev/null; then
    echo "setup: installing grpcio, grpcio-tools into .venv (PyPI)"
    .venv/bin/pip install -q --no-cache-dir grpcio grpcio-tools
  fi
  # The CUTLASS / CuTe C++ headers the CUDA templates build against (engines/heuristic/
  # templates, "language": "cuda"; docs/templates.md) and their nvcc compile test: the
  # nvidia-cutlass wheel (6.4 MB; headers under cutlass_library/source/include). --no-deps:
  # only the headers are used, not its Python generator (cuda-python, scipy, networkx, ...).
  cutlass_version=4.2.0.0
  if [ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("nvidia-cutlass"))' 2>/dev/null)" != "$cutlass_version" ]; then
    echo "setup: installing nvidia-cutlass==$cutlass_version (CUTLASS headers) into .venv (PyPI)"
    .venv/bin/pip install -q --no-cache-dir --no-deps "nvidia-cutlass==$cutlass_version"
  fi
fi
echo "setup: ok"
