#!/usr/bin/env bash
# perfscope record against perf record system-wide at -F max with every CPU busy (one busy thread
# per CPU), side by side: samples in the file, records lost (what the LOST records say, plus what
# the recorder reports as lost at its stop), recorder CPU time (its own task-clock, --no-inherit,
# so the `sleep` it starts is not counted) and file size. Target (issue #19): no more loss than
# perf, recorder CPU <= perf's, file <= perf's.
#
#   bench/record_loss.sh BUILD_DIR [SECONDS] [RUNS] [EXTRA RECORD OPTIONS...]
#   e.g. bench/record_loss.sh build 5 3           bench/record_loss.sh build 5 1 -m 128
#
# Environment: PERF, the perf command (default `perf`; on a machine without linux-perf, a carried
# binary: PERF="DIR/ld-linux-x86-64.so.2 --library-path DIR DIR/perf"); BUSY, the number of busy
# threads (default: one per CPU); FREQ, the -F value (default max). Both files are counted by
# perfscope's reader (the corpus check holds it to perf's counts), since perf script takes ~14 s
# on a 16-CPU recording.
set -euo pipefail

build_dir=${1:?usage: record_loss.sh BUILD_DIR [SECONDS] [RUNS] [EXTRA RECORD OPTIONS...]}
seconds=${2:-5}
runs=${3:-1}
shift $(($# < 3 ? $# : 3))
extra=("$@")
perfscope="$build_dir/perfscope"
read -r -a perf <<<"${PERF:-perf}"
if [[ ! -x $perfscope ]]; then
  echo "record_loss: $perfscope is missing; build it first (ninja -C $build_dir perfscope_cli)" >&2
  exit 1
fi
if ! "${perf[@]}" record -q -a -o /dev/null -- true >/dev/null 2>&1; then
  echo "record_loss: perf record -a does not work here (root or perf_event_paranoid <= 0 and" \
       "linux-perf, or PERF=..., are needed), so there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
busy_pids=()
cleanup() {
  for pid in "${busy_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cpus=$(nproc)
busy=${BUSY:-$cpus}
freq=${FREQ:-max}
for ((thread = 0; thread < busy; ++thread)); do
  (while :; do :; done) &
  busy_pids+=($!)
done

# The recorder's own task-clock in seconds (RECORDER ARGS... -- sleep N).
recorder_cpu() {
  "$perfscope" stat -x, -e task-clock --no-inherit -o "$work/stat.txt" -- "$@" >/dev/null \
    2>"$work/err.txt"
  # perf's CSV: value,unit,event,...
  awk -F, '$3 == "task-clock" { printf "%.3f", $1 / 1000 }' "$work/stat.txt"
}
# Samples and records lost in a file: "SAMPLES LOST".
# (The samples from --stats: the table's Samples column scales large counts as perf's, "80K".)
file_counts() {
  local samples lost
  samples=$("$perfscope" report -i "$1" --stats 2>/dev/null |
    awk '/ SAMPLE events: / && !n { print $3; n = 1 }')
  lost=$("$perfscope" report -i "$1" --stdio --sort comm 2>/dev/null |
    awk '/^# Total Lost Samples: / && !n { print $5; n = 1 }')
  echo "${samples:-0} ${lost:-0}"
}

echo "record_loss: $busy busy threads on $cpus CPUs, record -a -F $freq" \
     "${extra[*]:+${extra[*]} }for $seconds s, $runs run(s) each;" \
     "max rate $(cat /proc/sys/kernel/perf_event_max_sample_rate) Hz"
printf '%-10s %12s %12s %10s %10s\n' recorder samples lost cpu_s file_MB
for ((run = 0; run < runs; ++run)); do
  for tool in perf perfscope; do
    if [[ $tool == perf ]]; then
      cpu=$(recorder_cpu "${perf[@]}" record -q -a -F "$freq" "${extra[@]}" -o "$work/$tool.data" \
        -- sleep "$seconds")
    else
      cpu=$(recorder_cpu "$perfscope" record -a -F "$freq" "${extra[@]}" -o "$work/$tool.data" \
        -- sleep "$seconds")
    fi
    read -r samples lost < <(file_counts "$work/$tool.data")
    size=$(stat -c %s "$work/$tool.data")
    printf '%-10s %12d %12d %10s %10.2f\n' "$tool" "$samples" "$lost" "$cpu" \
      "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')"
  done
done
