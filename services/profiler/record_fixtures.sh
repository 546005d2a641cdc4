#!/usr/bin/env bash
# Records raw Nsight Compute CSVs (the profiler's exact command line) on a GPU machine,
# for the parser's test fixtures (tests/fixtures/ncu/).
#
#   services/profiler/record_fixtures.sh OUT_DIR [--standalone] [--pairs DIR]
#                                        [--python PY] [--cases "a b c"]
#
# Harness mode (default): every pair in --pairs DIR is profiled through the harness:
# DIR/<name>.problem.py + DIR/<name>.candidate.py, or, when DIR has none, the harness's
# own fixtures (python/tests/fixtures/problem_<p>.py + cand_<p>_good.py). Each pair is
# written into a harness request (the harness's JSON: problem_source, kernel_source, ...)
# and profiled with
#   ncu ... <python> -m kagent_harness profile --request <file> --out <result>
# PYTHONPATH gets <repo>/python so the harness package is found.
# --standalone: profiles services/profiler/fixture_workload.py cases instead (no harness
# needed); --cases picks which (default: all of them).
#
# For each case it writes OUT_DIR/<case>.csv (ncu's CSV log, --print-units base),
# OUT_DIR/<case>.auto_units.csv (the same with ncu's automatic unit scaling) and
# OUT_DIR/<case>.log (the program's own output). The metric list comes from
# kernel_model/ncu_metrics.tsv for this GPU's compute capability; metric names this
# ncu does not know are dropped (listed in OUT_DIR/dropped_metrics.txt) and the run retried.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out=""
mode=harness
pairs="$repo/python/tests/fixtures"
python=python3
cases="triton_add triton_matvec torch_mm_bf16 multi empty"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --standalone) mode=standalone; shift ;;
    --pairs) pairs="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) out="$1"; shift ;;
  esac
done
[[ -n "$out" ]] || { echo "usage: $0 OUT_DIR [--standalone] [--pairs DIR]" >&2; exit 2; }
mkdir -p "$out"
command -v ncu >/dev/null || { echo "ncu not found on PATH" >&2; exit 1; }

cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i "${CUDA_VISIBLE_DEVICES:-0}" \
      2>/dev/null | head -1 | tr -d ' .')"
cc="${cc:-90}"
metrics="$(awk -F'\t' -v cc="$cc" '
  /^#/ || NF < 5 { next }
  {
    arch = $3; ok = 0
    if (arch == "all") ok = 1
    else if (arch ~ /-$/) { lo = substr(arch, 1, length(arch) - 1); ok = (cc + 0 >= lo + 0) }
    else if (arch ~ /-/) { split(arch, r, "-"); ok = (cc + 0 >= r[1] + 0 && cc + 0 <= r[2] + 0) }
    else ok = (cc + 0 == arch + 0)
    if (ok) printf "%s%s", (n++ ? "," : ""), $1
  }' "$repo/kernel_model/ncu_metrics.tsv")"
echo "compute capability $cc; $(tr ',' '\n' <<<"$metrics" | wc -l) metrics"
ncu --version | tail -1 > "$out/ncu_version.txt"
: > "$out/dropped_metrics.txt"

# run_ncu CASE UNITS ARGS... : one ncu run, dropping unknown metrics and retrying once.
run_ncu() {
  local name="$1" units="$2"; shift 2
  local csv="$out/$name.csv"
  [[ "$units" == auto ]] && csv="$out/$name.auto_units.csv"
  local unit_flags=(--print-units base)
  [[ "$units" == auto ]] && unit_flags=()
  for attempt in 1 2; do
    ncu --csv --page raw "${unit_flags[@]}" --clock-control none --nvtx \
        --nvtx-include "kagent_candidate/" --metrics "$metrics" --target-processes all \
        --log-file "$csv" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    local unknown
    unknown="$(grep -ho 'Failed to find metric [^ ]*' "$csv" "$out/$name.log" 2>/dev/null \
               | awk '{print $NF}' | tr -d '"' | sort -u)"
    if [[ -n "$unknown" && $attempt == 1 ]]; then
      echo "$unknown" | tee -a "$out/dropped_metrics.txt" >&2
      for m in $unknown; do
        metrics="$(tr ',' '\n' <<<"$metrics" | grep -vxF "$m" | paste -sd, -)"
      done
      continue
    fi
    echo "$name ($units units): ncu exit $rc, $(grep -c '^"' "$csv" 2>/dev/null) csv lines"
    return 0
  done
}

if [[ "$mode" == standalone ]]; then
  for c in $cases; do
    run_ncu "$c" base "$python" "$here/fixture_workload.py" "$c"
    run_ncu "$c" auto "$python" "$here/fixture_workload.py" "$c"
  done
else
  export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
  shopt -s nullglob
  list=()
  for problem in "$pairs"/*.problem.py; do
    name="$(basename "$problem" .problem.py)"
    [[ -f "$pairs/$name.candidate.py" ]] && list+=("$name:$problem:$pairs/$name.candidate.py")
  done
  for problem in "$pairs"/problem_*.py; do
    p="$(basename "$problem" .py)"; p="${p#problem_}"
    [[ -f "$pairs/cand_${p}_good.py" ]] && list+=("$p:$problem:$pairs/cand_${p}_good.py")
  done
  for entry in "${list[@]}"; do
    IFS=: read -r name problem candidate <<<"$entry"
    request="$out/$name.request.json"
    "$python" - "$problem" "$candidate" > "$request" <<'PY'
import json, sys
problem, candidate = sys.argv[1:3]
print(json.dumps({
    "mode": "profile",
    "problem_source": open(problem).read(),
    "kernel_source": open(candidate).read(),
    "language": "triton",
    "profile_iters": 1,
    "profile_warmup_iters": 3,
    "network_isolation": False,  # ncu reaches its target over loopback TCP
}))
PY
    run_ncu "$name" base "$python" -m kagent_harness profile --request "$request" \
      --out "$out/$name.result.json"
  done
fi
sort -u -o "$out/dropped_metrics.txt" "$out/dropped_metrics.txt"
