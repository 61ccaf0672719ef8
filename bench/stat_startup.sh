#!/usr/bin/env bash
# Start-up cost of `perfscope stat -e task-clock -- true` against `perf stat` and against
# minimal_stat (the least a counting front end can do), and of `perfscope --help` and
# `perfscope COMMAND --help`, run interleaved in one measurement.
# Targets: perfscope/perf <= 0.2 (5x faster start-up), perfscope/minimal <= 1.3, each help <= 2 ms.
#
#   bench/stat_startup.sh BUILD_DIR [RUNS] [WARMUP]
set -euo pipefail

build_dir=${1:?usage: stat_startup.sh BUILD_DIR [RUNS] [WARMUP]}
runs=${2:-200}
warmup=${3:-20}
perfscope="$build_dir/perfscope"
minimal="$build_dir/bench/minimal_stat"
timer="$build_dir/bench/time_runs"
for program in "$perfscope" "$minimal" "$timer"; do
  if [[ ! -x $program ]]; then
    echo "stat_startup: $program is missing; build first (make build, or ninja -C $build_dir)" >&2
    exit 1
  fi
done

# The command being counted: an absolute path, so no PATH search differs between the tools.
workload=$(command -v true)
commands=(::: perfscope "$perfscope" stat -e task-clock -- "$workload"
          ::: minimal "$minimal" "$workload"
          ::: help "$perfscope" --help
          ::: stat_help "$perfscope" stat --help
          ::: record_help "$perfscope" record --help
          ::: report_help "$perfscope" report --help)
perf_program=$(command -v perf || true)
if [[ -z $perf_program ]]; then
  echo "stat_startup: perf is not installed, so perfscope/perf is not measured" \
       "(apt-get install linux-perf)"
elif ! "$perf_program" stat -e task-clock -- "$workload" >/dev/null 2>&1; then
  echo "stat_startup: '$perf_program stat -e task-clock -- true' fails here" \
       "(no perf for this kernel?), so perfscope/perf is not measured"
  perf_program=""
else
  commands+=(::: perf "$perf_program" stat -e task-clock -- "$workload")
fi

echo "start-up: $runs interleaved runs of each after $warmup warm-up rounds, wall time per run"
table=$("$timer" -n "$runs" -w "$warmup" "${commands[@]}")
echo "$table"

median() { awk -v label="$1" '$1 == label { print $3 }' <<<"$table"; }
# ratio NAME A B TARGET: prints A/B and PASS when it is at most TARGET.
ratio() {
  awk -v name="$1" -v a="$2" -v b="$3" -v target="$4" 'BEGIN {
    r = a / b
    printf "%s %.3f (median %.1f us / %.1f us; target <= %s): %s\n", name, r, a, b, target,
           (r <= target ? "PASS" : "MISS")
  }'
}
ours=$(median perfscope)
if [[ -n $perf_program ]]; then
  ratio startup_ratio_vs_perf "$ours" "$(median perf)" 0.2
fi
ratio startup_ratio_vs_minimal "$ours" "$(median minimal)" 1.3
# within NAME MEDIAN_US LIMIT_MS: PASS when the median run is at most LIMIT_MS.
within() {
  awk -v name="$1" -v us="$2" -v limit="$3" 'BEGIN {
    printf "%s %.2f ms (median; target <= %s ms): %s\n", name, us / 1000, limit,
           (us <= limit * 1000 ? "PASS" : "MISS")
  }'
}
for help in help stat_help record_help report_help; do
  within "${help}_time" "$(median "$help")" 2
done
