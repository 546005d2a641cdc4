#!/usr/bin/env bash
# Everything the GPU issues need measured, in two parts that each fit a 10-minute window on
# a machine with two GPUs. Builds nothing: run from the repository root with a bundle in
# .gpu/ (../shared/tools/gpu-bundle.sh .gpu build/tools/kagentd build/tools/kagent
# build/services/benchmark/kagent-benchmark build/services/profiler/kagent_profile_once
# build/services/profiler/libkagent_cupti.so) or the build tree.
#
#   tests/gpu/run_all.sh OUT_DIR one   # GPU 0: the end-to-end job through kagentd;
#                                      # GPU 1: the harness suite (case study, 5 repeats,
#                                      # adversaries), profiler latency (ncu and CUPTI),
#                                      # the judge's ncu fixtures
#   tests/gpu/run_all.sh OUT_DIR two   # tests/gpu/multi_gpu.py: stability across GPUs,
#                                      # scaling 1 -> 2 workers with pinning checks, a
#                                      # worker killed mid-run
#
# OUT_DIR receives a few files (logs, JSON, and .tgz archives of the trees).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: $0 OUT_DIR one|two}"
part="${2:?usage: $0 OUT_DIR one|two}"
cd "$repo"
mkdir -p "$out"
work="$(mktemp -d)"
export PYTHONUNBUFFERED=1
[ -f .gpu/env.sh ] && source .gpu/env.sh
bin="${KAGENT_BIN:-$repo/.gpu/bin}"
[ -x "$bin/kagentd" ] || bin="$repo/build/tools"
export KAGENT_BIN="$bin"
{
  date -u; nvidia-smi; ncu --version | tail -1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count())'
} > "$out/env.txt" 2>&1

case "$part" in
one)
  (timeout 560 bash tests/gpu/e2e_job.sh "$work/e2e" 0 "${KAGENT_E2E_ROUNDS:-4}" \
     > "$work/e2e.txt" 2>&1; echo "e2e exit $?" >> "$work/e2e.txt") &
  e2e=$!
  (
    export CUDA_VISIBLE_DEVICES=1
    timeout 420 python3 tests/gpu/run_suite.py --repeat 5 --json "$out/suite.json" \
      --cupti-lib "$bin/libkagent_cupti.so" \
      ${KAGENT_SUITE_ONLY:+--only "$KAGENT_SUITE_ONLY"} > "$out/suite.txt" 2>&1
    echo "suite exit $?" >> "$out/suite.txt"
    for backend in ncu cupti; do
      t0=$(date +%s%N)
      timeout 120 env -u CUDA_VISIBLE_DEVICES "$bin/kagent_profile_once" --gpu 1 \
        --problem tests/gpu/cases/problem_matvec.py \
        --kernel tests/gpu/cases/cand_matvec_tile32.py --backend $backend \
        --cupti-lib "$bin/libkagent_cupti.so" --pythonpath "$repo/python" --python python3 \
        --raw-out "$work/profile_$backend.raw" > "$work/profile_$backend.json" 2> "$work/profile_$backend.err"
      rc=$?
      t1=$(date +%s%N)
      echo "profile $backend: exit $rc, $(( (t1 - t0) / 1000000 )) ms" >> "$out/profile.txt"
      tail -3 "$work/profile_$backend.err" >> "$out/profile.txt"
    done
    [ -n "${KAGENT_SKIP_FIXTURES:-}" ] ||
      timeout 150 bash tests/fixtures/metrics/record_h200.sh "$work/fixtures" >> "$out/profile.txt" 2>&1
  )
  wait $e2e
  cat "$work/e2e.txt" >> "$out/profile.txt"
  tar czf "$out/part_one.tgz" -C "$work" . 2>/dev/null
  ;;
two)
  timeout 580 python3 tests/gpu/multi_gpu.py --out "$work/mg" --window 80 --warmup 20 \
    --fault-timeout 200 > "$out/multi_gpu.txt" 2>&1
  echo "multi_gpu exit $?" >> "$out/multi_gpu.txt"
  cp "$work/mg/multi_gpu.json" "$out/" 2>/dev/null
  tar czf "$out/part_two.tgz" --exclude='*.db' -C "$work" . 2>/dev/null
  ;;
*)
  echo "unknown part $part" >&2; exit 2 ;;
esac
ls -la "$out"
