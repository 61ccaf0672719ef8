#!/usr/bin/env bash
# perfscope top against perf top, in one run: the viewer's own CPU time (user + system of all its
# threads, from /proc/PID/stat) over SECONDS seconds of its live view in a tmux pane, after one
# second of start-up, sampling cpu-clock system-wide at 4 kHz while a busy loop keeps a CPU
# loaded. RUNS interleaved runs of each; the medians and their ratio.
# Target: perfscope's CPU / perf's <= 1.0.
#
#   bench/top_overhead.sh BUILD_DIR [RUNS] [SECONDS]
set -euo pipefail

build_dir=${1:?usage: top_overhead.sh BUILD_DIR [RUNS] [SECONDS]}
runs=${2:-3}
seconds=${3:-10}
perfscope="$build_dir/perfscope"
busy="$build_dir/tests/known_answer_fp"
for program in "$perfscope" "$busy"; do
  if [[ ! -x $program ]]; then
    echo "top_overhead: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli known_answer_fp)" >&2
    exit 1
  fi
done
if ! command -v tmux >/dev/null; then
  echo "top_overhead: tmux is missing (apt-get install tmux): both live views need a terminal" >&2
  exit 1
fi
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "top_overhead: perf does not work here (apt-get install linux-perf), so there is" \
       "nothing to compare with"
  exit 0
fi

socket="perfscope_top_bench_$$"
"$busy" 100000000 >/dev/null &
busy_pid=$!
trap 'kill "$busy_pid" 2>/dev/null || true; tmux -L "$socket" kill-server 2>/dev/null || true' EXIT

ticks_per_second=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# CPU milliseconds a viewer uses over $seconds of its steady state. tmux runs the argument
# vector itself (no shell), so the pane's process is the viewer.
viewer_ms() {
  tmux -L "$socket" -f /dev/null new-session -d -x 160 -y 45 "$@"
  local pid
  pid=$(tmux -L "$socket" display-message -p '#{pane_pid}')
  sleep 1
  local before after
  before=$(cpu_ticks "$pid")
  sleep "$seconds"
  after=$(cpu_ticks "$pid")
  tmux -L "$socket" send-keys q
  sleep 0.5
  tmux -L "$socket" kill-server 2>/dev/null || true
  echo $(((after - before) * 1000 / ticks_per_second))
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "top: $runs interleaved runs of each, ${seconds} s of the live view, -a -e cpu-clock -F 4000," \
     "a busy loop on one CPU"
: >"/tmp/top_overhead_ours.$$" && : >"/tmp/top_overhead_perf.$$"
for ((run = 0; run < runs; ++run)); do
  perf_ms=$(viewer_ms perf top -a -e cpu-clock -F 4000)
  ours_ms=$(viewer_ms "$perfscope" top -a -e cpu-clock -F 4000)
  echo "  run $((run + 1)): perf top ${perf_ms} ms CPU, perfscope top ${ours_ms} ms CPU"
  echo "$perf_ms" >>"/tmp/top_overhead_perf.$$"
  echo "$ours_ms" >>"/tmp/top_overhead_ours.$$"
done
perf_median=$(median <"/tmp/top_overhead_perf.$$")
ours_median=$(median <"/tmp/top_overhead_ours.$$")
rm -f "/tmp/top_overhead_ours.$$" "/tmp/top_overhead_perf.$$"
awk -v a="$ours_median" -v b="$perf_median" -v s="$seconds" 'BEGIN {
  if (b == 0) { printf "top CPU: perf top used no measurable CPU; nothing to compare\n"; exit }
  r = a / b
  printf "top CPU per second of viewing: perfscope %.1f ms, perf %.1f ms\n", a / s, b / s
  printf "top_cpu_ratio %.3f (%s ms / %s ms; target <= 1.0): %s\n", r, a, b, (r <= 1.0 ? "PASS" : "MISS")
}'
