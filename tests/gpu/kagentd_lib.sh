# Sourced (not run) by the GPU scripts that start kagentd: bench_suite.sh, e2e_job.sh,
# package_check.sh, llm_job.sh.
#
#   kagent_bin REPO
#       prints the folder holding kagentd and kagent: $KAGENT_BIN when set, else
#       REPO/.gpu/bin (a bundle), else REPO/build/tools, else REPO/build-test/tools.
#   kagentd_start OUT_FILE LOG_FILE TRIES [kagentd flags...]
#       starts "$bin/kagentd" (the caller sets bin) in the background with the flags, its
#       stdout in OUT_FILE and its log in LOG_FILE; sets KAGENTD_PID; waits until it has
#       written its ports to OUT_FILE, at most TRIES half-seconds. Returns 1, with the
#       log's tail on stderr, when kagentd exited or did not start in time (it is then
#       left running only in the second case: the caller's trap stops it).
#   kagentd_port OUT_FILE [KEY]
#       prints the port kagentd wrote to OUT_FILE under KEY (default "port"; or
#       "metrics_port").

kagent_bin() {
  local repo="$1"
  if [ -n "${KAGENT_BIN:-}" ]; then echo "$KAGENT_BIN"
  elif [ -x "$repo/.gpu/bin/kagentd" ]; then echo "$repo/.gpu/bin"
  elif [ -x "$repo/build/tools/kagentd" ]; then echo "$repo/build/tools"
  else echo "$repo/build-test/tools"; fi
}

kagentd_start() {
  local out_file="$1" log_file="$2" tries="$3"
  shift 3
  "$bin/kagentd" "$@" >"$out_file" 2>"$log_file" &
  KAGENTD_PID=$!
  local _
  for _ in $(seq 1 "$tries"); do
    grep -q '"port"' "$out_file" 2>/dev/null && return 0
    if ! kill -0 "$KAGENTD_PID" 2>/dev/null; then
      echo "kagentd exited:" >&2
      tail -20 "$log_file" >&2
      return 1
    fi
    sleep 0.5
  done
  grep -q '"port"' "$out_file" 2>/dev/null && return 0
  echo "kagentd did not start within $((tries / 2)) s:" >&2
  tail -20 "$log_file" >&2
  return 1
}

kagentd_port() {
  sed -n "s/.*\"${2:-port}\":\([0-9]*\).*/\1/p" "$1" | head -1
}
