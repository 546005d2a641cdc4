#!/usr/bin/env bash
# Installs what the build and the tests need on a Debian 12 machine:
# Debian packages (C++ toolchain and libraries, PostgreSQL server for storage tests)
# and a project-local Python virtual environment (.venv) with torch, triton, numpy.
# Idempotent: a second run only checks. Usage: scripts/setup.sh [--no-python]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

pkgs=(build-essential cmake ninja-build pkg-config git curl ca-certificates
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
      libcurl4-openssl-dev nlohmann-json3-dev prometheus-cpp-dev catch2 libsqlite3-dev
      libpq-dev libssl-dev python3 python3-venv python3-dev
      postgresql golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev)
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
    echo "setup: installing torch, triton, numpy into .venv (PyPI)"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q torch triton numpy pytest
  fi
fi
echo "setup: ok"
