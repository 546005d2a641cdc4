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
#   tests/gpu/open_checks.sh detach SECONDS   # the whole suite as one bench run that
#                                             # outlives this call; waits SECONDS for it
#   tests/gpu/open_checks.sh wait SECONDS     # waits for the detached suite; once it is
#                                             # done, the tanh candidate (measure_bench.py)
#   tests/gpu/open_checks.sh preflight SECONDS  # the short checks of what changed since the
#                                             # last GPU run (phantom_check.py, the starting
#                                             # kernels against float64 with the wide trials,
#                                             # the adversarial cases the timing checks
#                                             # touch; KAGENT_PREFLIGHT_ADVERSARIAL=0 leaves
#                                             # them out, =all runs every case but the CUDA
#                                             # C++ build), into $OUT/preflight/; then detach
#   KAGENT_WAIT_CHECKS=1 ... wait SECONDS       # the same short checks after the detached
#                                             # run has ended (the suite first)
#   tests/gpu/open_checks.sh ab SECONDS       # the supervisor's A/B on this machine: the
#                                             # problems of KAGENT_AB_ONLY twice, each on
#                                             # a fresh state and fresh compile caches for
#                                             # half the time, KAGENT_COMPILE_AHEAD=0 then
#                                             # =auto (KAGENT_AB_ORDER="auto 0" turns the
#                                             # order round), then compare_runs.py of the
#                                             # two logs into $OUT/ab/compare.txt
#
# detach/wait: a command's processes end with it, but one in a session of its own
# (setsid) runs on while the machine stays warm, so the suite need not be cut at the
# call's limit and resumed. `detach` copies the checkout (bundle included) to
# build-open/detached/repo (not under /tmp: the sandbox hides /tmp), so that the next
# call's copy of the working tree cannot change files under the running kagentd, and
# starts `suite DETACHED_SECONDS` there (default 1500; KAGENT_OPEN_DETACHED_SECONDS)
# with its files in build-open/detached/out. Each detach/wait call prints the bench's
# progress each minute and ends by copying what the run has written so far into $OUT;
# the call after the run has ended also gets its account (slot.txt). A second `detach`
# while one runs only waits for it.
#
# $OUT receives gpu.txt, suite/ (bench_suite.sh's files and slot.txt, slot_timeline.py's
# account), package/ (package_check.sh's), llmjob.txt and llmjob.tgz, tanh/ (wait), and
# all.tgz (all of it: the device brings back only a few files). KAGENT_OPEN_RUN_ID names
# the bench's run (default open-checks); KAGENT_OPEN_BENCH_FLAGS adds `kagent bench` flags
# (e.g. "--only 51_,52_" for part of the suite).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
usage="usage: $0 all|suite|extras|detach|wait|preflight|ab SECONDS"
mode="${1:?$usage}"; budget="${2:?$usage}"
case "$mode" in all|suite|extras|detach|wait|preflight|ab) ;; *) echo "$usage" >&2; exit 2 ;; esac
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
# The host's speed, appended to FILE as one line labelled LABEL: torch's import time and
# how many turns of a Python loop one second gives, with the load (session 27's machine
# ran host-side work 1.7-1.9x slower than session 25's: the runs' figures need it).
host_probe() {
  python3 - "$1" <<'PY' | tee -a "$2"
import sys, time
t = time.perf_counter()
import torch  # noqa: F401
imp = time.perf_counter() - t
t, n = time.perf_counter(), 0
while time.perf_counter() - t < 1.0:
    n += 1
print(f"{sys.argv[1]}: torch import {imp:.2f} s, {n / 1e6:.2f} M loop turns in 1 s, "
      f"load {open('/proc/loadavg').read().split()[0]}")
PY
}
suite() {
  echo "suite, $(left) s"
  mkdir -p "$OUT/suite"; host_probe "suite start" "$OUT/suite/host.txt"
  KAGENT_BENCH_RUN_ID="${KAGENT_OPEN_RUN_ID:-open-checks}" bash tests/gpu/bench_suite.sh \
    "$state" "$OUT/suite" $(( $(left) - 15 )) --rounds 1 --concurrency 32 ${KAGENT_OPEN_BENCH_FLAGS:-}
  echo "bench_suite rc $?"; tail -3 "$OUT/suite/bench.txt"
  python3 tests/gpu/slot_timeline.py "$OUT/suite/kagentd.log.gz" > "$OUT/suite/slot.txt" 2>&1
  head -60 "$OUT/suite/slot.txt"
}
if [ "$mode" = suite ]; then suite; fi
# The A/B of the supervisor with and without torch.compile compiled ahead (session 27's
# suite was 1-10x slower on the host for a cause not found): the same problems twice on
# this machine, each run on a state and compile caches of its own.
ab() {
  local order=(${KAGENT_AB_ORDER:-0 auto}) cfg half logs=()
  half=$(( ($(left) - 30) / ${#order[@]} ))
  for cfg in "${order[@]}"; do
    local st="build-open/ab-$cfg" out="$OUT/ab/$cfg"
    rm -rf "$st"; mkdir -p "$st" "$out"
    echo "ab: KAGENT_COMPILE_AHEAD=$cfg for $half s"
    host_probe "$cfg" "$OUT/ab/host.txt"
    KAGENT_COMPILE_AHEAD=$cfg TORCHINDUCTOR_CACHE_DIR="$PWD/$st/inductor" \
      TRITON_CACHE_DIR="$PWD/$st/triton" KAGENT_BENCH_RUN_ID="ab-$cfg" \
      bash tests/gpu/bench_suite.sh "$st" "$out" "$half" --rounds 1 --concurrency 32 \
      --only "${KAGENT_AB_ONLY:-01_,02_,08_,10_,13_,16_,20_,21_,22_,23_,24_,25_,28_,30_,35_,40_}"
    echo "bench_suite rc $?"; tail -2 "$out/bench.txt"
    python3 tests/gpu/slot_timeline.py "$out/kagentd.log.gz" > "$out/slot.txt" 2>&1
    logs+=("$out/kagentd.log.gz")
  done
  python3 tests/gpu/compare_runs.py "${logs[0]}" "${logs[1]}" --phases 10 \
    --per-problem "baselines: eager timing" > "$OUT/ab/compare.txt" 2>&1
  cat "$OUT/ab/compare.txt"
}
if [ "$mode" = ab ]; then ab; fi
# The short checks of what changed since the last GPU run, into $OUT/preflight/; each
# bounded by its cap and by the call's time left. KAGENT_SHORT_CHECKS names them, in
# order (default "phantom accuracy adversarial").
short_checks() {
  pf="$OUT/preflight"; mkdir -p "$pf"
  cap() { local c=$1 l=$(( $(left) - 20 )); [ "$l" -lt "$c" ] && c=$l; echo $(( c > 1 ? c : 1 )); }
  local check
  for check in ${KAGENT_SHORT_CHECKS:-phantom accuracy adversarial}; do
    case "$check" in
      phantom)
        echo "phantom_check, $(left) s"
        timeout "$(cap 90)" python3 tests/gpu/phantom_check.py --out "$pf/phantom.json" \
          > "$pf/phantom.txt" 2>&1
        echo "phantom_check rc $?"; cut -c1-300 "$pf/phantom.txt" ;;
      accuracy)
        echo "reference_accuracy, $(left) s"
        timeout "$(cap 150)" python3 tests/gpu/reference_accuracy.py --only 60_,62_,63_ --wide \
          --out "$pf/ra.json" > "$pf/ra.txt" 2>&1
        echo "reference_accuracy rc $?"; tail -16 "$pf/ra.txt" ;;
      adversarial)
        local adv="${KAGENT_PREFLIGHT_ADVERSARIAL:-1}"
        if [ "$adv" != 0 ] && [ "$(left)" -gt 60 ]; then
          # 1: the cases the timing checks touch; all: every case but the CUDA C++ build
          # (74 s, its build not prepared in this script).
          local sel=(--only 'case_study_row,case_study_tile32,oom_200gb,patched_clock,sleeps_when_timed,row_after_adversaries')
          [ "$adv" = all ] && sel=(--skip cuda_load_inline)
          echo "adversarial cases ($adv), $(left) s"
          timeout "$(cap 240)" python3 tests/gpu/run_suite.py --server \
            --cupti-lib .gpu/bin/libkagent_cupti.so "${sel[@]}" --json "$pf/adv.json" \
            > "$pf/adv.txt" 2>&1
          echo "run_suite rc $?"; tail -30 "$pf/adv.txt" | cut -c1-200
        fi ;;
      *) echo "unknown short check $check (phantom, accuracy, adversarial)" ;;
    esac
  done
}
if [ "$mode" = preflight ]; then
  # Each check bounded, so the suite detaches in time whatever they do.
  short_checks
  mode=detach
fi
run="$repo/build-open/detached"
# Copies the detached run's files so far into $OUT, with a running kagentd's log so far
# (a finished run's is in suite/ already).
snapshot() {
  mkdir -p "$OUT/suite"
  cp -r "$run/out/." "$OUT/" 2>/dev/null
  cp "$run/run.log" "$OUT/detached.log" 2>/dev/null
  [ -f "$run/done" ] || gzip -c "$run/repo/$state/kagentd.log" > "$OUT/suite/kagentd.log.gz" 2>/dev/null
}
# Waits for the detached run until it is done or the call's time is nearly spent,
# printing its progress and taking a snapshot each minute (a call cut short, when the
# device time runs out, still brings back the last one), and a last one at the end.
wait_detached() {
  local last=0
  while [ ! -f "$run/done" ] && [ "$(left)" -gt 25 ]; do
    if [ $(( $(date +%s) - last )) -ge 60 ]; then
      last=$(date +%s)
      echo "$(( last - $(cat "$run/started") )) s since the start:" \
        "$(grep -c . "$run/out/suite/bench.txt" 2>/dev/null || echo 0) bench lines;" \
        "$(tail -1 "$run/out/suite/bench.txt" 2>/dev/null)"
      snapshot
    fi
    sleep 5
  done
  [ -f "$run/done" ] && { echo "detached run done: $(cat "$run/done")"; tail -8 "$run/run.log"; }
  snapshot
}
if [ "$mode" = detach ] && [ ! -f "$run/started" ]; then
  rm -rf "$run"; mkdir -p "$run/repo" "$run/out"
  tar c --exclude=./build-open --exclude='./build*' --exclude=./.git --exclude=./.venv . |
    tar x -C "$run/repo"
  date +%s > "$run/started"
  (cd "$run/repo" && OUT="$run/out" setsid nohup bash -c \
    "bash tests/gpu/open_checks.sh suite ${KAGENT_OPEN_DETACHED_SECONDS:-1500}; echo \"rc \$? at \$(date +%s)\" > $run/done" \
    > "$run/run.log" 2>&1 < /dev/null &)
  echo "detached suite started in $run"
fi
if [ "$mode" = detach ] || [ "$mode" = wait ]; then
  [ -f "$run/started" ] || { echo "no detached run in $run (start one with detach)"; exit 1; }
  wait_detached
  if [ "$mode" = wait ] && [ -f "$run/done" ] && [ "${KAGENT_WAIT_CHECKS:-0}" = 1 ] &&
      [ "$(left)" -gt 120 ]; then
    short_checks  # the suite first, the short checks after it (KAGENT_WAIT_CHECKS=1)
  fi
  if [ "$mode" = wait ] && [ -f "$run/done" ] && [ "$(left)" -gt 150 ]; then
    echo "tanh candidate (measure_bench.py --parts kb --only tanh), $(left) s"
    mkdir -p "$OUT/tanh"
    timeout $(( $(left) - 30 )) python3 tests/gpu/measure_bench.py --out "$OUT/tanh" \
      --parts kb --only tanh > "$OUT/tanh/measure_bench.txt" 2>&1
    echo "measure_bench rc $?"; tail -30 "$OUT/tanh/measure_bench.txt"
  fi
fi
if [ "$mode" = all ]; then
  whole=$budget; budget=$(( whole - 310 )); suite; budget=$whole
fi
if [ "$mode" = all ] || [ "$mode" = extras ]; then
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
