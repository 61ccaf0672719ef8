// sieve.js [MS]: sieve(), the hot JS function, run for MS ms (default 4000) of wall-clock time
// and at least as much of this process's CPU time: about nine tenths of the run (node's start is
// the rest) however busy the machine is (wall-clock time alone gives node's start a larger share
// when other tests take the CPUs). Also a module: sieve_compiled_twice.js requires it.
function sieve(n) {
  const composite = new Uint8Array(n + 1);
  let count = 0;
  for (let i = 2; i <= n; i++) {
    if (!composite[i]) { count++; for (let j = i * i; j <= n; j += i) composite[j] = 1; }
  }
  return count;
}
function cpu_ms() {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}
function run(ms) {
  let total = 0;
  const wall_end = Date.now() + ms, cpu_end = cpu_ms() + ms;
  while (Date.now() < wall_end || cpu_ms() < cpu_end) total += sieve(200000);
  return total;
}
module.exports = { sieve, run };
if (require.main === module) console.log(run(Number(process.argv[2] || 4000)));
