#!/usr/bin/env bash
# The benchmark suite (problems/) through kagentd on this machine's GPUs, in slices that
# fit a time-limited machine: each call runs for at most SECONDS, then stops kagentd; the
# next call, given the same state, restarts it on the same database (unfinished jobs
# resume where they were) and `kagent bench --run-id` picks the same jobs up.
#
#   tests/gpu/bench_suite.sh STATE_DIR OUT_DIR SECONDS [kagent bench flags...]
#
# STATE_DIR: kagent.db (or db.tgz from an earlier call) and bench/, kept between calls.
# OUT_DIR receives db.tgz (the database with its WAL), bench.tgz (results.md, results.json,
# trajectory.svg), bench.txt (the bench's progress, and its wall time in its last line),
# metrics.txt (kagentd's Prometheus metrics when the bench ended: tasks, candidates, busy
# seconds per worker), cpu.tsv (the host's CPU busy % and load every 5 s) and kagentd.log.gz.
# Wheels in .whl/ (carried) are installed into .pysite/ for the candidates.
# KAGENT_GPUS (default auto) picks the GPUs (e.g. 0 for one), KAGENT_BENCH_RUN_ID the run,
# KAGENT_BENCH_PROBLEMS the folder of problems (default problems; relative to the checkout,
# e.g. tests/gpu/level1_gemm),
# KAGENT_DAEMON_FLAGS adds kagentd flags (e.g. "--worker-tasks=6 --prepared-max=8").
# Builds nothing: it runs the binaries in $KAGENT_BIN (default .gpu/bin, else build/tools,
# else build-test/tools).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="${1:?usage: $0 STATE_DIR OUT_DIR SECONDS [bench flags...]}"
out="${2:?usage: $0 STATE_DIR OUT_DIR SECONDS [bench flags...]}"
seconds="${3:?usage: $0 STATE_DIR OUT_DIR SECONDS [bench flags...]}"
shift 3
source "$repo/tests/gpu/kagentd_lib.sh"
bin="$(kagent_bin "$repo")"
mkdir -p "$state" "$out"
state="$(cd "$state" && pwd)"; out="$(cd "$out" && pwd)"
[ -f "$state/db.tgz" ] && [ ! -f "$state/kagent.db" ] && tar xzf "$state/db.tgz" -C "$state"
# Python wheels carried in .whl/ (the nvidia-cutlass headers of the CUDA C++ templates):
# installed into .pysite/ of the checkout (not /tmp, which the candidates' sandbox hides)
# and put on the worker's PYTHONPATH, which the harness passes on to the candidates.
if ls "$repo"/.whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$repo/.pysite" "$repo"/.whl/*.whl \
    && export PYTHONPATH="$repo/.pysite${PYTHONPATH:+:$PYTHONPATH}"
fi
port="${KAGENT_BENCH_PORT:-50081}"
t0=$(date +%s)
# shellcheck disable=SC2086  # KAGENT_DAEMON_FLAGS is a word list on purpose
kagentd_start "$state/kagentd.out" "$state/kagentd.log" 240 --listen=127.0.0.1:$port \
  --metrics-listen=127.0.0.1:0 --db="$state/kagent.db" --gpus="${KAGENT_GPUS:-auto}" \
  ${KAGENT_DAEMON_FLAGS:-} || { echo "bench_suite: kagentd did not start"; exit 1; }
daemon=$KAGENTD_PID
export KAGENT_SERVER=127.0.0.1:$port
# The host's CPU while the bench runs (are the preparations short of cores?): every 5 s,
# seconds since the start, the busy % of all cores over the last 5 s, the 1-min load.
python3 - "$out/cpu.tsv" <<'PY' &
import sys, time
def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f) - f[3] - f[4], sum(f)
with open(sys.argv[1], "w") as out:
    out.write("s\tcpu_busy_pct\tload1\n")
    t0, (b0, a0) = time.time(), busy()
    while True:
        time.sleep(5)
        b1, a1 = busy()
        load = open("/proc/loadavg").read().split()[0]
        out.write(f"{time.time() - t0:.0f}\t{100 * (b1 - b0) / max(1, a1 - a0):.0f}\t{load}\n")
        out.flush()
        b0, a0 = b1, a1
PY
sampler=$!
left=$(( seconds - ($(date +%s) - t0) - 25 ))
b0=$(date +%s.%N)
problems="${KAGENT_BENCH_PROBLEMS:-problems}"
[[ "$problems" = /* ]] || problems="$repo/$problems"
timeout "$left" "$bin/kagent" bench "$problems" --out "$state/bench" \
  --run-id "${KAGENT_BENCH_RUN_ID:-h200}" "$@" > "$out/bench.txt" 2>&1
rc=$?
echo "bench exit $rc after $(( $(date +%s) - t0 )) s; bench wall $(python3 -c "import time; print(round(time.time() - $b0, 1))") s" >> "$out/bench.txt"
kill $sampler 2>/dev/null
mport=$(kagentd_port "$state/kagentd.out" metrics_port)
python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(
  'http://127.0.0.1:$mport/metrics', timeout=10).read().decode())" > "$out/metrics.txt" 2>&1
kill -TERM $daemon 2>/dev/null
for _ in $(seq 1 30); do kill -0 $daemon 2>/dev/null || break; sleep 0.5; done
kill -KILL $daemon 2>/dev/null
wait $daemon 2>/dev/null
(cd "$state" && tar czf "$out/db.tgz" kagent.db $(ls kagent.db-wal kagent.db-shm 2>/dev/null))
gzip -c "$state/kagentd.log" > "$out/kagentd.log.gz"
tar czf "$out/bench.tgz" -C "$state" bench 2>/dev/null
exit $rc
