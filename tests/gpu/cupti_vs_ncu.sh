#!/usr/bin/env bash
# The CUPTI backend's counters (range profiler, user replay) beside ncu's, on a GPU
# machine: for a few problems with a *_start.py kernel (an elementwise op, a reduction,
# softmax, a GEMM), kagent_profile_once --backend ncu and --backend cupti, each timed
# with `timeout`; writes both JSONs and raw outputs per problem and OUT/cupti_vs_ncu.txt:
# wall time of each run and, per metric of the aggregate, the ncu value, the cupti value
# and their ratio (cupti/ncu). Stops starting runs after ~200 s so the whole check stays
# near 4 minutes on an H200. Builds nothing: binaries from .gpu/bin.
#   bash tests/gpu/cupti_vs_ncu.sh OUT [PROBLEM ...]
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out=${1:?usage: cupti_vs_ncu.sh OUT [PROBLEM ...]}
shift
problems=("$@")
[ ${#problems[@]} -eq 0 ] && problems=(10_relu_fp32 20_sum_dim_fp32 25_softmax_fp32 01_matmul_square_fp32)
mkdir -p "$out"
[ -f "$repo/.gpu/env.sh" ] && source "$repo/.gpu/env.sh"
[ -d "$repo/.gpu/sbx/bin" ] && export PATH=$repo/.gpu/sbx/bin:$PATH
bin=${KAGENT_BIN:-$repo/.gpu/bin}
budget_s=${KAGENT_CHECK_BUDGET_S:-200}
start=$(date +%s)
: > "$out/runs.tsv"

run_one() {  # problem backend timeout_s
  local p=$1 backend=$2 limit=$3 extra=()
  [ "$backend" = cupti ] && extra=(--cupti-lib "$bin/libkagent_cupti.so")
  local private t0 rc
  private=$(mktemp -d /tmp/kagent-sub-XXXXXX) && chmod 700 "$private"
  t0=$(date +%s.%N)
  TMPDIR=$private timeout -s KILL "$limit" "$bin/kagent_profile_once" --backend "$backend" \
    "${extra[@]}" --pythonpath "$repo/python" --timeout $((limit - 10)) \
    --problem "$repo/problems/$p.py" --kernel "$repo/problems/${p}_start.py" \
    --raw-out "$out/$p.$backend.raw" > "$out/$p.$backend.json" 2> "$out/$p.$backend.err"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$p" "$backend" "$rc" \
    "$(python3 -c "import time; print(round(time.time()-$t0,2))")" >> "$out/runs.tsv"
  rm -rf "$private"
}

for p in "${problems[@]}"; do
  if [ ! -f "$repo/problems/${p}_start.py" ]; then
    echo "no problems/${p}_start.py: skipped" >> "$out/skipped.txt"; continue
  fi
  for backend in ncu cupti; do
    if [ $(( $(date +%s) - start )) -ge "$budget_s" ]; then
      echo "$p $backend: not run (past the ${budget_s} s budget)" >> "$out/skipped.txt"; continue
    fi
    run_one "$p" "$backend" $([ "$backend" = ncu ] && echo 75 || echo 45)
  done
done

python3 - "$out" <<'EOF' > "$out/cupti_vs_ncu.txt"
import json, os, sys
out = sys.argv[1]
runs = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "runs.tsv")) if l.strip()]
print("run\tbackend\trc\twall_s")
for r in runs:
    print("\t".join(r))
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
def get(d, *names):
    for n in names:
        if isinstance(d, dict) and n in d:
            return d[n]
    return None
for p in sorted({r[0] for r in runs}):
    ncu, cupti = (load(os.path.join(out, f"{p}.{b}.json")) for b in ("ncu", "cupti"))
    print(f"\n== {p}")
    head = ""
    try:
        with open(os.path.join(out, f"{p}.cupti.raw")) as f:
            head = f.readline().strip()
    except OSError:
        pass
    print(f"cupti: {head[:300] or '(no raw output)'}")
    if ncu is None or cupti is None:
        print("(a run failed: see the .err files)")
        continue
    m_n, m_c = get(ncu, "metrics"), get(cupti, "metrics")
    for field in (("compute_sol_pct", "computeSolPct"), ("memory_sol_pct", "memorySolPct")):
        print(f"{field[0]}\tncu={get(m_n, *field)}\tcupti={get(m_c, *field)}")
    k_n, k_c = get(m_n, "kernels") or [], get(m_c, "kernels") or []
    print(f"kernels\tncu={len(k_n)}\tcupti={len(k_c)}")
    a_n = get(get(m_n, "aggregate"), "values") or {}
    a_c = get(get(m_c, "aggregate"), "values") or {}
    print("metric\tncu\tcupti\tcupti/ncu")
    for name in sorted(set(a_n) | set(a_c)):
        vn, vc = a_n.get(name), a_c.get(name)
        ratio = f"{vc / vn:.3f}" if isinstance(vn, (int, float)) and isinstance(vc, (int, float)) and vn else "-"
        fmt = lambda v: "-" if v is None else f"{v:.6g}"
        print(f"{name}\t{fmt(vn)}\t{fmt(vc)}\t{ratio}")
EOF
cat "$out/skipped.txt" >> "$out/cupti_vs_ncu.txt" 2>/dev/null
echo "total $(( $(date +%s) - start )) s" >> "$out/cupti_vs_ncu.txt"
exit 0
