#!/usr/bin/env bash
# What reading a jitdump costs report: node --perf-prof compiles FUNCTIONS generated JS
# functions (a jitdump of about DUMP_MB MB) and runs them hot while perf record -k mono takes about
# SAMPLES cpu-clock samples; perfscope report --stdio is timed (median of RUNS) with the dump in
# place (every JIT frame named from it) and with it moved away (the same frames as addresses).
# Target: with/without <= 1.20 (the jitdump adds at most 20 %).
#
#   bench/jitdump_benchmark.sh BUILD_DIR [RUNS] [SAMPLES] [FUNCTIONS]
set -euo pipefail

build_dir=${1:?usage: jitdump_benchmark.sh BUILD_DIR [RUNS] [SAMPLES] [FUNCTIONS]}
runs=${2:-3}
samples=${3:-1000000}
functions=${4:-1000}
perfscope="$(cd "$build_dir" && pwd)/perfscope"
if [[ ! -x $perfscope ]]; then
  echo "jitdump_benchmark: $perfscope is missing; build it first (ninja -C $build_dir perfscope_cli)" >&2
  exit 1
fi
if ! command -v node >/dev/null; then
  echo "jitdump_benchmark: node is not installed (apt-get install nodejs): nothing to measure"
  exit 0
fi
if ! command -v perf >/dev/null || ! perf record -q -o /dev/null -- true >/dev/null 2>&1; then
  echo "jitdump_benchmark: perf record does not work here (apt-get install linux-perf)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Functions made with new Function() each compile to code of their own (Sparkplug compiles each at
# once): the dump grows by one CODE_LOAD (name and code bytes, a few KB) per function and tier.
cat >generated.js <<'EOF'
const count = Number(process.argv[2]);
const seconds = Number(process.argv[3]);
const fns = [];
for (let i = 0; i < count; i++) {
  let body = 'let s = x;';
  for (let k = 0; k < 400; k++) body += ` s = (s * ${i + 3} + ${k}) | 0;`;
  fns.push(new Function('x', body + ' return s;'));
}
let total = 0;
for (let round = 0; round < 3; round++) for (const f of fns) total += f(round);
const end = Date.now() + seconds * 1000;
while (Date.now() < end) for (let i = 0; i < 64; i++) total += fns[(total & 0x7fffffff) % count](i);
console.log(total);
EOF

period_us=10
seconds=$(( samples * period_us / 4000000 + 1 ))  # node keeps about four threads busy
echo "== recording: $functions generated functions, ~$seconds s of samples every ${period_us} us"
perf record -q -k mono -e cpu-clock -c $((period_us * 1000)) -o perf.data -- \
  node --perf-prof --interpreted-frames-native-stack --always-sparkplug generated.js \
  "$functions" "$seconds" >/dev/null
dump=$(ls jit-*.dump)
dump_mb=$(du -m "$dump" | cut -f1)
recorded=$("$perfscope" report -i perf.data --stdio --sort dso -g none 2>/dev/null |
  awk '/^# Samples:/ { print $3 }')
echo "jitdump: $dump_mb MB; samples: $recorded"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
time_report() {
  for _ in $(seq "$runs"); do
    /usr/bin/env time -f %e "$perfscope" report -i perf.data --stdio -g none >/dev/null 2>time.txt
    tail -1 time.txt
  done | median
}
with=$(time_report)
mv "$dump" "$dump.away"
without=$(time_report)
mv "$dump.away" "$dump"
awk -v with="$with" -v without="$without" -v mb="$dump_mb" 'BEGIN {
  r = with / without
  printf "report with the %d MB jitdump: %.2f s, without it: %.2f s: ratio %.2f (target <= 1.20) %s\n",
         mb, with, without, r, r <= 1.20 ? "met" : "MISSED"
}'
