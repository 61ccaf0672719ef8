#!/usr/bin/env bash
# What continuous push costs the recorder, against perf record writing a file, in one run:
# the CPU time (task-clock of the recorder and every process it starts, the HTTP helper included,
# less the workload's own) of
#   perf record      -F 4000 -g -e cpu-clock -o FILE -- W
#   perfscope record -F 4000 -g -e cpu-clock -o FILE -- W
#   perfscope record -F 4000 -g -e cpu-clock --push URL --push-interval 1 -- W
# where W is the known-answer workload (about 1 s busy per 400 rounds) and URL the test suite's
# stand-in backend on 127.0.0.1. The push run builds, symbolizes, writes and sends one pprof per
# second. Median of RUNS interleaved runs. Target: push/perf <= 2.0 (symbolizing and sending
# every second at most doubles the cost of writing the samples down).
#
#   bench/push_benchmark.sh BUILD_DIR [RUNS] [ROUNDS]
set -euo pipefail

build_dir=${1:?usage: push_benchmark.sh BUILD_DIR [RUNS] [ROUNDS]}
runs=${2:-5}
rounds=${3:-1200}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
perfscope="$build_dir/perfscope"
workload="$build_dir/tests/known_answer_fp"
for program in "$perfscope" "$build_dir/perfscope-push-http" "$workload"; do
  if [[ ! -x $program ]]; then
    echo "push_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli known_answer_fp)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "push_benchmark: perf record does not work here (apt-get install linux-perf): nothing to" \
       "compare with"
  exit 0
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/received"
python3 "$source_dir/tests/cli/data/push_test_server.py" --port-file "$work/port" \
  --out "$work/received" --max-seconds 3600 &
server_pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")"

# CPU ms of everything the command runs (perf stat inherits into children).
cpu_ms() {
  perf stat -x, -e task-clock -o "$work/stat.txt" -- "$@" >/dev/null 2>"$work/err.txt"
  awk -F, '$3 ~ /^task-clock/ { printf "%d\n", $1 }' "$work/stat.txt"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

common=(-F 4000 -g -e cpu-clock)
: >"$work/alone"; : >"$work/perf"; : >"$work/ours"; : >"$work/push"
for _ in $(seq "$runs"); do
  cpu_ms "$workload" "$rounds" >>"$work/alone"
  cpu_ms perf record -q "${common[@]}" -o "$work/perf.data" -- "$workload" "$rounds" >>"$work/perf"
  cpu_ms "$perfscope" record "${common[@]}" -o "$work/ours.data" -- "$workload" "$rounds" \
    >>"$work/ours"
  cpu_ms "$perfscope" record "${common[@]}" --push "$url" --push-interval 1 -- \
    "$workload" "$rounds" >>"$work/push"
done
alone=$(median <"$work/alone")
perf_ms=$(( $(median <"$work/perf") - alone ))
ours_ms=$(( $(median <"$work/ours") - alone ))
push_ms=$(( $(median <"$work/push") - alone ))
profiles=$(ls "$work/received" | grep -c '\.pb\.gz$' || true)
printf "recorder CPU (ms, the workload's own %d ms taken out), median of %d runs:\n" "$alone" "$runs"
printf '  perf record -o FILE                      %6d\n' "$perf_ms"
printf '  perfscope record -o FILE                 %6d\n' "$ours_ms"
printf '  perfscope record --push-interval 1       %6d  (%d profiles received in all)\n' \
  "$push_ms" "$profiles"
ratio=$(awk -v a="$push_ms" -v b="$perf_ms" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 2.0 ? "PASS" : "MISS") }')
echo "push/perf CPU ratio: $ratio (target <= 2.0): $verdict"
