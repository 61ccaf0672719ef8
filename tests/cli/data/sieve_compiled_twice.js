// sieve_compiled_twice.js MS (node --allow-natives-syntax): sieve.js's sieve, optimized by
// TurboFan, run MS ms of CPU time, deoptimized, optimized again and run MS/2 ms: two code loads of one
// function, about 2:1.
const { sieve, run } = require('./sieve.js');
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
