#!/usr/bin/env bash
# What tracing system calls costs the traced program: 1M getpid calls timed from inside the
# program (bench/getpid_loop.c), run plain, under `perfscope trace -s`, `perf trace -s` and
# `strace -f -c`, each RUNS times (median). Prints each slowdown (traced / plain) and the ratios.
# Targets: perfscope's slowdown <= perf trace's, and strace's slowdown / perfscope's >= 10.
#
#   bench/trace_overhead.sh BUILD_DIR [CALLS] [RUNS]
set -euo pipefail

build_dir=${1:?usage: trace_overhead.sh BUILD_DIR [CALLS] [RUNS]}
calls=${2:-1000000}
runs=${3:-3}
perfscope="$build_dir/perfscope"
if [[ ! -x $perfscope ]]; then
  echo "trace_overhead: $perfscope is missing; build first (ninja -C $build_dir perfscope_cli)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
loop="$work/getpid_loop"
# Static: no dynamic loader, so every tool sees the same few calls around the loop.
cc -O2 -static -o "$loop" "$(dirname "$0")/getpid_loop.c"

# median_loop_ns COMMAND...: the loop's own time (ns), median of $runs runs.
median_loop_ns() {
  local values=()
  for ((i = 0; i < runs; ++i)); do
    local out
    out=$("$@" 2>&1 >/dev/null) || { echo "trace_overhead: '$*' failed: $out" >&2; return 1; }
    values+=("$(awk '/^loop_ns / { print $2 }' <<<"$out")")
    if grep -q "events lost" <<<"$out"; then echo "  ($1: $(grep "events lost" <<<"$out"))" >&2; fi
  done
  printf '%s\n' "${values[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "trace overhead: $calls getpid calls, median of $runs runs, the loop timed from inside"
plain=$(median_loop_ns "$loop" "$calls")
ours=$(median_loop_ns "$perfscope" trace -s -o /dev/null -- "$loop" "$calls")
perf_ns=""
if perf_program=$(command -v perf) && "$perf_program" trace -s -o /dev/null -- true 2>/dev/null; then
  perf_ns=$(median_loop_ns "$perf_program" trace -s -o /dev/null -- "$loop" "$calls")
else
  echo "trace_overhead: perf trace does not work here (apt-get install linux-perf; root)"
fi
strace_ns=""
if strace_program=$(command -v strace); then
  strace_ns=$(median_loop_ns "$strace_program" -f -c -o /dev/null "$loop" "$calls")
else
  echo "trace_overhead: strace is not installed (apt-get install strace)"
fi

per_call() { awk -v ns="$1" -v n="$calls" 'BEGIN { printf "%.1f ns/call", ns / n }'; }
slowdown() { awk -v a="$1" -v b="$plain" 'BEGIN { printf "%.2f", a / b }'; }
echo "plain:           $(per_call "$plain")"
echo "perfscope trace: $(per_call "$ours"), slowdown $(slowdown "$ours")x"
[[ -n $perf_ns ]] && echo "perf trace:      $(per_call "$perf_ns"), slowdown $(slowdown "$perf_ns")x"
[[ -n $strace_ns ]] && echo "strace -f:       $(per_call "$strace_ns"), slowdown $(slowdown "$strace_ns")x"
if [[ -n $perf_ns ]]; then
  awk -v a="$(slowdown "$ours")" -v b="$(slowdown "$perf_ns")" 'BEGIN {
    printf "trace_slowdown_ratio_vs_perf_trace %.3f (target <= 1): %s\n", a / b, (a <= b ? "PASS" : "MISS") }'
fi
if [[ -n $strace_ns ]]; then
  awk -v a="$(slowdown "$strace_ns")" -v b="$(slowdown "$ours")" 'BEGIN {
    printf "trace_strace_slowdown_over_ours %.1f (target >= 10): %s\n", a / b, (a / b >= 10 ? "PASS" : "MISS") }'
fi
