#!/usr/bin/env bash
# A CUDA C++ template's renders measured through the harness (one-shot `measure`, the
# sandbox on: built with load_inline inside the candidate's sandbox, gated, timed beside
# eager and torch.compile), a problem each, in parallel; the results as JSON under
# $OUT/verdicts.tgz. The nvidia-cutlass wheel travels in .whl, bwrap in .gpu/sbx
# (carry [".whl", ".gpu"]).
#   [KAGENT_VERDICT_TIMEOUT=540] bash tests/gpu/cuda_template_verdicts.sh \
#     'PROBLEM TEMPLATE JSON_PARAMS' ...
set -u
: "${OUT:?set OUT}"
mkdir -p "$OUT/verdicts"
site="$PWD/.pysite"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl && export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
[ -d .gpu/sbx/bin ] && export PATH=$PWD/.gpu/sbx/bin:$PATH
[ -f .gpu/sbx/env.sh ] && source .gpu/sbx/env.sh
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
pids=()
for spec in "$@"; do
  read -r problem template params <<<"$spec"
  name="${problem}_${template}"
  python3 - "$problem" "$template" "$params" > "$OUT/verdicts/$name.request.json" <<'PY'
import json, os, sys
sys.path.insert(0, "engines/heuristic/tests")
from template_render import render
problem, template, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(json.dumps({"problem_source": open(f"problems/{problem}.py").read(),
                  "kernel_source": render(template, **params), "language": "cuda",
                  "device": "cuda",
                  "timeout_s": float(os.environ.get("KAGENT_VERDICT_TIMEOUT", "540")) - 20}))
PY
  ( start=$(date +%s)
    timeout "${KAGENT_VERDICT_TIMEOUT:-540}" python3 -m kagent_harness measure --request "$OUT/verdicts/$name.request.json" \
      --out "$OUT/verdicts/$name.json" > "$OUT/verdicts/$name.log" 2>&1
    echo "$name: rc $? in $(( $(date +%s) - start )) s" ) &
  pids+=($!)
done
wait "${pids[@]}"
for f in "$OUT"/verdicts/*.json; do
  case "$f" in *.request.json) continue ;; esac
  python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
med = lambda k: (r.get(k) or {}).get("median_ms")
print(sys.argv[1].rsplit("/", 1)[-1], r.get("verdict"), (r.get("correctness") or {}).get("reason", "")[:300])
print("  kernel ms", med("candidate"), "eager", med("eager"), "compiled", med("compiled"))
print("  phases", {k: round(v) for k, v in ((r.get("harness") or {}).get("phases_ms") or {}).items()
                   if v > 1000})
PY
done
# The device brings back at most 8 files: the folder goes back as one archive.
tar czf "$OUT/verdicts.tgz" -C "$OUT" verdicts && rm -rf "$OUT/verdicts"
