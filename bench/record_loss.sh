#!/usr/bin/env bash
# perfscope record against perf record system-wide at -F max with every CPU busy (one busy thread
# per CPU), side by side: samples in the file, records lost (LOST records, plus what the
# recorder reports as lost at its stop), recorder CPU time (its own task-clock: perf stat
# --no-inherit, so the `sleep` it starts is not counted) and file size. Target (issue #19): no
# more loss than perf, recorder CPU <= perf's, file <= perf's.
#
#   bench/record_loss.sh BUILD_DIR [SECONDS] [RUNS] [EXTRA RECORD OPTIONS...]
#   e.g. bench/record_loss.sh build 5 3           bench/record_loss.sh build 5 1 -m 128
set -euo pipefail

build_dir=${1:?usage: record_loss.sh BUILD_DIR [SECONDS] [RUNS] [EXTRA RECORD OPTIONS...]}
seconds=${2:-5}
runs=${3:-1}
shift $(($# < 3 ? $# : 3))
extra=("$@")
perfscope="$build_dir/perfscope"
if [[ ! -x $perfscope ]]; then
  echo "record_loss: $perfscope is missing; build it first (ninja -C $build_dir perfscope_cli)" >&2
  exit 1
fi
if ! command -v perf >/dev/null || ! perf record -q -a -o /dev/null -- true >/dev/null 2>&1; then
  echo "record_loss: perf record -a does not work here (root or perf_event_paranoid <= 0 and" \
       "linux-perf are needed), so there is nothing to compare with"
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
for ((cpu = 0; cpu < cpus; ++cpu)); do
  (while :; do :; done) &
  busy_pids+=($!)
done

# The recorder's own task-clock in seconds (RECORDER ARGS... -- sleep N).
recorder_cpu() {
  perf stat -x, -e task-clock --no-inherit -o "$work/stat.txt" -- "$@" >/dev/null 2>"$work/err.txt"
  awk -F, '$3 ~ /^task-clock/ { printf "%.3f", $1 / 1000 }' "$work/stat.txt"
}
# Samples and lost records of a file, as perf counts them (the same count for both files).
file_counts() {  # FILE -> "SAMPLES LOST"
  perf report -i "$1" --stats 2>/dev/null | awk '
    /^ *SAMPLE events:/ { samples = $3 }
    /^ *LOST events:/ { lost_records = $3 }
    END { printf "%d %d\n", samples, lost_records }'
}
# The records the LOST records say were lost (perf report --stats counts LOST records only).
lost_total() {  # FILE
  perf script -i "$1" --show-lost-events -F event 2>/dev/null |
    awk '/LOST/ { for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9]+!?$/) { sub("!", "", $i); n += $i } }
         END { print n + 0 }'
}

echo "record_loss: $cpus busy threads, record -a -F max ${extra[*]:+${extra[*]} }for $seconds s," \
     "$runs run(s) each; max rate $(cat /proc/sys/kernel/perf_event_max_sample_rate) Hz"
printf '%-16s %10s %8s %12s %10s %12s\n' recorder samples LOST lost_records cpu_s file_MB
for ((run = 0; run < runs; ++run)); do
  for tool in perf perfscope; do
    if [[ $tool == perf ]]; then
      cpu=$(recorder_cpu perf record -q -a -F max "${extra[@]}" -o "$work/$tool.data" -- sleep "$seconds")
    else
      cpu=$(recorder_cpu "$perfscope" record -a -F max "${extra[@]}" -o "$work/$tool.data" -- sleep "$seconds")
    fi
    read -r samples lost_records < <(file_counts "$work/$tool.data")
    lost=$(lost_total "$work/$tool.data")
    size=$(stat -c %s "$work/$tool.data")
    printf '%-16s %10d %8d %12d %10s %12.2f\n' "$tool" "$samples" "$lost_records" "$lost" "$cpu" \
      "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')"
  done
done
