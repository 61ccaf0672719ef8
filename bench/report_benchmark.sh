#!/usr/bin/env bash
# perfscope report against perf report on the same files, in one run: wall time (median of RUNS)
# and peak RSS (/usr/bin/time -v) of `report --stdio` on a file of about SAMPLES cpu-clock
# samples (two busy processes on a 20 us period), recorded without and with -g (frame-pointer
# call chains), and on a --call-graph dwarf recording of a tenth of that (perf report unwinds
# each of its stacks, which makes the full size take minutes).
# Targets: perf/perfscope time >= 5, perfscope/perf peak RSS <= 1.
#
#   bench/report_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]
set -euo pipefail

build_dir=${1:?usage: report_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]}
runs=${2:-3}
samples=${3:-500000}
perfscope="$build_dir/perfscope"
work_helper="$build_dir/tests/work_helper"
for program in "$perfscope" "$work_helper"; do
  if [[ ! -x $program ]]; then
    echo "report_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli work_helper)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "report_benchmark: perf record does not work here (apt-get install linux-perf), so" \
       "there is nothing to compare with"
  exit 0
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "report_benchmark: /usr/bin/time is missing (apt-get install time): no peak RSS" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() {  # NAME A B OP TARGET UNIT
  awk -v name="$1" -v a="$2" -v b="$3" -v op="$4" -v target="$5" -v unit="$6" 'BEGIN {
    r = a / b
    ok = (op == "<=") ? r <= target : r >= target
    printf "%s %.3f (%s %s / %s %s; target %s %s): %s\n", name, r, a, unit, b, unit, op, target,
           (ok ? "PASS" : "MISS")
  }'
}
# Wall ms and peak RSS KiB of one run: "MS KIB".
measure() {
  local start end
  start=$(date +%s%N)
  /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt"
  end=$(date +%s%N)
  echo "$(((end - start) / 1000000)) $(awk -F': ' '/Maximum resident set size/ { print $2 }' \
    "$work/time.txt")"
}

# Samples per 1M getpid calls at this period: measured here, since a system call's cost differs
# from machine to machine by more than an order of magnitude (1000 on a KVM guest with a 6.1
# kernel, 29000 on one with 6.18).
perf record -q -e cpu-clock -c 20000 -o "$work/calibrate.data" -- "$work_helper" getpid 1000000 \
  >/dev/null 2>&1
per_million=$("$perfscope" script -i "$work/calibrate.data" -F tid | grep -c . || true)
if [[ -z $per_million || $per_million -lt 10 ]]; then per_million=1000; fi
rm -f "$work/calibrate.data"
record() {  # NAME SAMPLES [perf record options...]
  local name=$1 count=$2
  shift 2
  local calls=$((count / 2 * 1000000 / per_million))
  perf record -q -e cpu-clock -c 20000 "$@" -o "$work/$name.data" -- \
    sh -c "'$work_helper' getpid $calls & '$work_helper' getpid $calls; wait" >/dev/null 2>&1
}

compare() {  # NAME
  local name=$1 file="$work/$1.data"
  local count
  count=$("$perfscope" script -i "$file" -F tid | grep -c . || true)
  echo "$name: $count samples, $(stat -c %s "$file") bytes"
  : >"$work/ours_ms" && : >"$work/perf_ms" && : >"$work/ours_kb" && : >"$work/perf_kb"
  for ((run = 0; run < runs; ++run)); do
    read -r ms kb < <(measure perf report --stdio -i "$file")
    echo "$ms" >>"$work/perf_ms" && echo "$kb" >>"$work/perf_kb"
    read -r ms kb < <(measure "$perfscope" report --stdio -i "$file")
    echo "$ms" >>"$work/ours_ms" && echo "$kb" >>"$work/ours_kb"
  done
  echo "  perf report:      ms $(tr '\n' ' ' <"$work/perf_ms") peak KiB $(tr '\n' ' ' <"$work/perf_kb")"
  echo "  perfscope report: ms $(tr '\n' ' ' <"$work/ours_ms") peak KiB $(tr '\n' ' ' <"$work/ours_kb")"
  ratio "report_speed_ratio_$name" "$(median <"$work/perf_ms")" "$(median <"$work/ours_ms")" \
    ">=" 5 ms
  ratio "report_rss_ratio_$name" "$(median <"$work/ours_kb")" "$(median <"$work/perf_kb")" \
    "<=" 1.0 KiB
}

echo "recording: cpu-clock every 20 us on two busy processes (about $samples samples each;" \
  "$per_million samples per 1M getpid calls here)"
record flat "$samples"
compare flat
record callchain "$samples" -g
compare callchain
record dwarf $((samples / 10)) --call-graph dwarf
compare dwarf
