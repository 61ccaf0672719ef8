// self_profiler: an in-process sampling profiler built only on perfscope's overflow signals.
//
// A task-clock event on the calling thread overflows after every millisecond of its CPU time.
// With sigtrap the kernel raises SIGTRAP in the sampled thread itself at each overflow, and the
// handler stores the interrupted instruction pointer into a preallocated array: no ring buffer,
// no second thread, nothing allocated while sampling. After a workload of two functions whose
// costs are 3:1 it prints where the samples fell, resolved with dladdr (the binary is linked with
// -rdynamic so that its own functions have dynamic symbols).
//
//   self_profiler [MILLION_ITERATIONS]   (default 300: about half a second of work)
#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/engine/overflow_signal.hpp"

namespace {

constexpr std::uint64_t sample_period_ns = 1'000'000;
constexpr std::uint64_t profiler_cookie = 0x5e1f9a0f11e5ULL;  // told back in si_perf_data
constexpr std::size_t max_samples = 1 << 16;

std::uintptr_t sample_pcs[max_samples];
std::atomic<std::size_t> sample_count{0};
std::atomic<std::size_t> foreign_traps{0};

void on_sample(int, siginfo_t* info, void* context) {
  perfscope::PerfTrap trap;
  if (!perfscope::decode_perf_trap(*info, trap) || trap.data != profiler_cookie) {
    foreign_traps.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::size_t slot = sample_count.fetch_add(1, std::memory_order_relaxed);
  if (slot < max_samples) sample_pcs[slot] = perfscope::interrupted_instruction_pointer(context);
}

// The loop body both workload functions inline, so that their cost is iterations alone. Their
// increments differ so that the compiler cannot fold the two functions into one.
template <std::uint64_t increment>
[[gnu::always_inline]] inline std::uint64_t spin(std::uint64_t iterations, std::uint64_t x) {
  for (std::uint64_t i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ULL + increment;
    asm volatile("" : "+r"(x));
  }
  return x;
}

std::string function_of(std::uintptr_t pc) {
  Dl_info info{};
  if (pc == 0 || ::dladdr(reinterpret_cast<void*>(pc), &info) == 0) return "[unknown]";
  if (info.dli_sname) return info.dli_sname;
  std::string object = info.dli_fname ? info.dli_fname : "?";
  // Appended, not "[" + name + "]": GCC 12's -O3 reports a false -Wrestrict in operator+.
  std::string name = "[";
  name.append(object, object.rfind('/') + 1).append("]");
  return name;
}

}  // namespace

extern "C" [[gnu::noinline]] std::uint64_t heavy_work(std::uint64_t iterations, std::uint64_t x) {
  return spin<1442695040888963407ULL>(iterations, x);
}

extern "C" [[gnu::noinline]] std::uint64_t light_work(std::uint64_t iterations, std::uint64_t x) {
  return spin<1013904223ULL>(iterations, x);
}

int main(int argc, char** argv) {
  std::uint64_t millions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 300;
  if (millions == 0) {
    std::fprintf(stderr, "usage: %s [MILLION_ITERATIONS > 0]\n", argv[0]);
    return 2;
  }

  struct sigaction action {};
  action.sa_sigaction = on_sample;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTRAP, &action, nullptr);

  perfscope::Event event;
  try {
    auto attr = perfscope::EventAttr::software(perfscope::abi::SoftwareEvent::task_clock)
                    .set_sample_period(sample_period_ns)
                    .count_user_only()
                    .set_flag(perfscope::abi::attr_flag::disabled);
    event = perfscope::Event::open(perfscope::with_sigtrap(attr, profiler_cookie), 0, -1);
  } catch (const perfscope::Error& error) {
    std::fprintf(stderr, "self_profiler: %s\n", error.what());
    return 1;
  }

  // Interleaved rounds: a change of clock speed during the run affects both functions alike.
  constexpr std::uint64_t rounds = 20;
  std::uint64_t light_iterations = millions * 1'000'000 / 4 / rounds;
  std::uint64_t x = 1;
  event.enable();
  for (std::uint64_t round = 0; round < rounds; ++round) {
    x = heavy_work(3 * light_iterations, x);
    x = light_work(light_iterations, x);
  }
  event.disable();
  event.close();

  std::size_t taken = std::min(sample_count.load(), max_samples);
  std::map<std::string, std::size_t> per_function;
  for (std::size_t i = 0; i < taken; ++i) ++per_function[function_of(sample_pcs[i])];
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& [name, count] : per_function) ranked.emplace_back(count, name);
  std::sort(ranked.rbegin(), ranked.rend());

  std::printf(
      "self_profiler: %zu samples, one per %.1f ms of task-clock, taken by SIGTRAP in "
      "the sampled thread (checksum %llx)\n",
      taken, static_cast<double>(sample_period_ns) / 1e6, static_cast<unsigned long long>(x));
  if (foreign_traps.load() != 0)
    std::printf("  (%zu other SIGTRAPs ignored)\n", foreign_traps.load());
  std::printf("  share  samples  function\n");
  for (const auto& [count, name] : ranked) {
    std::printf("%6.1f%% %8zu  %s\n",
                100.0 * static_cast<double>(count) / static_cast<double>(taken), count,
                name.c_str());
  }
  return taken > 0 ? 0 : 1;
}
