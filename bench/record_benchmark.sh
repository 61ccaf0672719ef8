#!/usr/bin/env bash
# perfscope record and perfscope script against perf record and perf script, in one run:
#   - recorder CPU time and file size of `record -F 10000 -- W` (W: about 1 s of busy work),
#     measured as the recorder's own task-clock (perf stat --no-inherit: the workload it starts
#     is not counted) and the size of the file written; the median of RUNS runs, interleaved.
#     Targets: CPU ratio <= 1.0, size ratio <= 1.0, and no LOST records.
#   - `script` on one file of about 500k cpu-clock samples written by perf record (two busy
#     processes on a 20 us period): wall time of the median run. Target: perf/perfscope >= 5.
#
#   bench/record_benchmark.sh BUILD_DIR [RUNS] [SCRIPT_SAMPLES]
set -euo pipefail

build_dir=${1:?usage: record_benchmark.sh BUILD_DIR [RUNS] [SCRIPT_SAMPLES]}
runs=${2:-5}
script_samples=${3:-500000}
perfscope="$build_dir/perfscope"
work_helper="$build_dir/tests/work_helper"
for program in "$perfscope" "$work_helper"; do
  if [[ ! -x $program ]]; then
    echo "record_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli work_helper)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "record_benchmark: perf record does not work here (apt-get install linux-perf), so" \
       "there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# About 1 s of getpid(2) calls on this machine: half user, half kernel time.
workload=("$work_helper" getpid 20000000)

# The recorder's own task-clock in ms.
recorder_ms() {
  perf stat -x, -e task-clock --no-inherit -o "$work/stat.txt" -- "$@" >/dev/null 2>"$work/err.txt"
  awk -F, '$3 ~ /^task-clock/ { print $1 }' "$work/stat.txt"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() {  # NAME A B OP TARGET UNIT
  awk -v name="$1" -v a="$2" -v b="$3" -v op="$4" -v target="$5" -v unit="$6" 'BEGIN {
    r = a / b
    ok = (op == "<=") ? r <= target : r >= target
    printf "%s %.3f (%s %s / %s %s; target %s %s): %s\n", name, r, a, unit, b, unit, op, target,
           (ok ? "PASS" : "MISS")
  }'
}

echo "record: $runs interleaved runs of each, -F 10000 -- ${workload[*]}"
: >"$work/ours_ms" && : >"$work/perf_ms" && : >"$work/ours_bytes" && : >"$work/perf_bytes"
lost=0
for ((run = 0; run < runs; ++run)); do
  recorder_ms perf record -q -F 10000 -o "$work/perf.data" -- "${workload[@]}" >>"$work/perf_ms"
  stat -c %s "$work/perf.data" >>"$work/perf_bytes"
  recorder_ms "$perfscope" record -F 10000 -o "$work/ours.data" -- "${workload[@]}" \
    >>"$work/ours_ms"
  stat -c %s "$work/ours.data" >>"$work/ours_bytes"
  run_lost=$(sed -n 's/.*samples, \([0-9]*\) LOST records.*/\1/p' "$work/err.txt")
  lost=$((lost + ${run_lost:-0}))
done
echo "  perf record:      CPU ms $(tr '\n' ' ' <"$work/perf_ms") bytes $(tr '\n' ' ' <"$work/perf_bytes")"
echo "  perfscope record: CPU ms $(tr '\n' ' ' <"$work/ours_ms") bytes $(tr '\n' ' ' <"$work/ours_bytes")"
ratio record_cpu_ratio "$(median <"$work/ours_ms")" "$(median <"$work/perf_ms")" "<=" 1.0 ms
ratio record_size_ratio "$(median <"$work/ours_bytes")" "$(median <"$work/perf_bytes")" "<=" 1.0 B
echo "record_lost $lost LOST records in $runs perfscope runs (target 0): $([[ $lost -eq 0 ]] && echo PASS || echo MISS)"

# cpu-clock every 20 us on two busy processes: the calls per process that give the samples asked
# for (about 1000 samples per 1M getpid calls here, and the same CPU time under load).
calls=$((script_samples / 2 * 1000))
echo
echo "script: one file of about $script_samples samples from perf record -e cpu-clock -c 20000"
perf record -q -e cpu-clock -c 20000 -o "$work/big.data" -- \
  sh -c "'$work_helper' getpid $calls & '$work_helper' getpid $calls; wait" >/dev/null 2>&1
samples=$("$perfscope" script -i "$work/big.data" | wc -l)
echo "  $samples samples, $(stat -c %s "$work/big.data") bytes"
wall_ms() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
: >"$work/perf_script_ms" && : >"$work/ours_script_ms"
for ((run = 0; run < 3; ++run)); do
  wall_ms perf script -i "$work/big.data" >>"$work/perf_script_ms"
  wall_ms "$perfscope" script -i "$work/big.data" >>"$work/ours_script_ms"
done
echo "  perf script:      ms $(tr '\n' ' ' <"$work/perf_script_ms")"
echo "  perfscope script: ms $(tr '\n' ' ' <"$work/ours_script_ms")"
ratio script_speed_ratio "$(median <"$work/perf_script_ms")" "$(median <"$work/ours_script_ms")" \
  ">=" 5 ms
