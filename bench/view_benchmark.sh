#!/usr/bin/env bash
# perfscope view on a large -g recording (about SAMPLES cpu-clock samples of two copies of the
# known-answer workload, 10 us period): the time from starting `perfscope view` to the first
# painted flame graph in headless Chromium, the time the views take to follow a new time range,
# the size of `report --format html`, and the viewer's peak RSS against `report --stdio`'s.
# Targets (issue #34): first paint <= 1.5 s, range update <= 200 ms, html <= 10 MB,
# RSS <= 2x report's.
#
#   bench/view_benchmark.sh BUILD_DIR [SAMPLES]
set -euo pipefail

build_dir=${1:?usage: view_benchmark.sh BUILD_DIR [SAMPLES]}
samples=${2:-1000000}
perfscope="$build_dir/perfscope"
workload="$build_dir/tests/known_answer_fp"
here=$(cd "$(dirname "$0")" && pwd)
for program in "$perfscope" "$build_dir/perfscope-view" "$workload"; do
  if [[ ! -x $program ]]; then
    echo "view_benchmark: $program is missing; build it first" \
         "(ninja -C $build_dir perfscope_cli known_answer_fp)" >&2
    exit 1
  fi
done
if [[ ! -x ${PERFSCOPE_CHROMIUM:-/usr/bin/chromium} || ! -d $here/../tests/browser/node_modules/puppeteer-core ]]; then
  echo "view_benchmark: needs Chromium and puppeteer-core (scripts/install-deps test)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count_samples() { "$perfscope" script -i "$1" -F tid | grep -c . || true; }

# Samples per 20 rounds of the workload at this period, measured here (machines differ).
"$perfscope" record -q -e cpu-clock -c 10000 -o "$work/calibrate.data" -- "$workload" 20 \
  >/dev/null 2>&1
per_20=$(count_samples "$work/calibrate.data")
if [[ -z $per_20 || $per_20 -lt 10 ]]; then per_20=20000; fi
rounds=$((samples / 2 * 20 / per_20 + 1))
echo "recording: -g, cpu-clock every 10 us on two copies of known_answer_fp, $rounds rounds each"
"$perfscope" record -q -g -e cpu-clock -c 10000 -o "$work/big.data" -- \
  sh -c "'$workload' $rounds & '$workload' $rounds; wait" >/dev/null 2>&1
echo "file: $(count_samples "$work/big.data") samples, $(stat -c %s "$work/big.data") bytes"

paint=$(node "$here/view_paint.mjs" "$perfscope" "$work/big.data")
rss_report=$( { /usr/bin/time -f '%M' "$perfscope" report --stdio -i "$work/big.data" >/dev/null; } 2>&1 | tail -1)
"$perfscope" report --format html -o "$work/big.html" -i "$work/big.data"
html_bytes=$(stat -c %s "$work/big.html")

node -e '
const [paint, rssReport, html] = process.argv.slice(1);
const p = JSON.parse(paint);
const worst = Math.max(...p.range_update_ms);
console.log(`view reading the file until it serves: ${p.serving_ms.toFixed(0)} ms`);
console.log(`view_first_paint_ms ${p.first_paint_ms.toFixed(0)} (from starting perfscope view, Chromium already up; target <= 1500)`);
console.log(`view_range_update_ms ${p.range_update_ms.map((v) => v.toFixed(0)).join(" ")} (worst ${worst.toFixed(0)}; target <= 200)`);
console.log(`view_html_bytes ${html} (target <= 10485760)`);
console.log(`view_rss_ratio ${(p.rss_kib / Number(rssReport)).toFixed(2)} (view ${p.rss_kib} KiB / report ${rssReport} KiB; target <= 2)`);
' "$paint" "$rss_report" "$html_bytes"
