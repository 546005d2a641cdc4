#!/usr/bin/env bash
# The main job on the embedded default: sets up, builds, starts kagentd (SQLite, the
# heuristic brain, every local GPU), submits the matvec case study (C = A @ x, A 2048 x
# 1,048,576 bf16) starting from a slow 32-row tile Triton kernel, watches it live, prints
# the result and exports the report. Without a GPU it runs a small matvec on one CPU
# worker under Triton's interpreter (correctness is real; timings are not GPU timings).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# The demo needs the daemon, the CLI and the CUPTI tracer (built where CUDA's CUPTI is
# installed), not the test binaries.
KAGENT_BUILD_TARGETS="kagentd kagent" bash scripts/build.sh
if ninja -C build -t targets all 2>/dev/null | grep -q '^kagent_cupti:'; then
  KAGENT_BUILD_TARGETS=kagent_cupti bash scripts/build.sh
fi
mkdir -p var
port=${KAGENT_DEMO_PORT:-50051}
problem=examples/matvec
rounds=${KAGENT_DEMO_ROUNDS:-4}
if ! .venv/bin/python -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "demo: no CUDA GPU here: running the small matvec on the CPU worker"
  problem=examples/matvec_small
  rounds=${KAGENT_DEMO_ROUNDS:-2}
fi
build/tools/kagentd --listen=127.0.0.1:$port --metrics-listen=127.0.0.1:0 --db=var/demo.db \
  >var/kagentd.out 2>var/kagentd.log &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
  grep -q '"port"' var/kagentd.out 2>/dev/null && break
  kill -0 $daemon 2>/dev/null || { echo "kagentd exited; see var/kagentd.log"; tail -20 var/kagentd.log; exit 1; }
  sleep 0.5
done
export KAGENT_SERVER=127.0.0.1:$port
out=$(build/tools/kagent submit $problem/problem.py --kernel $problem/start_kernel.py --name matvec \
      --rounds "$rounds")
echo "$out"
job=$(echo "$out" | grep -o 'job-[0-9a-f]*' | head -1)
build/tools/kagent watch "$job" || true
build/tools/kagent get "$job" --kernel-out var/best_kernel.py
build/tools/kagent export "$job" var/export
echo "demo: report at var/export/report.html, best kernel at var/best_kernel.py"
