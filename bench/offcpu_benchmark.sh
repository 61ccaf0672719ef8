#!/usr/bin/env bash
# perfscope record --off-cpu -g against perf record -e sched:sched_switch -g (the recipe without
# BPF that hotspot documents), in one run, on a pipe ping-pong of two threads (tens of thousands
# of blocking switches a second):
#   - the recorder's own CPU time (perf stat --no-inherit task-clock: the workload it starts is
#     not counted) and the file size; the median of RUNS interleaved runs. Targets: both ratios
#     <= 1.0. perfscope also takes its default on-CPU samples (4000 Hz) and the switch-in records
#     the durations need; perf's file has the switch-outs only, without durations.
#   - LOST records at the default buffer size in every perfscope run. Target: 0.
#
#   bench/offcpu_benchmark.sh BUILD_DIR [RUNS] [ROUND_TRIPS]
set -euo pipefail

build_dir=${1:?usage: offcpu_benchmark.sh BUILD_DIR [RUNS] [ROUND_TRIPS]}
runs=${2:-3}
round_trips=${3:-100000}
perfscope="$build_dir/perfscope"
workload_bin="$build_dir/tests/offcpu_workload"
for program in "$perfscope" "$workload_bin"; do
  if [[ ! -x $program ]]; then
    echo "offcpu_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli offcpu_workload)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -e sched:sched_switch -o /dev/null -- true \
     >/dev/null 2>&1; then
  echo "offcpu_benchmark: perf record -e sched:sched_switch does not work here (root and" \
       "linux-perf needed), so there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
workload=("$workload_bin" pingpong "$round_trips")

recorder_ms() {
  perf stat -x, -e task-clock --no-inherit -o "$work/stat.txt" -- "$@" >"$work/out.txt" \
    2>"$work/err.txt"
  awk -F, '$3 ~ /^task-clock/ { print $1 }' "$work/stat.txt"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() {  # NAME A B TARGET UNIT
  awk -v name="$1" -v a="$2" -v b="$3" -v target="$4" -v unit="$5" 'BEGIN {
    r = a / b
    printf "%s %.3f (%s %s / %s %s; target <= %s): %s\n", name, r, a, unit, b, unit, target,
           (r <= target ? "PASS" : "MISS")
  }'
}

elapsed_ns=$("${workload[@]}" | awk '{ print $2 }')
rate=$(awk -v n="$round_trips" -v ns="$elapsed_ns" 'BEGIN { printf "%.0f", 4 * n / (ns / 1e9) }')
echo "workload: ${workload[*]}: about $rate blocking switches/s unrecorded (4 per round trip)"
echo "record: $runs interleaved runs of each"
: >"$work/ours_ms" && : >"$work/perf_ms" && : >"$work/ours_bytes" && : >"$work/perf_bytes"
lost=0
intervals=0
for ((run = 0; run < runs; ++run)); do
  recorder_ms perf record -q -e sched:sched_switch -g -o "$work/perf.data" -- "${workload[@]}" \
    >>"$work/perf_ms"
  stat -c %s "$work/perf.data" >>"$work/perf_bytes"
  recorder_ms "$perfscope" record --off-cpu -g -o "$work/ours.data" -- "${workload[@]}" \
    >>"$work/ours_ms"
  stat -c %s "$work/ours.data" >>"$work/ours_bytes"
  run_lost=$(sed -n 's/.*samples, \([0-9]*\) LOST records.*/\1/p' "$work/err.txt")
  lost=$((lost + ${run_lost:-0}))
  intervals=$(sed -n 's/.*with stacks): \([0-9]*\) intervals written.*/\1/p' "$work/err.txt")
done
echo "  perf record -e sched:sched_switch -g: CPU ms $(tr '\n' ' ' <"$work/perf_ms")" \
     "bytes $(tr '\n' ' ' <"$work/perf_bytes")"
echo "  perfscope record --off-cpu -g:        CPU ms $(tr '\n' ' ' <"$work/ours_ms")" \
     "bytes $(tr '\n' ' ' <"$work/ours_bytes")"
echo "  perfscope: ${intervals:-?} off-CPU intervals written in the last run"
ratio offcpu_record_cpu_ratio "$(median <"$work/ours_ms")" "$(median <"$work/perf_ms")" 1.0 ms
ratio offcpu_record_size_ratio "$(median <"$work/ours_bytes")" "$(median <"$work/perf_bytes")" \
  1.0 B
echo "offcpu_record_lost $lost LOST records in $runs perfscope runs (target 0):" \
     "$([[ $lost -eq 0 ]] && echo PASS || echo MISS)"
