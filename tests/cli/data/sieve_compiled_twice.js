// sieve_compiled_twice.js MS (node --allow-natives-syntax): sieve, optimized by TurboFan, run MS ms,
// deoptimized, optimized again and run MS/2 ms: two code loads of one function, about 2:1.
function sieve(n) {
  const composite = new Uint8Array(n + 1);
  let count = 0;
  for (let i = 2; i <= n; i++) {
    if (!composite[i]) { count++; for (let j = i * i; j <= n; j += i) composite[j] = 1; }
  }
  return count;
}
function run(ms) {
  let total = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) total += sieve(100000);
  return total;
}
const ms = Number(process.argv[2] || 400);
%PrepareFunctionForOptimization(sieve);
sieve(1000);
%OptimizeFunctionOnNextCall(sieve);
sieve(1000);
run(ms);
%DeoptimizeFunction(sieve);
%PrepareFunctionForOptimization(sieve);
sieve(1000);
%OptimizeFunctionOnNextCall(sieve);
sieve(1000);
console.log(run(ms / 2));
