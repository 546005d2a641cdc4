#!/usr/bin/env bash
# One optimization job through kagentd with every LLM agent on a loopback, OpenAI-shaped
# (vLLM-shaped) endpoint whose "model" is the deterministic script of
# tests/gpu/llm_scripted_server.py, the LLM configuration's cassette recording every
# prompt (with the job's real measurements and profile metrics) and every reply. For a
# machine without network (the GPU machine): no real LLM answers here, and the replies
# say that they come from the script. Builds nothing.
#
#   tests/gpu/llm_job.sh OUT_DIR PROBLEM [kagent submit flags...]
#
# PROBLEM: a folder with problem.py (and start_kernel.py, given as --kernel when present),
# or a problem file (its sibling NAME_start.py given as --kernel when present). Without
# submit flags the job runs with --rounds 2; the script always adds --brain llm and
# --name. Binaries from $KAGENT_BIN (default .gpu/bin when it holds kagentd, else
# build/tools, else build-test/tools). Environment: KAGENT_LLM_JOB_TIMEOUT (seconds for
# the whole run, default 300), KAGENT_GPUS (kagentd's --gpus, default auto: the GPUs, else
# one CPU worker under Triton's interpreter), KAGENT_DAEMON_FLAGS (more kagentd flags),
# KAGENT_PROBLEM_SCALE (passed on to the harness: shrinks problems/ for a CPU run).
#
# Leaves in OUT_DIR: cassette.jsonl (the kagent cassette), requests.jsonl (the server's
# log of every request and reply), llm.json (the configuration), kagentd.log, submit.txt
# (the watch), get.txt, export/ (kagent export: job.json, candidates.json, kernels,
# artifacts/ with every prompt.txt and reply.txt) and summary.txt (the job's state,
# wall time, verdicts and calls per agent). Everything it starts is stopped on exit.
# Exit 0 only when the job reached DONE and at least one chat call reached the server.
# On the device, whose reply brings back only a few files, tar the folder:
#   bash tests/gpu/llm_job.sh /tmp/llmjob examples/matvec; tar czf $OUT/llmjob.tgz -C /tmp llmjob
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
usage="usage: $0 OUT_DIR PROBLEM_DIR|PROBLEM.py [kagent submit flags...]"
out="${1:?$usage}"
problem_arg="${2:?$usage}"
shift 2
timeout_s="${KAGENT_LLM_JOB_TIMEOUT:-300}"
source "$repo/tests/gpu/kagentd_lib.sh"
bin="$(kagent_bin "$repo")"
# A bundle's binaries need its libraries (as for the other scripts, `source .gpu/env.sh`).
[ -f "$bin/../env.sh" ] && . "$bin/../env.sh"
for b in kagentd kagent; do
  [ -x "$bin/$b" ] || { echo "llm_job: no $b in $bin (set KAGENT_BIN)" >&2; exit 2; }
done
if [ -d "$problem_arg" ]; then
  problem="$problem_arg/problem.py"
  start="$problem_arg/start_kernel.py"
  name="$(basename "$(cd "$problem_arg" && pwd)")"
else
  problem="$problem_arg"
  start="${problem_arg%.py}_start.py"
  name="$(basename "${problem_arg%.py}")"
fi
[ -f "$problem" ] || { echo "llm_job: no problem file $problem" >&2; exit 2; }
kernel_flags=()
[ -f "$start" ] && kernel_flags=(--kernel "$start")
submit_flags=("$@")
[ ${#submit_flags[@]} -eq 0 ] && submit_flags=(--rounds 2)

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/export" "$out/db"
rm -f "$out"/{cassette.jsonl,requests.jsonl,llm.json,port,kagentd.out,kagentd.log,submit.txt,get.txt,summary.txt}
mkdir -p "$out/db"
t0=$(date +%s)
deadline=$((t0 + timeout_s))
left() { echo $((deadline - $(date +%s))); }

server=""; daemon=""
cleanup() {
  for p in $daemon $server; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 1 40); do
    alive=0
    for p in $daemon $server; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.25
  done
  for p in $daemon $server; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

model="scripted-echo"
python3 "$repo/tests/gpu/llm_scripted_server.py" --port 0 --port-file "$out/port" \
  --log "$out/requests.jsonl" --model "$model" > "$out/server.out" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  [ -s "$out/port" ] && break
  kill -0 $server 2>/dev/null || { echo "llm_job: the scripted server exited" >&2; cat "$out/server.out" >&2; exit 1; }
  sleep 0.1
done
[ -s "$out/port" ] || { echo "llm_job: the scripted server wrote no port" >&2; exit 1; }
llm_port=$(cat "$out/port")

cat > "$out/llm.json" <<EOF
{"provider": "openai", "base_url": "http://127.0.0.1:$llm_port", "model": "$model",
 "timeout_s": 60, "retry": {"max_attempts": 2, "total_timeout_s": 120},
 "cassette": {"mode": "record", "path": "$out/cassette.jsonl"}, "probe": true}
EOF

# shellcheck disable=SC2086  # KAGENT_DAEMON_FLAGS is a word list on purpose
kagentd_start "$out/kagentd.out" "$out/kagentd.log" $((2 * $(left))) --listen=127.0.0.1:0 \
  --metrics-listen=127.0.0.1:0 --db="$out/db/kagent.db" --gpus="${KAGENT_GPUS:-auto}" \
  --llm-config="$out/llm.json" --brains=heuristic,llm,openai ${KAGENT_DAEMON_FLAGS:-}
started=$?
daemon=$KAGENTD_PID
[ $started -eq 0 ] || { echo "llm_job: kagentd did not start" >&2; exit 1; }
port=$(kagentd_port "$out/kagentd.out")
export KAGENT_SERVER=127.0.0.1:$port

timeout "$(left)" "$bin/kagent" submit "$problem" "${kernel_flags[@]}" --brain llm \
  --name "llm-$name" "${submit_flags[@]}" --watch > "$out/submit.txt" 2>&1
watch_rc=$?
job=$(grep -o 'job-[0-9a-zA-Z]*' "$out/submit.txt" | head -1)
if [ -z "$job" ]; then
  echo "llm_job: submit failed (rc $watch_rc):" >&2; cat "$out/submit.txt" >&2; exit 1
fi
if [ $watch_rc -eq 124 ]; then
  echo "llm_job: $job still running after ${timeout_s}s; cancelling it" >&2
  "$bin/kagent" cancel "$job" --reason "llm_job.sh timeout" >/dev/null 2>&1
fi
"$bin/kagent" get "$job" > "$out/get.txt" 2>&1
"$bin/kagent" export "$job" "$out/export" > "$out/export.txt" 2>&1
state=$(awk '$1 == "state" {print $2; exit}' "$out/get.txt")
wall=$(( $(date +%s) - t0 ))

python3 - "$out" "$job" "${state:-unknown}" "$wall" > "$out/summary.txt" <<'PY'
import collections, json, os, sys
out, job, state, wall = sys.argv[1:5]
print(f"job {job}: {state} after {wall} s (whole run: server, kagentd, job, export)")
try:
    cands = json.load(open(os.path.join(out, "export", "candidates.json")))
except (OSError, ValueError) as e:
    cands = {}
    print(f"candidates: not exported ({e})")
rows = cands.get("candidates", [])
verdicts = collections.Counter()
for c in rows:
    m = c.get("measurement") or {}
    v = m.get("verdict", "VERDICT_UNSPECIFIED")
    verdicts[v] += 1
    print(f"  {c.get('id', '?'):24} {v:28} {c.get('origin', c.get('kernel', {}).get('origin', ''))}")
print("verdicts: " + (", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())) or "none"))
calls, statuses = collections.Counter(), collections.Counter()
try:
    for line in open(os.path.join(out, "requests.jsonl")):
        e = json.loads(line)
        if e.get("method") == "POST":
            calls[e.get("agent") or "unrecognised"] += 1
            statuses[e.get("status")] += 1
except OSError:
    pass
print("chat calls per agent: " + (", ".join(f"{k} {n}" for k, n in sorted(calls.items())) or "none"))
print("HTTP statuses of the calls: " + ", ".join(f"{k} {n}" for k, n in sorted(statuses.items())))
try:
    entries = [json.loads(l) for l in open(os.path.join(out, "cassette.jsonl"))]
except OSError:
    entries = []
errors = sum(1 for e in entries if "error" in e)
print(f"cassette entries: {len(entries)} ({errors} recorded errors)")
arts = os.path.join(out, "export", "artifacts")
prompts = replies = 0
for root, _, files in os.walk(arts):
    prompts += sum(1 for f in files if f.endswith("prompt.txt"))
    replies += sum(1 for f in files if f.endswith("reply.txt"))
print(f"exported prompt artifacts: {prompts}, reply artifacts: {replies}")
# Whether the agents' answers were used: the coordinator's fallback events (from the
# watch), the brain's own check of each rewrite, and who planned each round.
try:
    watch = open(os.path.join(out, "submit.txt")).read().splitlines()
except OSError:
    watch = []
fell = [l.strip() for l in watch if "fell back to the heuristic" in l]
print(f"agent fallbacks to the heuristic (events): {len(fell)}")
for l in fell[:5]:
    print(f"  {l[:200]}")
marked = [c for c in rows if (c.get("prescription") or {}).get("fallback")]
print(f"rewrites the brain marked as not applying the fix: {len(marked)}"
      + "".join(f"\n  {c.get('id')}: {c['prescription']['fallback'][:160]}" for c in marked))
planned = []
for root, _, files in os.walk(arts):
    if "plan.json" in files:
        try:
            plan = json.load(open(os.path.join(root, "plan.json")))
        except ValueError:
            continue
        who = plan.get("rationale", "")
        planned.append(f"round {plan.get('round')}: " + ("the LLM" if who.startswith("planned by")
                                                         else "the heuristic"))
print("plans: " + ("; ".join(sorted(planned)) or "none exported"))
PY
cat "$out/summary.txt"
calls=$(grep -c '"method": "POST"' "$out/requests.jsonl" 2>/dev/null || true)
[ "${state:-}" = "DONE" ] || { echo "llm_job: the job ended ${state:-unknown}, not DONE" >&2; exit 1; }
[ "${calls:-0}" -gt 0 ] || { echo "llm_job: no LLM call reached the scripted server" >&2; exit 1; }
exit 0
