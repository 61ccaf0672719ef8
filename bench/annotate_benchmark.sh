#!/usr/bin/env bash
# perfscope annotate against perf annotate on the same file: wall time (median of RUNS) of
# annotating the hottest function (leaf_60 of the known-answer workload) of a recording of about
# SAMPLES cpu-clock samples (two copies of the workload on a 10 us period).
# Target: perf/perfscope time >= 10.
#
#   bench/annotate_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]
set -euo pipefail

build_dir=${1:?usage: annotate_benchmark.sh BUILD_DIR [RUNS] [SAMPLES]}
runs=${2:-3}
samples=${3:-1000000}
perfscope="$build_dir/perfscope"
workload="$build_dir/tests/known_answer_fp"
for program in "$perfscope" "$workload"; do
  if [[ ! -x $program ]]; then
    echo "annotate_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli known_answer_fp)" >&2
    exit 1
  fi
done
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "annotate_benchmark: perf record does not work here (apt-get install linux-perf), so" \
       "there is nothing to compare with"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ms_of() {  # wall milliseconds of one run, output discarded
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
count_samples() { "$perfscope" script -i "$1" -F tid | grep -c . || true; }

# Samples per 20 rounds of the workload at this period, measured here (machines differ).
perf record -q -e cpu-clock -c 10000 -o "$work/calibrate.data" -- "$workload" 20 >/dev/null 2>&1
per_20=$(count_samples "$work/calibrate.data")
if [[ -z $per_20 || $per_20 -lt 10 ]]; then per_20=20000; fi
rounds=$((samples / 2 * 20 / per_20 + 1))
echo "recording: cpu-clock every 10 us on two copies of known_answer_fp, $rounds rounds each" \
  "($per_20 samples per 20 rounds here)"
perf record -q -e cpu-clock -c 10000 -o "$work/big.data" -- \
  sh -c "'$workload' $rounds & '$workload' $rounds; wait" >/dev/null 2>&1
echo "file: $(count_samples "$work/big.data") samples, $(stat -c %s "$work/big.data") bytes"

: >"$work/perf_ms" && : >"$work/ours_ms"
for ((run = 0; run < runs; ++run)); do
  ms_of perf annotate --stdio -i "$work/big.data" leaf_60 >>"$work/perf_ms"
  ms_of "$perfscope" annotate --stdio -i "$work/big.data" leaf_60 >>"$work/ours_ms"
done
echo "  perf annotate --stdio leaf_60:      ms $(tr '\n' ' ' <"$work/perf_ms")"
echo "  perfscope annotate --stdio leaf_60: ms $(tr '\n' ' ' <"$work/ours_ms")"
awk -v a="$(median <"$work/perf_ms")" -v b="$(median <"$work/ours_ms")" 'BEGIN {
  r = a / (b > 0 ? b : 1)
  printf "annotate_speed_ratio %.2f (perf %s ms / perfscope %s ms; target >= 10): %s\n", r, a, b,
         (r >= 10 ? "PASS" : "MISS")
}'
