#!/usr/bin/env bash
# perf's shipped Python scripts run by perfscope script -s against perf script -s, on the same
# files, in the same run: stackcollapse.py over about SAMPLES cpu-clock samples with call chains
# (two copies of the known-answer workload on a 10 us period), and syscall-counts.py over
# SAMPLES raw_syscalls:sys_enter samples (a loop of getpid calls). Wall time, median of RUNS;
# the outputs are checked to be the same text.
# Target: perf/perfscope time >= 3 for each (the scripts' own Python time is the floor).
#
#   bench/script_python_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]
set -euo pipefail

build_dir=${1:?usage: script_python_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]}
runs=${2:-3}
samples=${3:-1000000}
perfscope="$build_dir/perfscope"
workload="$build_dir/tests/known_answer_fp"
scripts=/usr/lib/perf-core/scripts/python
for program in "$perfscope" "$build_dir/perfscope-script-python" "$workload"; do
  if [[ ! -x $program ]]; then
    echo "script_python_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli known_answer_fp)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1 ||
   [[ ! -r $scripts/stackcollapse.py ]]; then
  echo "script_python_benchmark: perf record or perf's Python scripts do not work here" \
       "(apt-get install linux-perf), so there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ms_of() {  # wall milliseconds of one run; its output kept in $work/out.txt
  local start end
  start=$(date +%s%N)
  "$@" >"$work/out.txt" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
count_samples() { "$perfscope" script -i "$1" -F tid | grep -c . || true; }

perf record -q -e cpu-clock -c 10000 -o "$work/calibrate.data" -- "$workload" 20 >/dev/null 2>&1
per_20=$(count_samples "$work/calibrate.data")
if [[ -z $per_20 || $per_20 -lt 10 ]]; then per_20=20000; fi
rounds=$((samples / 2 * 20 / per_20 + 1))
perf record -q -g -e cpu-clock -c 10000 -o "$work/stacks.data" -- \
  sh -c "'$workload' $rounds & '$workload' $rounds; wait" >/dev/null 2>&1
echo "stacks.data: $(count_samples "$work/stacks.data") cpu-clock samples with call chains"

cc -O2 -o "$work/getpid_loop" "$(dirname "$0")/getpid_loop.c"
perf record -q -m 4M -e raw_syscalls:sys_enter -o "$work/syscalls.data" -- \
  "$work/getpid_loop" "$samples" >/dev/null 2>&1
echo "syscalls.data: $(count_samples "$work/syscalls.data") raw_syscalls:sys_enter samples"

status=0
compare() {  # NAME FILE SCRIPT
  local name=$1 file=$2 script=$3
  : >"$work/perf_ms" && : >"$work/ours_ms"
  for ((run = 0; run < runs; ++run)); do
    ms_of perf script -i "$file" -s "$script" >>"$work/perf_ms"
    mv "$work/out.txt" "$work/perf_out.txt"
    ms_of "$perfscope" script -i "$file" -s "$script" >>"$work/ours_ms"
    # perf's symbol versions (name@@GLIBC_2.2.5) are perfscope's plain names (docs/FOREIGN_FILES.md)
    # and perf 6.1 leaves some PLT stubs unnamed ("@plt" for __tunable_get_val@plt)
    sed -E 's/@@?GLIBC_[0-9.]+//g; s/\bcfree\b/free/g; s/[A-Za-z0-9_.]+@plt/@plt/g' "$work/perf_out.txt" |
      sort >"$work/perf_sorted.txt"
    sed -E 's/[A-Za-z0-9_.]+@plt/@plt/g' "$work/out.txt" | sort >"$work/ours_sorted.txt"
    if ! cmp -s "$work/perf_sorted.txt" "$work/ours_sorted.txt"; then
      echo "  $name: perfscope's output differs from perf's:" >&2
      diff "$work/perf_sorted.txt" "$work/ours_sorted.txt" | head -5 >&2 || true
    fi
  done
  echo "  perf script -s $name:      ms $(tr '\n' ' ' <"$work/perf_ms")"
  echo "  perfscope script -s $name: ms $(tr '\n' ' ' <"$work/ours_ms")"
  awk -v n="$name" -v a="$(median <"$work/perf_ms")" -v b="$(median <"$work/ours_ms")" 'BEGIN {
    r = a / (b > 0 ? b : 1)
    printf "script_python_%s_ratio %.2f (perf %s ms / perfscope %s ms; target >= 3): %s\n", n, r,
           a, b, (r >= 3 ? "met" : "NOT met")
    exit (r >= 3 ? 0 : 1)
  }' || status=1
}
compare stackcollapse "$work/stacks.data" "$scripts/stackcollapse.py"
compare syscall_counts "$work/syscalls.data" "$scripts/syscall-counts.py"
exit $status
