#!/usr/bin/env bash
# `perfscope list` against `perf list`: median wall time of each, run interleaved, and their
# ratio. Target: perfscope/perf <= 0.5. Both list every event this machine has (perf's hardware,
# software, cache, PMU and tracepoint events; perfscope's also opens each non-tracepoint event
# once to mark whether it counts here).
#
#   bench/list_benchmark.sh BUILD_DIR [RUNS] [WARMUP]
set -euo pipefail

build_dir=${1:?usage: list_benchmark.sh BUILD_DIR [RUNS] [WARMUP]}
runs=${2:-30}
warmup=${3:-3}
perfscope="$build_dir/perfscope"
timer="$build_dir/bench/time_runs"
for program in "$perfscope" "$timer"; do
  if [[ ! -x $program ]]; then
    echo "list_benchmark: $program is missing; build first (ninja -C $build_dir perfscope_cli time_runs)" >&2
    exit 1
  fi
done
perf_program=$(command -v perf || true)
if [[ -z $perf_program ]] || ! "$perf_program" list >/dev/null 2>&1; then
  echo "list_benchmark: 'perf list' is not available here (apt-get install linux-perf), so" \
       "perfscope/perf is not measured"
  exit 0
fi

ours_count=$("$perfscope" list --json | grep -o '"name":' | wc -l)
perf_count=$("$perf_program" list 2>/dev/null | grep -c '^  [^ ]' || true)
echo "list: perfscope lists $ours_count events, perf list $perf_count lines;" \
     "$runs interleaved runs of each after $warmup warm-up rounds, wall time per run"
table=$("$timer" -n "$runs" -w "$warmup" ::: perfscope "$perfscope" list \
                                         ::: perf "$perf_program" list)
echo "$table"
median() { awk -v label="$1" '$1 == label { print $3 }' <<<"$table"; }
awk -v a="$(median perfscope)" -v b="$(median perf)" 'BEGIN {
  r = a / b
  printf "list_ratio_vs_perf %.3f (median %.1f us / %.1f us; target <= 0.5): %s\n", r, a, b,
         (r <= 0.5 ? "PASS" : "MISS")
}'
