#!/usr/bin/env bash
# The profile path with the candidate sandbox on, on a GPU machine (docs/harness.md,
# "Sandbox in profile mode" and "The GPU gate"): kagent_profile_once with ncu under a
# private 0700 TMPDIR, as a worker runs its harness, then through kagentd a one-round
# 1 x 2 job on 10_relu_fp32 (run_loop_costs.sh), whose profile holds the GPU slot only
# for its GPU part. The worker's log lines "profiled:" (gpu_seconds, prepare_seconds)
# and "measured:" go to OUT/summary.txt. Builds nothing: binaries from .gpu/bin.
#   bash tests/gpu/profile_sandbox.sh OUT [SECONDS for the job, default 240]
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out=${1:?usage: profile_sandbox.sh OUT [SECONDS]}
seconds=${2:-240}
mkdir -p "$out"
[ -f "$repo/.gpu/env.sh" ] && source "$repo/.gpu/env.sh"
[ -d "$repo/.gpu/sbx/bin" ] && export PATH=$repo/.gpu/sbx/bin:$PATH
bin=${KAGENT_BIN:-$repo/.gpu/bin}
private=$(mktemp -d /tmp/kagent-sub-XXXXXX) && chmod 700 "$private"
t0=$(date +%s.%N)
TMPDIR=$private KAGENT_HARNESS_LOG_STDERR=1 timeout -s KILL 150 "$bin/kagent_profile_once" \
  --backend ncu --pythonpath "$repo/python" --timeout 120 \
  --problem "$repo/problems/10_relu_fp32.py" --kernel "$repo/problems/10_relu_fp32_start.py" \
  --raw-out "$out/ncu.csv" > "$out/profile_once.json" 2> "$out/profile_once.err"
echo "kagent_profile_once rc=$? wall=$(python3 -c "import time; print(round(time.time()-$t0,1))") s" \
  | tee "$out/summary.txt"
rm -rf "$private"
bash "$repo/tests/gpu/run_loop_costs.sh" "$out/loop" "$seconds" 10_relu_fp32 > "$out/loop.txt" 2>&1
zcat "$out/loop/job/kagentd.log.gz" 2>/dev/null | grep -E '"msg":"(profiled|measured|screened)' \
  | cut -c1-1000 >> "$out/summary.txt"
tail -3 "$out/loop/job/bench.txt" >> "$out/summary.txt" 2>/dev/null
exit 0
