#!/usr/bin/env bash
# perfscope report -g and script on 1, 2, 4, 8 and 16 threads (as many as this machine has CPUs)
# against perf report -g and perf script on the same file, in one run: wall time (median of
# RUNS) and peak RSS of each, the speedup over one thread and the ratio to perf. The file holds
# about SAMPLES cpu-clock samples with frame-pointer call chains (two busy processes on a 20 us
# period). Then, on files of 25K to 400K samples, one thread against all of them: where more
# threads start to pay (PerfDataReader's parallel_analysis_min_bytes).
# Targets (issue #35): 2 threads >= 1.7x one thread on >= 2M samples; report -g >= 20x perf,
# script >= 12x perf (2 CPUs); >= 10x each on 16 CPUs with RSS <= 1/4 of perf's.
#
#   bench/parallel_analysis_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]
set -euo pipefail

build_dir=${1:?usage: parallel_analysis_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]}
runs=${2:-3}
samples=${3:-2200000}
perfscope="$build_dir/perfscope"
work_helper="$build_dir/tests/work_helper"
for program in "$perfscope" "$work_helper"; do
  if [[ ! -x $program ]]; then
    echo "parallel_analysis_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli work_helper)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "parallel_analysis_benchmark: perf record does not work here (apt-get install linux-perf)"
  exit 0
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "parallel_analysis_benchmark: /usr/bin/time is missing (apt-get install time)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpus=$(nproc)
echo "machine: $cpus CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo))"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# Median wall ms and peak RSS KiB of RUNS runs: "MS KIB".
measure() {
  : >"$work/ms" && : >"$work/kb"
  for ((run = 0; run < runs; ++run)); do
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f %M -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt"
    end=$(date +%s%N)
    echo $(((end - start) / 1000000)) >>"$work/ms"
    cat "$work/time.txt" >>"$work/kb"
  done
  echo "$(median <"$work/ms") $(median <"$work/kb")"
}

# Samples per 1M getpid calls at this period, measured here (a system call's cost differs from
# machine to machine by more than an order of magnitude).
perf record -q -e cpu-clock -c 20000 -o "$work/calibrate.data" -- "$work_helper" getpid 1000000 \
  >/dev/null 2>&1
per_million=$("$perfscope" script -i "$work/calibrate.data" -F tid | grep -c . || true)
if [[ -z $per_million || $per_million -lt 10 ]]; then per_million=1000; fi
rm -f "$work/calibrate.data"
record() {  # FILE SAMPLES
  local calls=$(($2 / 2 * 1000000 / per_million))
  perf record -q -e cpu-clock -c 20000 -g -o "$1" -- \
    sh -c "'$work_helper' getpid $calls & '$work_helper' getpid $calls; wait" >/dev/null 2>&1
}

file="$work/large.data"
record "$file" "$samples"
count=$("$perfscope" script -i "$file" -F tid | grep -c . || true)
echo "file: $count samples, $(($(stat -c %s "$file") >> 20)) MiB, frame-pointer call chains"

thread_counts=()
for threads in 1 2 4 8 16; do
  if ((threads == 1 || threads <= cpus)); then thread_counts+=("$threads"); fi
done
# PASS or MISS of a target: "NAME VALUE OP TARGET".
verdict() {
  awk -v name="$1" -v v="$2" -v op="$3" -v t="$4" 'BEGIN {
    ok = (op == "<=") ? v <= t : v >= t
    printf "  target %s %s %s: %.2f %s\n", name, op, t, v, (ok ? "PASS" : "MISS")
  }'
}
compare() {  # NAME PERF_TARGET PERF_ARGS... -- OUR_ARGS...
  local name=$1 perf_target=$2
  shift 2
  local perf_args=() ours=()
  while [[ $1 != -- ]]; do perf_args+=("$1") && shift; done
  shift
  ours=("$@")
  read -r perf_ms perf_kb < <(measure perf "${perf_args[@]}" -i "$file")
  echo "$name: perf ${perf_ms} ms, ${perf_kb} KiB"
  local one_ms=""
  for threads in "${thread_counts[@]}"; do
    read -r ms kb < <(measure "$perfscope" "${ours[@]}" --threads "$threads" -i "$file")
    [[ -z $one_ms ]] && one_ms=$ms
    awk -v name="$name" -v t="$threads" -v ms="$ms" -v kb="$kb" -v one="$one_ms" \
      -v perf_ms="$perf_ms" -v perf_kb="$perf_kb" 'BEGIN {
        printf "%s --threads %2d: %6d ms, %7d KiB; %.2fx one thread, perf/perfscope time %.1f, RSS %.2f of perf'"'"'s\n",
               name, t, ms, kb, one / (ms > 0 ? ms : 1), perf_ms / (ms > 0 ? ms : 1), kb / perf_kb
      }'
    ((ms > 0)) || ms=1
    if ((threads == 2)); then verdict "$name 2 threads / 1 thread" "$(awk -v a="$one_ms" -v b="$ms" 'BEGIN { print a / b }')" ">=" 1.7; fi
    if ((threads == cpus && cpus <= 2)); then verdict "$name perf / perfscope" "$(awk -v a="$perf_ms" -v b="$ms" 'BEGIN { print a / b }')" ">=" "$perf_target"; fi
    if ((threads == cpus && cpus >= 16)); then
      verdict "$name perf / perfscope" "$(awk -v a="$perf_ms" -v b="$ms" 'BEGIN { print a / b }')" ">=" 10
      verdict "$name RSS / perf's" "$(awk -v a="$kb" -v b="$perf_kb" 'BEGIN { print a / b }')" "<=" 0.25
    fi
  done
}
compare "report -g" 20 report --stdio -g -- report --stdio -g
compare "script" 12 script -- script

# Where more threads start to pay: one thread against all the CPUs on smaller files.
echo "threshold (--threads 1 against --threads $cpus):"
for size in 25000 50000 100000 200000 400000; do
  small="$work/small.data"
  record "$small" "$size"
  read -r one_ms _ < <(measure "$perfscope" report --stdio -g --threads 1 -i "$small")
  read -r all_ms _ < <(measure "$perfscope" report --stdio -g --threads "$cpus" -i "$small")
  echo "  $size samples, $(($(stat -c %s "$small") >> 10)) KiB: one thread ${one_ms} ms," \
       "$cpus threads ${all_ms} ms"
done
