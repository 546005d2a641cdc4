#!/usr/bin/env bash
# What the loop costs through kagentd on one GPU (docs/measurement.md): a one-round,
# beam 1 x 2 job on an elementwise problem (its GPU-seconds end to end: baseline,
# profile, candidates, final), then `kagent bench` over problems/ (one round, the
# default beam) for what is left of SECONDS, resumable with tests/gpu/bench_suite.sh on
# the state it leaves. Builds nothing: the binaries come from .gpu/bin (a bundle).
#   bash tests/gpu/run_loop_costs.sh OUT SECONDS [PROBLEM] [SUITE_ONLY]
# SUITE_ONLY: kagent bench --only patterns (comma-separated) for the suite part.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out=${1:?usage: run_loop_costs.sh OUT SECONDS [PROBLEM]}
seconds=${2:?usage: run_loop_costs.sh OUT SECONDS [PROBLEM]}
problem=${3:-10_relu_fp32}
suite_only=${4:-}
mkdir -p "$out"
[ -f "$repo/.gpu/env.sh" ] && source "$repo/.gpu/env.sh"
t0=$(date +%s)
KAGENT_BENCH_RUN_ID=job-1x2 KAGENT_BENCH_PORT=50091 bash "$repo/tests/gpu/bench_suite.sh" \
  "$out/job_state" "$out/job" 240 --only "$problem" --rounds 1 --beam-width 1 \
  --fixes-per-kernel 2
left=$(( seconds - ($(date +%s) - t0) ))
echo "job done after $(( $(date +%s) - t0 )) s; the suite gets $left s"
[ "$left" -gt 120 ] && KAGENT_BENCH_RUN_ID=suite-r1 bash "$repo/tests/gpu/bench_suite.sh" \
  "$out/suite_state" "$out/suite" "$left" --rounds 1 ${suite_only:+--only "$suite_only"}
(cd "$out" && tar czf suite_state.tgz suite_state 2>/dev/null)
exit 0
