#!/usr/bin/env bash
# perfscope sched timehist (and latency) against perf sched on the same files, in one run: CPU
# time (task-clock, median of RUNS) and wall time of each on a pipe ping-pong of LOOPS round trips
# (perf bench sched pipe: two tasks switching on every message), recorded once by `perf sched
# record` and once by `perfscope sched record`. The outputs are compared too: the timehist rows
# must be the same text.
# Target: perf/perfscope timehist CPU time >= 5 (on a shared machine the wall time also counts
# the waits for a CPU; it is printed beside it).
#
#   bench/sched_benchmark.sh BUILD_DIR [RUNS] [LOOPS]
set -euo pipefail

build_dir=${1:?usage: sched_benchmark.sh BUILD_DIR [RUNS] [LOOPS]}
runs=${2:-3}
loops=${3:-50000}
perfscope="$build_dir/perfscope"
if [[ ! -x $perfscope ]]; then
  echo "sched_benchmark: $perfscope is missing; build it first (ninja -C $build_dir" \
       "perfscope_cli)" >&2
  exit 1
fi
if ! command -v perf >/dev/null || ! perf sched record -o /dev/null -- true >/dev/null 2>&1; then
  echo "sched_benchmark: perf sched record does not work here (apt-get install linux-perf, run" \
       "as root), so there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() {  # NAME A B TARGET UNIT
  awk -v name="$1" -v a="$2" -v b="$3" -v target="$4" -v unit="$5" 'BEGIN {
    if (b <= 0) b = 0.001
    r = a / b
    printf "%s %.2f (perf %s %s / perfscope %s %s; target >= %s): %s\n", name, r, a, unit, b,
           unit, target, (target == "" || r >= target ? "PASS" : "MISS")
  }'
}
# Wall ms and CPU ms (task-clock) of one run: "WALL CPU".
measure() {
  local start end
  start=$(date +%s%N)
  perf stat -x, -e task-clock -o "$work/stat.txt" -- "$@" >"$work/out.txt" 2>"$work/err.txt"
  end=$(date +%s%N)
  echo "$(((end - start) / 1000000)) $(awk -F, '/task-clock/ { printf "%.1f", $1 }' \
    "$work/stat.txt")"
}

perf sched record -o "$work/perf.data" -- perf bench sched pipe -l "$loops" >/dev/null 2>&1
"$perfscope" sched record -o "$work/ours.data" -- perf bench sched pipe -l "$loops" \
  >/dev/null 2>&1

compare() {  # NAME FILE SUBCOMMAND
  local name=$1 file=$2 sub=$3
  : >"$work/perf_wall" && : >"$work/perf_cpu" && : >"$work/ours_wall" && : >"$work/ours_cpu"
  for ((run = 0; run < runs; ++run)); do
    read -r wall cpu < <(measure perf sched "$sub" -i "$file")
    echo "$wall" >>"$work/perf_wall" && echo "$cpu" >>"$work/perf_cpu"
    cp "$work/out.txt" "$work/perf_out.txt"
    read -r wall cpu < <(measure "$perfscope" sched "$sub" -i "$file")
    echo "$wall" >>"$work/ours_wall" && echo "$cpu" >>"$work/ours_cpu"
  done
  local target=""
  [[ $sub == timehist ]] && target=5
  ratio "sched_${sub}_cpu_ratio[$name]" "$(median <"$work/perf_cpu")" \
    "$(median <"$work/ours_cpu")" "$target" ms
  ratio "sched_${sub}_wall_ratio[$name]" "$(median <"$work/perf_wall")" \
    "$(median <"$work/ours_wall")" "" ms
  local differing
  differing=$(diff "$work/perf_out.txt" "$work/out.txt" | grep -c '^>' || true)
  echo "sched_${sub}_rows[$name]: $(wc -l <"$work/out.txt") lines, $differing differ from perf's"
}

for name in perf ours; do
  file="$work/$name.data"
  echo "$name sched record of $loops round trips: $(stat -c %s "$file") bytes," \
       "$("$perfscope" sched timehist -i "$file" | tail -n +4 | wc -l) switches"
  compare "$name" "$file" timehist
  compare "$name" "$file" latency
done
