#!/usr/bin/env bash
# Stacks completed while recording (issue #30), against perf in the same run, every CPU busy with
# a program without frame pointers (one copy per CPU):
#   - `record -a --call-graph dwarf`: perfscope unwinds while recording, perf keeps the copies.
#     File size (target <= 1/10 of perf's), samples lost (0 where perf loses 0), recorder CPU,
#     the whole pipeline's CPU (record + report: target <= 1/3 of perf's) and report alone
#     (target: perf report of perf's file >= 20x the time of perfscope report of ours).
#   - `record -a -g` with the frame-pointer gaps filled against `--call-graph fp`, every CPU busy
#     with a frame-pointer program whose leaves are frameless libc routines (strlen, memcpy: a gap
#     in every sample, the worst case): recorder CPU (target <= 1.5x) and file size (<= 1.2x).
# The recorders record `sleep SECONDS` system-wide, so their CPU (time's user + sys) is theirs.
#
#   bench/stack_completion_benchmark.sh BUILD_DIR [SECONDS] [FREQUENCY]
set -euo pipefail

build_dir=${1:?usage: stack_completion_benchmark.sh BUILD_DIR [SECONDS] [FREQUENCY]}
seconds=${2:-10}
frequency=${3:-4000}
perfscope="$build_dir/perfscope"
workload="$build_dir/tests/known_answer_nofp"
gaps_workload="$build_dir/tests/stack_gaps_workload"
for program in "$perfscope" "$workload" "$gaps_workload"; do
  if [[ ! -x $program ]]; then
    echo "stack_completion_benchmark: $program is missing; build first (make build)" >&2
    exit 1
  fi
done
perf_program=$(command -v perf || true)
if [[ -z $perf_program ]]; then
  echo "stack_completion_benchmark: perf is not installed (apt-get install linux-perf)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cpus=$(nproc)

# CPU seconds (user + sys) of one command, its stderr kept in $work/last.err.
cpu_of() {
  /usr/bin/time -f '%U %S' -o "$work/time" "$@" >/dev/null 2>"$work/last.err"
  awk '{ printf "%.3f", $1 + $2 }' "$work/time"
}
wall_of() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}
size_of() { stat -c %s "$1"; }
# Rounds of the known-answer program that outlast the recording (about 100 a second).
busy() {
  for ((i = 0; i < cpus; ++i)); do "$workload" $((seconds * 150)) >/dev/null & done
  sleep 0.5
}
busy_in_libc() {
  for ((i = 0; i < cpus; ++i)); do "$gaps_workload" leaves $((seconds * 1500)) >/dev/null & done
  sleep 0.5
}
stop_busy() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
}
lost_perfscope() { grep -o '([0-9]* records lost), [0-9]* lost samples' "$work/last.err" | awk '{ gsub(/\(/, "", $1); print $1 + $4 }'; }
lost_perf() { grep -c 'lost' "$work/last.err" || true; }
ratio() {
  awk -v name="$1" -v a="$2" -v b="$3" -v op="$4" -v target="$5" 'BEGIN {
    r = b == 0 ? 0 : a / b
    pass = (op == "<=" ? r <= target : r >= target)
    printf "%s %.3f (%s / %s; target %s %s): %s\n", name, r, a, b, op, target, pass ? "PASS" : "MISS"
  }'
}

echo "stack completion: $cpus CPUs busy with $(basename "$workload"), -a -F $frequency for $seconds s"

busy
ours_cpu=$(cpu_of "$perfscope" record -a --call-graph dwarf -F "$frequency" -o "$work/ours.data" -- sleep "$seconds")
ours_lost=$(lost_perfscope)
grep -E 'stacks:|note' "$work/last.err" || true
stop_busy
busy
perf_cpu=$(cpu_of "$perf_program" record -q -a --call-graph dwarf -F "$frequency" -o "$work/perf.data" -- sleep "$seconds")
perf_lost=$(lost_perf)
stop_busy
ours_size=$(size_of "$work/ours.data")
perf_size=$(size_of "$work/perf.data")
ours_report=$(cpu_of "$perfscope" report -i "$work/ours.data" --stdio)
perf_report=$(cpu_of "$perf_program" report -i "$work/perf.data" --stdio)
ours_report_wall=$(wall_of "$perfscope" report -i "$work/ours.data" --stdio)
perf_report_wall=$(wall_of "$perf_program" report -i "$work/perf.data" --stdio)
echo "dwarf: perfscope record ${ours_cpu} s CPU, $((ours_size / 1000000)) MB, ${ours_lost} lost;" \
     "perf record ${perf_cpu} s CPU, $((perf_size / 1000000)) MB, lost warnings: ${perf_lost}"
echo "dwarf: report CPU perfscope ${ours_report} s, perf ${perf_report} s;" \
     "wall perfscope ${ours_report_wall} s, perf ${perf_report_wall} s"
ratio dwarf_file_ratio "$ours_size" "$perf_size" "<=" 0.1
ratio dwarf_pipeline_cpu_ratio "$(awk -v a="$ours_cpu" -v b="$ours_report" 'BEGIN { print a + b }')" \
  "$(awk -v a="$perf_cpu" -v b="$perf_report" 'BEGIN { print a + b }')" "<=" 0.333
ratio dwarf_report_speedup "$perf_report_wall" "$ours_report_wall" ">=" 20
if [[ $perf_lost -eq 0 ]]; then
  awk -v lost="$ours_lost" 'BEGIN { printf "dwarf_lost %d (perf lost none; target 0): %s\n", lost, lost == 0 ? "PASS" : "MISS" }'
fi

busy_in_libc
fp_cpu=$(cpu_of "$perfscope" record -a --call-graph fp -F "$frequency" -o "$work/fp.data" -- sleep "$seconds")
stop_busy
busy_in_libc
gaps_cpu=$(cpu_of "$perfscope" record -a -g -F "$frequency" -o "$work/gaps.data" -- sleep "$seconds")
grep -E 'stacks:' "$work/last.err" || true
stop_busy
echo "frame pointers: --call-graph fp ${fp_cpu} s CPU, -g ${gaps_cpu} s CPU"
ratio gaps_cpu_ratio "$gaps_cpu" "$fp_cpu" "<=" 1.5
ratio gaps_file_ratio "$(size_of "$work/gaps.data")" "$(size_of "$work/fp.data")" "<=" 1.2
