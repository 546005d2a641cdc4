#!/usr/bin/env bash
# The convolution sweep of issue 21 in one device call, results in $OUT/conv.tgz:
# conv_cutlass_fprop's variants built on the machine's cores, then every standard
# convolution of problems/ timed against cuDNN (tests/gpu/conv_sweep.py). The
# nvidia-cutlass wheel travels in .whl (carry [".gpu", ".whl"]).
#   [KAGENT_CONV_SWEEP_FLAGS="--only 35_,49_ ..."] bash tests/gpu/conv_sweep.sh [SECONDS]
set -u
budget=${1:-560}
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
: "${OUT:?set OUT}"
mkdir -p "$OUT/conv"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/kagent-ext MAX_JOBS=2
# --brain ID renders through the bundle's kagent-template-render (tests/gpu/README.md),
# which needs the bundle's libraries.
[ -f .gpu/env.sh ] && source .gpu/env.sh
if [ -z "${KAGENT_TEMPLATE_RENDER:-}" ] && [ -x .gpu/bin/kagent-template-render ]; then
  export KAGENT_TEMPLATE_RENDER=$PWD/.gpu/bin/kagent-template-render
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/conv/gpu.txt"
# shellcheck disable=SC2086  # the flags are a word list on purpose
timeout $(( $(left) - 30 )) python3 tests/gpu/conv_sweep.py --out "$OUT/conv/sweep.jsonl" \
  ${KAGENT_CONV_SWEEP_FLAGS:-} > "$OUT/conv/sweep.txt" 2>&1
echo "sweep rc $?"
grep -h '"built"\|"rc": [1-9]\|skipped' "$OUT/conv/sweep.jsonl" | cut -c1-400
python3 - "$OUT/conv/sweep.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    if "eager_ms" in r:
        print(f"\n{r['problem']}: cuDNN {r['eager_ms']:.3f} ms ({r['eager_tflops']:.1f} TFLOP/s)")
    elif "variant" in r:
        if "error" in r:
            print(f"  {r['variant']:56s} error {r['error'][:160]}")
        else:
            print(f"  {r['variant']:56s} {r['ms']:.3f} ms {r['tflops']:6.1f} TFLOP/s "
                  f"{r['vs_eager']:.2f}x cuDNN, gate {r['gate']:.3f}")
    elif "error" in r:
        print(r)
PY
tar -C "$OUT" -czf "$OUT/conv.tgz" conv && rm -rf "$OUT/conv"
