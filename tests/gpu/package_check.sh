#!/usr/bin/env bash
# The winning kernels of a GPU run's jobs as Python packages, each tested on this machine's
# GPU by its own pytest (docs/export.md): on a copy of STATE_DIR's database (as
# bench_suite.sh leaves it), kagentd starts with no worker (nothing is measured or
# resumed), `kagent export JOB DIR --package` writes the package of up to N DONE jobs,
# those with the highest speedup over their start first, and `python3 -m pytest` runs each
# package's test_package.py (the kernel against the reference, eagerly and under
# torch.compile, the guard's fallback); set TRITON_INTERPRET=1 for a CPU worker's jobs.
#
#   tests/gpu/package_check.sh STATE_DIR OUT_DIR [N]      (N: default 3)
#
# OUT_DIR receives jobs.txt (`kagent list --state done`), packages/ (each package), one
# pytest log per package (pytest-JOB.txt) and summary.txt (a line per package: job,
# problem, export and pytest exit codes, pytest's last line). Exits 1 when no package
# could be exported or any package's test failed. Builds nothing: binaries from
# $KAGENT_BIN (default .gpu/bin, else build/tools, else build-test/tools); Python: $KAGENT_PYTHON (default
# python3).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="${1:?usage: $0 STATE_DIR OUT_DIR [N]}"
out="${2:?usage: $0 STATE_DIR OUT_DIR [N]}"
n="${3:-3}"
python="${KAGENT_PYTHON:-python3}"
case "$python" in */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;; esac
source "$repo/tests/gpu/kagentd_lib.sh"
bin="$(kagent_bin "$repo")"
mkdir -p "$out/packages"
out="$(cd "$out" && pwd)"
scratch="$(mktemp -d)"
if [ -f "$state/kagent.db" ]; then
  cp "$state"/kagent.db* "$scratch/"
elif [ -f "$state/db.tgz" ]; then
  tar xzf "$state/db.tgz" -C "$scratch"
else
  echo "package_check: no kagent.db or db.tgz in $state" >&2
  exit 1
fi
port="${KAGENT_PACKAGE_PORT:-50091}"
trap 'kill -TERM ${KAGENTD_PID:-} 2>/dev/null; wait ${KAGENTD_PID:-} 2>/dev/null; rm -rf "$scratch"' EXIT
kagentd_start "$scratch/kagentd.out" "$out/kagentd.log" 120 --listen=127.0.0.1:$port \
  --metrics-listen=127.0.0.1:0 --db="$scratch/kagent.db" --gpus=none ||
  { echo "package_check: kagentd did not start"; exit 1; }
export KAGENT_SERVER=127.0.0.1:$port
"$bin/kagent" list --state done --limit 500 > "$out/jobs.txt" || exit 1
# JOB STATE ROUND SPEEDUP PROBLEM; the highest speedup over the start first ("-": none).
jobs=$(awk 'NR > 1 && $1 ~ /^job-/ { s = $4; sub(/x$/, "", s); if (s == "-") s = 0;
            print s, $1, $5 }' "$out/jobs.txt" | sort -rn -k1,1)
: > "$out/summary.txt"
exported=0 failed=0
while read -r speedup job problem; do
  [ -n "$job" ] || continue
  [ "$exported" -lt "$n" ] || break
  dir="$out/packages/$job"
  "$bin/kagent" export "$job" "$dir" --package > "$out/export-$job.txt" 2>&1
  erc=$?
  if [ $erc -ne 0 ]; then
    echo "$job $problem ${speedup}x export=$erc ($(tail -1 "$out/export-$job.txt"))" >> "$out/summary.txt"
    continue
  fi
  exported=$((exported + 1))
  pkg=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'kagent_*' | head -1)
  (cd "$dir" && timeout 300 "$python" -m pytest -q -p no:cacheprovider \
     "$(basename "$pkg")") > "$out/pytest-$job.txt" 2>&1
  prc=$?
  [ $prc -eq 0 ] || failed=$((failed + 1))
  echo "$job $problem ${speedup}x export=0 pytest=$prc ($(tail -1 "$out/pytest-$job.txt"))" \
    >> "$out/summary.txt"
done <<< "$jobs"
cat "$out/summary.txt"
[ "$exported" -gt 0 ] && [ "$failed" -eq 0 ]
