#!/usr/bin/env bash
# The candidate's sandbox on a GPU machine (docs/harness.md, "Sandbox and threat model"):
# the start-time probe, shared GPU memory across the sandbox (vmm_roundtrip.py), the
# red-team suite (redteam.py) and the adversarial and token-kernel suite with the CUPTI
# tracer (run_suite.py --server), each through a harness server as a worker runs it.
# Usage, from the repository root (bwrap on PATH, e.g. .gpu/sbx/bin from gpu-bundle.sh):
#   bash tests/gpu/run_sandbox.sh OUT [REDTEAM_ONLY] [SUITE_ONLY]
set -uo pipefail
out=${1:?usage: run_sandbox.sh OUT [REDTEAM_ONLY] [SUITE_ONLY]}
rt_only=${2:-}
suite_only=${3:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -f .gpu/env.sh ] && source .gpu/env.sh
[ -d .gpu/sbx/bin ] && export PATH=$PWD/.gpu/sbx/bin:$PATH
cupti=""
for p in .gpu/bin/libkagent_cupti.so .gpu/lib/libkagent_cupti.so build/services/profiler/libkagent_cupti.so; do
  [ -f "$p" ] && cupti=$PWD/$p && break
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
bwrap --version | tee -a "$out/gpu.txt"
PYTHONPATH=python python3 -c 'from kagent_harness import bwrap, protocol as P
log = P.Log(); print(bwrap.probe(log, "cuda")); print(log.tail(""))' 2>&1 | tee "$out/probe.txt"
PYTHONPATH=python timeout 90 python3 tests/gpu/vmm_roundtrip.py 2>&1 | tee "$out/vmm.log"
KAGENT_CUPTI_LIB=$cupti timeout 290 python3 tests/gpu/redteam.py ${rt_only:+--only "$rt_only"} \
  --json "$out/redteam.json" 2>&1 | tee "$out/redteam.log"
timeout 240 python3 tests/gpu/run_suite.py --server ${cupti:+--cupti-lib "$cupti"} \
  ${suite_only:+--only "$suite_only"} --json "$out/adversarial.json" 2>&1 | tee "$out/adversarial.log"
