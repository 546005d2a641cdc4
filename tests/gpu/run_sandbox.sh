#!/usr/bin/env bash
# The candidate's sandbox on a GPU machine (docs/harness.md, "Sandbox and threat model"):
# the start-time probe, shared GPU memory across the sandbox (vmm_roundtrip.py), the
# red-team suite (redteam.py) and the adversarial and token-kernel suite with the CUPTI
# tracer (run_suite.py --server), each through a harness server as a worker runs it.
# Usage, from the repository root (bwrap on PATH, e.g. .gpu/sbx/bin from gpu-bundle.sh):
#   bash tests/gpu/run_sandbox.sh OUT [REDTEAM_ONLY] [SUITE_ONLY]
# With KAGENT_RUN_UID=N (run as root) the probe and both suites run as that unprivileged
# user (setpriv, no supplementary groups), as the image and the chart run the worker
# (uid 10001): the sandbox then has no root to drop and works through user namespaces.
set -uo pipefail
out=${1:?usage: run_sandbox.sh OUT [REDTEAM_ONLY] [SUITE_ONLY]}
rt_only=${2:-}
suite_only=${3:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
as=()
res=$out  # where the suites write their JSON (the user's own folder when run as another user)
if [ -n "${KAGENT_RUN_UID:-}" ]; then
  home=$(mktemp -d /tmp/kagent-home-XXXXXX)
  chown "$KAGENT_RUN_UID:$KAGENT_RUN_UID" "$home" && chmod 777 "$out"
  export HOME=$home
  # The repository and OUT's parents may be root's alone: the red team's secret file and
  # the suites' JSON go under the user's home, copied to OUT at the end.
  export KAGENT_REDTEAM_DIR=$home/redteam
  res=$home
  as=(setpriv --reuid="$KAGENT_RUN_UID" --regid="$KAGENT_RUN_UID" --clear-groups --)
  echo "running as uid $KAGENT_RUN_UID (HOME=$home)" | tee "$out/user.txt"
fi
[ -f .gpu/env.sh ] && source .gpu/env.sh
[ -d .gpu/sbx/bin ] && export PATH=$PWD/.gpu/sbx/bin:$PATH
cupti=""
for p in .gpu/bin/libkagent_cupti.so .gpu/lib/libkagent_cupti.so build/services/profiler/libkagent_cupti.so; do
  [ -f "$p" ] && cupti=$PWD/$p && break
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
bwrap --version | tee -a "$out/gpu.txt"
PYTHONPATH=python "${as[@]}" python3 -c 'from kagent_harness import bwrap, protocol as P
log = P.Log(); print(bwrap.probe(log, "cuda")); print(log.tail(""))' 2>&1 | tee "$out/probe.txt"
PYTHONPATH=python timeout 90 "${as[@]}" python3 tests/gpu/vmm_roundtrip.py 2>&1 | tee "$out/vmm.log"
KAGENT_CUPTI_LIB=$cupti timeout 290 "${as[@]}" python3 tests/gpu/redteam.py ${rt_only:+--only "$rt_only"} \
  --json "$res/redteam.json" 2>&1 | tee "$out/redteam.log"
timeout 240 "${as[@]}" python3 tests/gpu/run_suite.py --server ${cupti:+--cupti-lib "$cupti"} \
  ${suite_only:+--only "$suite_only"} --json "$res/adversarial.json" 2>&1 | tee "$out/adversarial.log"
[ "$res" = "$out" ] || cp "$res"/redteam.json "$res"/adversarial.json "$out"/ 2>/dev/null
