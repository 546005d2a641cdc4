#!/usr/bin/env bash
# The GPU runs the open issues wait for, in one device call or a few back-to-back ones on
# a one-GPU machine: the problems/ suite through kagentd (resumable across calls while the
# machine stays warm: its state is under build-open/), one job with every LLM agent on
# the scripted loopback model, its cassette recording the prompts with the profile's
# metrics (llm_job.sh), and the packages of the suite's DONE jobs (or, before any suite
# call, of the LLM job) tested on the GPU (package_check.sh). Builds nothing: run from the repository root with a bundle in .gpu/
# (tests/gpu/README.md), with $OUT set (the device tool sets it).
#
#   tests/gpu/open_checks.sh all SECONDS      # the suite for SECONDS-310, then the other two
#   tests/gpu/open_checks.sh suite SECONDS    # the suite (first call, or resumed) only
#   tests/gpu/open_checks.sh extras SECONDS   # LLM job and packages, then the suite resumed
#
# $OUT receives gpu.txt, suite/ (bench_suite.sh's files and slot.txt, slot_timeline.py's
# account), package/ (package_check.sh's), llmjob.txt and llmjob.tgz, and all.tgz (all of
# it: the device brings back only a few files). KAGENT_OPEN_RUN_ID names the bench's run
# (default open-checks).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
usage="usage: $0 all|suite|extras SECONDS"
mode="${1:?$usage}"; budget="${2:?$usage}"
case "$mode" in all|suite|extras) ;; *) echo "$usage" >&2; exit 2 ;; esac
: "${OUT:?set OUT to the folder whose files come back}"
[ -f .gpu/env.sh ] && source .gpu/env.sh
[ -d .gpu/sbx/bin ] && export PATH=$PWD/.gpu/sbx/bin:$PATH
export PYTHONUNBUFFERED=1
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
state=build-open/state
mkdir -p "$state"
suite() {
  echo "suite, $(left) s"
  KAGENT_BENCH_RUN_ID="${KAGENT_OPEN_RUN_ID:-open-checks}" bash tests/gpu/bench_suite.sh \
    "$state" "$OUT/suite" $(( $(left) - 15 )) --rounds 1 --concurrency 32
  echo "bench_suite rc $?"; tail -3 "$OUT/suite/bench.txt"
  python3 tests/gpu/slot_timeline.py "$OUT/suite/kagentd.log.gz" > "$OUT/suite/slot.txt" 2>&1
  head -60 "$OUT/suite/slot.txt"
}
if [ "$mode" = suite ]; then suite; fi
if [ "$mode" = all ]; then
  whole=$budget; budget=$(( whole - 310 )); suite; budget=$whole
fi
if [ "$mode" != suite ]; then
  echo "LLM job, $(left) s"
  KAGENT_LLM_JOB_TIMEOUT=$(( $(left) - 150 )) timeout $(( $(left) - 130 )) \
    bash tests/gpu/llm_job.sh /tmp/llmjob problems/01_matmul_square_fp32.py --rounds 2 \
    > "$OUT/llmjob.txt" 2>&1
  echo "llm_job rc $?"; tail -20 "$OUT/llmjob.txt"; tar czf "$OUT/llmjob.tgz" -C /tmp llmjob
  # The suite's DONE jobs, else (no suite run yet) the LLM job's.
  jobs_db="$state"; [ -f "$state/kagent.db" ] || jobs_db=/tmp/llmjob/db
  echo "package check on $jobs_db, $(left) s"
  timeout 110 bash tests/gpu/package_check.sh "$jobs_db" "$OUT/package" 2
  echo "package_check rc $?"
  if [ "$mode" = extras ] && [ "$(left)" -gt 90 ]; then suite; fi
fi
tmp_tgz="$(mktemp)"
(cd "$OUT" && tar czf "$tmp_tgz" --exclude=all.tgz .) && mv "$tmp_tgz" "$OUT/all.tgz"
ls -la "$OUT"
