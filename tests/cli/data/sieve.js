// sieve.js [MS]: sieve(), the hot JS function, run for MS ms (default 4000) of wall-clock time,
// at least as much of this process's CPU time, and at least twenty times the CPU time node's
// start took: sieve() is then about nine tenths of the main thread's samples however busy the
// machine is and however long node's start took (a loaded CI machine once spent 1.4 s of CPU in
// it, a loaded make test 3.5 s, when six times made sieve() 74.8 % of the samples). The clocks
// are read once per ten calls: reading them after each call was a tenth of that run. Run as a
// program, it writes its pid (its main thread's tid) to sieve.pid in the working directory: the
// tests count the main thread's samples, not those of node's compiler and GC threads. Also a module:
// sieve_compiled_twice.js requires it and runs it for given times.
// One buffer for every call, cleared by sieve() itself: no allocation, so no garbage collector,
// page clearing or memset (which a loaded machine once made 44 % of the samples).
// TurboFan may inline sieve() into run()'s loop, which then holds its samples (a make test once
// drew 57 % in run, 36 % in sieve): sieve() stays a function of its own, as the tests name it.
require('v8').setFlagsFromString('--no-turbo-inlining');
let composite = new Uint8Array(200001);
function sieve(n) {
  if (composite.length < n + 1) composite = new Uint8Array(n + 1);
  for (let i = 0; i <= n; i++) composite[i] = 0;
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
function run(ms, outweigh_start = false) {
  let total = 0;
  const start = cpu_ms();  // node's start, when called first
  const wall_end = Date.now() + ms;
  // At most 40 s of CPU however long the start took (a loaded make test once took 8 s to start,
  // and twenty times that ran the test for five minutes).
  const cpu_end = start + (outweigh_start ? Math.min(Math.max(ms, 20 * start), 40000) : ms);
  while (Date.now() < wall_end || cpu_ms() < cpu_end) {
    for (let i = 0; i < 10; i++) total += sieve(200000);
  }
  return total;
}
module.exports = { sieve, run };
if (require.main === module) {
  require('fs').writeFileSync('sieve.pid', String(process.pid));
  console.log(run(Number(process.argv[2] || 4000), true));
}
