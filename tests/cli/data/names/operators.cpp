// C++ names that perf shortens by libiberty's rules: conversion operators, operator templates
// of libstdc++, a functor, a stream operator, a lambda, a function in an anonymous namespace and
// a non-virtual thunk. Each does a share of the work; runs for argv[1] milliseconds.
#include <chrono>
#include <cstdlib>
#include <string>

#define NAMES_NOINLINE __attribute__((noinline))

volatile unsigned long long sink;

struct Big {
  unsigned long long value;
  NAMES_NOINLINE operator long long() const {
    unsigned long long x = value;
    for (int i = 0; i < 4000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<long long>(x);
  }
};

struct Accumulator {
  NAMES_NOINLINE unsigned long long operator()(unsigned long long x) const {
    for (int i = 0; i < 4000; ++i) x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL;
    return x;
  }
};

struct Sink {
  unsigned long long total = 0;
  NAMES_NOINLINE Sink& operator<<(unsigned long long x) {
    for (int i = 0; i < 4000; ++i) x = x * 3 + static_cast<unsigned long long>(i);
    total ^= x;
    return *this;
  }
};

struct First {
  virtual ~First() = default;
  virtual unsigned long long step(unsigned long long x) = 0;
};
struct Second {
  virtual ~Second() = default;
  virtual unsigned long long step(unsigned long long x) = 0;
};
struct Both : First, Second {
  NAMES_NOINLINE unsigned long long step(unsigned long long x) override {
    for (int i = 0; i < 4000; ++i) x = x * 31 + 7;
    return x;
  }
};

namespace {
NAMES_NOINLINE unsigned long long hidden(unsigned long long x) {
  for (int i = 0; i < 4000; ++i) x = (x << 1) ^ (x >> 3) ^ 0x5bd1e995ULL;
  return x;
}
}  // namespace

NAMES_NOINLINE std::string joined(const std::string& a, const std::string& b) { return a + b; }

int main(int argc, char** argv) {
  long milliseconds = argc > 1 ? std::atol(argv[1]) : 1000;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  Big big{3};
  Accumulator accumulate;
  Sink out;
  Both both;
  Second* second = &both;
  auto lambda = [](unsigned long long x) NAMES_NOINLINE {
    for (int i = 0; i < 4000; ++i) x = x * 5 + 11;
    return x;
  };
  std::string text(64, 'a');
  unsigned long long total = 0;
  while (std::chrono::steady_clock::now() < until) {
    total += static_cast<long long>(big);
    total += accumulate(total);
    out << total;
    total += second->step(total);
    total += lambda(total);
    total += hidden(total);
    for (int i = 0; i < 50; ++i) total += joined(text, text).size();
  }
  sink = total + out.total;
  return 0;
}
