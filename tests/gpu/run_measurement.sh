#!/usr/bin/env bash
# The measurement path's figures on a GPU machine (docs/measurement.md): the harness
# server's cost per candidate (tests/gpu/measure_bench.py) and the adversarial suite
# through the server (tests/gpu/run_suite.py --server). Usage, from the repository root:
#   bash tests/gpu/run_measurement.sh OUT [PARTS] [ONLY]
# PARTS for measure_bench (default old,kb,suite,screen; "old" needs .gpu/old_python, an
# older python/ folder: the one-shot harness before the server). Writes OUT/*.log, *.json.
set -uo pipefail
out=${1:?usage: run_measurement.sh OUT [PARTS] [ONLY]}
parts=${2:-old,kb,suite,screen}
only=${3:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -f .gpu/env.sh ] && source .gpu/env.sh
cupti=""
for p in .gpu/bin/libkagent_cupti.so .gpu/lib/libkagent_cupti.so build/services/profiler/libkagent_cupti.so; do
  [ -f "$p" ] && cupti=$p && break
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' | tee -a "$out/gpu.txt"
old=()
[ -d .gpu/old_python/kagent_harness ] && old=(--old-harness .gpu/old_python)
timeout 360 python3 tests/gpu/measure_bench.py --out "$out" --parts "$parts" ${only:+--only "$only"} "${old[@]}" \
  2>&1 | tee "$out/measure_bench.log"
timeout 220 python3 tests/gpu/run_suite.py --server ${cupti:+--cupti-lib "$cupti"} --json "$out/adversarial.json" \
  2>&1 | tee "$out/adversarial.log"
