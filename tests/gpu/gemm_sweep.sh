#!/usr/bin/env bash
# The GEMM sweep of issue 20 in one device call, results in $OUT/gemm.tgz: the CUDA
# templates' variants built on the machine's cores while the CUPTI SOL-proxy check runs on
# the GPU (issue 25), then every shape timed. The nvidia-cutlass wheel travels in .whl
# (carry [".gpu", ".whl"]).
#   [KAGENT_GEMM_SWEEP_FLAGS="--dtype bfloat16 ..."] bash tests/gpu/gemm_sweep.sh [SECONDS]
set -u
budget=${1:-560}
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
: "${OUT:?set OUT}"
mkdir -p "$OUT/gemm"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/kagent-ext MAX_JOBS=2
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/gemm/gpu.txt"
# shellcheck disable=SC2086  # the flags are a word list on purpose
timeout $(( $(left) - 60 )) python3 tests/gpu/gemm_sweep.py --build-only \
  ${KAGENT_GEMM_SWEEP_FLAGS:-} --out "$OUT/gemm/build.jsonl" > "$OUT/gemm/build.txt" 2>&1 &
build=$!
if [ -f .gpu/env.sh ]; then
  ( source .gpu/env.sh; timeout 150 python3 tests/gpu/sol_proxy_check.py \
      --lib .gpu/bin/libkagent_cupti.so --out "$OUT/gemm/sol.json" > "$OUT/gemm/sol.txt" 2>&1
    echo "sol_proxy_check rc $?" >> "$OUT/gemm/sol.txt" )
  cat "$OUT/gemm/sol.txt"
fi
wait $build; echo "build rc $?"
grep -h '"built"\|"rc": [1-9]' "$OUT/gemm/build.jsonl" | cut -c1-600
timeout $(( $(left) - 10 )) python3 tests/gpu/gemm_sweep.py --out "$OUT/gemm/sweep.jsonl" \
  --build-jobs 4 ${KAGENT_GEMM_SWEEP_FLAGS:-} > "$OUT/gemm/sweep.txt" 2>&1
echo "sweep rc $?"
python3 - "$OUT/gemm/sweep.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    if "torch_ms" in r:
        print(f"\n{r['shape']}: torch {r['torch_ms']:.3f} ms ({r['torch_tflops']:.1f} TFLOP/s), "
              f"torch vs fp64 {r.get('torch_gate64', r['torch_excess64']):.3f} of the gate's tolerance")
    elif "variant" in r:
        if "error" in r:
            print(f"  {r['variant']:44s} ERROR {r['error'][:120]}")
        else:
            print(f"  {r['variant']:44s} {r['ms']:8.3f} ms {r['tflops']:6.1f} TF/s "
                  f"x{r['vs_torch']:.2f}  gate {r.get('gate', -1):.3f} gate64 {r.get('gate64', -1):.3f}")
PY
# The device brings back at most 8 files: the folder goes back as one archive.
tar czf "$OUT/gemm.tgz" -C "$OUT" gemm && rm -rf "$OUT/gemm"
