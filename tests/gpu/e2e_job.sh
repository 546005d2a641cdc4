#!/usr/bin/env bash
# One optimization job end to end through kagentd on this machine's GPUs, with the heuristic
# brain: by default the case study (C = A @ x, A 2048 x 1,048,576 bf16) from the slow 32-row
# tile kernel (BLOCK_M=32, BLOCK_K=512, num_stages=1). Builds nothing: it runs the binaries
# in $KAGENT_BIN (default: .gpu/bin of a bundle, else build/tools, else build-test/tools).
#
#   tests/gpu/e2e_job.sh OUT_DIR [GPUS] [ROUNDS] [PROBLEM_DIR]
#
# GPUS is kagentd's --gpus (default auto: every visible GPU). Writes under OUT_DIR:
# kagentd.log, watch.txt (the live progress), get.txt (the result table), best_kernel.py,
# export/ (kagent export: JSON, kernels, report.html) and summary.json. Exit 0 when the job
# finished DONE.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: $0 OUT_DIR [GPUS] [ROUNDS] [PROBLEM_DIR]}"
gpus="${2:-auto}"
rounds="${3:-4}"
problem="${4:-$repo/examples/matvec}"
source "$repo/tests/gpu/kagentd_lib.sh"
bin="$(kagent_bin "$repo")"
port="${KAGENT_E2E_PORT:-50071}"
mkdir -p "$out"
start=$(date +%s)
trap 'kill -TERM ${KAGENTD_PID:-} 2>/dev/null; wait ${KAGENTD_PID:-} 2>/dev/null' EXIT
kagentd_start "$out/kagentd.out" "$out/kagentd.log" 240 --listen=127.0.0.1:$port \
  --metrics-listen=127.0.0.1:0 --db="$out/e2e.db" --gpus="$gpus" ||
  { echo "e2e: kagentd did not start"; exit 1; }
export KAGENT_SERVER=127.0.0.1:$port
sub=$("$bin/kagent" submit "$problem/problem.py" --kernel "$problem/start_kernel.py" \
      --name e2e-matvec --rounds "$rounds" --target-efficiency "${KAGENT_E2E_TARGET:-97}")
echo "$sub"
job=$(echo "$sub" | grep -o 'job-[0-9a-f]*' | head -1)
[ -n "$job" ] || { echo "e2e: submit failed"; exit 1; }
"$bin/kagent" watch "$job" > "$out/watch.txt" 2>&1
"$bin/kagent" get "$job" --kernel-out "$out/best_kernel.py" | tee "$out/get.txt"
"$bin/kagent" export "$job" "$out/export" > /dev/null
state=$(awk '$1 == "state" {print $2; exit}' "$out/get.txt")
end=$(date +%s)
printf '{"job":"%s","state":"%s","wall_seconds":%d,"gpus":"%s","rounds":%s}\n' \
  "$job" "$state" $((end - start)) "$gpus" "$rounds" | tee "$out/summary.json"
[ "$state" = "DONE" ]
