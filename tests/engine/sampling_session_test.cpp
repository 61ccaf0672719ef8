// Over 800 lines on purpose: every sampling mode of one class (watchpoints, tracepoints,
// overflow signals, lost accounting, clocks) against the same exact-count helpers below.
//
// SamplingSession and overflow signals against what the kernel makes exact: one sample per
// watchpoint hit and per tracepoint hit, one LOST count per sample that did not fit, one signal
// per overflow; bounds where a clock decides (cpu-clock at a frequency, context switches).
//
// This file is compiled with frame pointers and linked with -rdynamic: the callchain and register
// tests resolve sampled addresses to the functions below with dladdr1.
#include "perfscope/engine/sampling_session.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/overflow_signal.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/memory_map.hpp"
#include "support/test_support.hpp"

// Callchain and register tests sample these; C names so that dladdr finds them unmangled.
extern "C" {
__attribute__((noinline)) std::uint64_t perfscope_test_fp_leaf(std::uint64_t iterations);
__attribute__((noinline)) std::uint64_t perfscope_test_fp_caller(std::uint64_t iterations);
__attribute__((noinline, no_sanitize("address"))) void perfscope_test_write_with_canary(
    volatile std::uint64_t* target, std::uint64_t value, std::uintptr_t* canary_address);
}

namespace {

using perfscope::EventAttr;
using perfscope::EventGroupSpec;
using perfscope::EventSpec;
using perfscope::Record;
using perfscope::SamplingOptions;
using perfscope::SamplingSession;
using perfscope::SessionRecord;
using perfscope::Target;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;
namespace pt = perfscope::testing;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

constexpr std::uint64_t canary_value = 0x5ca1ab1e0ddba11fULL;

// Watched by the breakpoint tests; aligned so that an 8-byte watchpoint covers exactly it.
alignas(64) volatile std::uint64_t watched_word = 0;

pid_t thread_id() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Spins until this thread has used `seconds` of CPU time.
void burn_cpu(double seconds) {
  double start = thread_cpu_seconds();
  while (thread_cpu_seconds() - start < seconds) perfscope_test_fp_leaf(20000);
}

std::vector<EventGroupSpec> one_event(const EventAttr& attr, const std::string& name) {
  EventGroupSpec group;
  EventSpec spec;
  spec.text = name;
  spec.name = name;
  spec.attr = attr;
  group.events.push_back(spec);
  return {group};
}

// The calling thread with its own buffer, no task records: only what the test asks for.
SamplingOptions per_thread_options() {
  SamplingOptions options;
  options.inherit = false;
  options.track_tasks = false;
  return options;
}

// Decodes every record and hands it to a callback; counts what failed to decode.
class Recorder : public perfscope::RecordConsumer {
 public:
  using Callback = std::function<void(const SessionRecord&, const Record&)>;
  explicit Recorder(Callback callback) : callback_(std::move(callback)) {}
  void consume(const SessionRecord& session_record) override {
    Record record;
    perfscope::DecodeError error;
    if (!perfscope::decode_record(session_record.view, session_record.config, record, error)) {
      ++decode_errors;
      return;
    }
    callback_(session_record, record);
  }
  std::size_t decode_errors = 0;

 private:
  Callback callback_;
};

EventAttr watchpoint_attr(std::uint64_t extra_sample_type = 0) {
  return EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watched_word),
                               abi::breakpoint_length::len8, abi::breakpoint_type::write)
      .set_sample_period(1)
      .set_sample_type(sf::ip | sf::addr | extra_sample_type);
}

// Hardware watchpoints need debug registers, which not every hypervisor gives its guests.
std::string watchpoint_unavailable() {
  int errnum = 0;
  auto event = perfscope::Event::try_open(watchpoint_attr(), 0, -1, nullptr, 0, errnum);
  if (event.valid()) return perfscope::testing::hardware_breakpoints_problem();
  return std::string("cannot open a hardware watchpoint here: ") + std::strerror(errnum);
}

EventAttr software_attr(abi::SoftwareEvent event) { return EventAttr::software(event); }

// The [start, start + size) range of a function of this binary, from its dynamic symbol.
struct FunctionRange {
  std::uintptr_t start = 0, size = 0;
  bool contains(std::uint64_t address) const { return address >= start && address < start + size; }
};
std::optional<FunctionRange> function_range(const void* function) {
  Dl_info info{};
  void* extra = nullptr;
  if (::dladdr1(function, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr) {
    return std::nullopt;
  }
  const auto* symbol = static_cast<const ElfW(Sym)*>(extra);
  if (symbol->st_size == 0) return std::nullopt;
  return FunctionRange{reinterpret_cast<std::uintptr_t>(info.dli_saddr), symbol->st_size};
}

// A field's place in a tracepoint's RAW data, from its tracefs format file.
struct TracepointField {
  std::size_t offset = 0, size = 0;
};
std::optional<TracepointField> tracepoint_field(const std::string& format,
                                                const std::string& name) {
  std::string needle = " " + name + ";";
  auto at = format.find(needle);
  if (at == std::string::npos) return std::nullopt;
  auto offset_at = format.find("offset:", at);
  auto size_at = format.find("size:", at);
  if (offset_at == std::string::npos || size_at == std::string::npos) return std::nullopt;
  return TracepointField{std::stoul(format.substr(offset_at + 7)),
                         std::stoul(format.substr(size_at + 5))};
}

std::int64_t read_signed(std::span<const std::byte> raw, const TracepointField& field) {
  if (field.offset + field.size > raw.size()) return INT64_MIN;
  switch (field.size) {
    case 4: {
      std::int32_t value;
      std::memcpy(&value, raw.data() + field.offset, 4);
      return value;
    }
    case 8: {
      std::int64_t value;
      std::memcpy(&value, raw.data() + field.offset, 8);
      return value;
    }
    default: return INT64_MIN;
  }
}

// ---------------------------------------------------------------------------------------------

TEST(SamplingSessionTest, WatchpointGivesExactlyOneSamplePerWriteWithTheAddress) {
  if (auto why = watchpoint_unavailable(); !why.empty()) GTEST_SKIP() << why;
  constexpr std::uint64_t writes = 1000;
  SamplingSession session(one_event(watchpoint_attr(), "mem:watched_word:w"),
                          Target::calling_thread(), per_thread_options());
  session.start();
  for (std::uint64_t i = 0; i < writes; ++i) watched_word = i;
  session.stop();

  std::uint64_t samples = 0, at_address = 0, from_us = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    const auto* sample = std::get_if<perfscope::SampleRecord>(&record);
    if (!sample) return;
    ++samples;
    if (sample->addr == reinterpret_cast<std::uintptr_t>(&watched_word)) ++at_address;
    if (sample->pid == static_cast<std::uint32_t>(::getpid()) &&
        sample->tid == static_cast<std::uint32_t>(thread_id())) {
      ++from_us;
    }
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  EXPECT_EQ(samples, writes);
  EXPECT_EQ(at_address, writes);
  EXPECT_EQ(from_us, writes);
  EXPECT_EQ(session.buffer_count(), 1u);
  EXPECT_EQ(session.total_stats().samples, writes);
  EXPECT_EQ(session.total_stats().lost, 0u);
}

TEST(SamplingSessionTest, GetpidTracepointGivesOneSamplePerCallWithRawFields) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted and cannot be mounted";
  long long id = perfscope::tracepoint_id("syscalls", "sys_enter_getpid");
  if (id < 0) GTEST_SKIP() << "no syscalls:sys_enter_getpid tracepoint (CONFIG_FTRACE_SYSCALLS)";
  auto format = perfscope::sys::read_text_file(*perfscope::sys::tracefs_root() +
                                               "/events/syscalls/sys_enter_getpid/format");
  ASSERT_TRUE(format) << "the tracepoint has an id but no readable format file";
  auto common_pid = tracepoint_field(*format, "common_pid");
  auto syscall_nr = tracepoint_field(*format, "__syscall_nr");
  ASSERT_TRUE(common_pid && syscall_nr) << *format;

  constexpr std::uint64_t calls = 500;
  auto attr = EventAttr::tracepoint(static_cast<std::uint64_t>(id))
                  .set_sample_period(1)
                  .set_sample_type(sf::raw);
  SamplingSession session(one_event(attr, "syscalls:sys_enter_getpid"), Target::calling_thread(),
                          per_thread_options());
  session.start();
  for (std::uint64_t i = 0; i < calls; ++i) ::syscall(SYS_getpid);
  session.stop();

  std::uint64_t samples = 0, our_pid = 0, getpid_nr = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    const auto* sample = std::get_if<perfscope::SampleRecord>(&record);
    if (!sample) return;
    ++samples;
    if (read_signed(sample->raw, *common_pid) == ::getpid()) ++our_pid;
    if (read_signed(sample->raw, *syscall_nr) == SYS_getpid) ++getpid_nr;
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  EXPECT_EQ(samples, calls);
  EXPECT_EQ(our_pid, calls);
  EXPECT_EQ(getpid_nr, calls);
}

TEST(SamplingSessionTest, LaunchedCommandGivesCommMmap2ForkAndExitRecords) {
  auto attr = software_attr(abi::SoftwareEvent::dummy).set_sample_period(1);
  SamplingOptions options;  // inherit and task records: one buffer per CPU
  SamplingSession session(one_event(attr, "dummy"),
                          Target::command({work_helper, "fork-getpid", "10"}), options);
  session.open();
  pid_t command = session.command_pid();
  ASSERT_GT(command, 0);
  session.start();

  char resolved[PATH_MAX];
  ASSERT_NE(::realpath(work_helper.c_str(), resolved), nullptr);
  std::string binary = resolved;
  std::uint64_t exec_comms = 0, binary_maps = 0, libc_maps = 0;
  std::vector<std::uint32_t> fork_children, fork_parents;
  std::multiset<std::uint32_t> exits;
  Recorder recorder([&](const SessionRecord& session_record, const Record& record) {
    if (const auto* comm = std::get_if<perfscope::CommRecord>(&record)) {
      if (comm->exec && comm->pid == static_cast<std::uint32_t>(command) &&
          comm->comm == "work_helper") {
        ++exec_comms;
      }
    } else if (const auto* map = std::get_if<perfscope::Mmap2Record>(&record)) {
      if (map->pid != static_cast<std::uint32_t>(command)) return;
      if (map->filename == binary) ++binary_maps;
      std::string_view name = map->filename.substr(map->filename.rfind('/') + 1);
      if (name.starts_with("libc.so") || name.starts_with("libc-")) ++libc_maps;
    } else if (const auto* task = std::get_if<perfscope::TaskRecord>(&record)) {
      // FORK and EXIT share a layout: the header's type tells them apart.
      if (session_record.view.type() == static_cast<std::uint32_t>(abi::RecordType::fork)) {
        fork_children.push_back(task->pid);
        fork_parents.push_back(task->ppid);
      } else {
        exits.insert(task->pid);
      }
    }
  });
  for (int round = 0; round < 100 && !session.command_exited(); ++round)
    session.poll(recorder, 100);
  int status = session.wait_for_command();
  session.drain(recorder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(recorder.decode_errors, 0u);

  EXPECT_EQ(exec_comms, 1u);
  EXPECT_GE(binary_maps, 1u) << "no MMAP2 of " << binary;
  EXPECT_GE(libc_maps, 1u) << "no MMAP2 of libc";
  ASSERT_EQ(fork_children.size(), 1u);
  EXPECT_EQ(fork_parents[0], static_cast<std::uint32_t>(command));
  EXPECT_NE(fork_children[0], static_cast<std::uint32_t>(command));
  EXPECT_EQ(exits.count(static_cast<std::uint32_t>(command)), 1u);
  EXPECT_EQ(exits.count(fork_children[0]), 1u);
  EXPECT_EQ(exits.size(), 2u);
}

TEST(SamplingSessionTest, ContextSwitchesGiveSwitchOutAndInForEverySleep) {
  constexpr int sleeps = 20;
  auto attr = software_attr(abi::SoftwareEvent::dummy).set_sample_period(1);
  SamplingOptions options = per_thread_options();
  options.context_switches = true;
  SamplingSession session(one_event(attr, "dummy"), Target::calling_thread(), options);
  session.start();
  for (int i = 0; i < sleeps; ++i) {
    timespec pause{0, 2'000'000};
    ::nanosleep(&pause, nullptr);
  }
  session.stop();

  int outs = 0, voluntary_outs = 0, ins = 0, cpu_wide = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    const auto* change = std::get_if<perfscope::SwitchRecord>(&record);
    if (!change) return;
    if (change->cpu_wide) ++cpu_wide;
    if (change->out) {
      ++outs;
      if (!change->preempted) ++voluntary_outs;
    } else {
      ++ins;
    }
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  std::printf("%d sleeps: %d switch-outs (%d voluntary), %d switch-ins\n", sleeps, outs,
              voluntary_outs, ins);
  EXPECT_EQ(cpu_wide, 0) << "a per-thread event gives PERF_RECORD_SWITCH, not SWITCH_CPU_WIDE";
  // Enabled and disabled while running: every switch out is followed by a switch in.
  EXPECT_EQ(outs, ins);
  EXPECT_GE(voluntary_outs, sleeps);
  EXPECT_LE(voluntary_outs, sleeps + sleeps / 2);
}

TEST(SamplingSessionTest, CpuClockAtOneKilohertzGivesAThousandSamplesPerCpuSecond) {
  constexpr std::uint64_t frequency = 1000;
  auto max_rate = perfscope::sys::read_sysctl("perf_event_max_sample_rate");
  if (max_rate && *max_rate < static_cast<std::int64_t>(frequency)) {
    GTEST_SKIP() << "kernel.perf_event_max_sample_rate is " << *max_rate << " (< 1000)";
  }
  auto attr = software_attr(abi::SoftwareEvent::cpu_clock).set_sample_freq(frequency);
  attr.set_sample_type(sf::ip);
  SamplingSession session(one_event(attr, "cpu-clock"), Target::calling_thread(),
                          per_thread_options());
  auto wall_start = std::chrono::steady_clock::now();
  session.start();
  burn_cpu(1.0);
  session.stop();
  double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  std::uint64_t samples = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    if (std::holds_alternative<perfscope::SampleRecord>(record)) ++samples;
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  std::printf("cpu-clock at %llu Hz over 1 s of CPU: %llu samples\n",
              static_cast<unsigned long long>(frequency), static_cast<unsigned long long>(samples));
  EXPECT_GE(samples, frequency * 85 / 100);
  // cpu-clock also counts time the hypervisor stole, which the thread CPU clock leaves out:
  // the wall time around the burn bounds it.
  EXPECT_LE(static_cast<double>(samples), static_cast<double>(frequency) * wall_seconds * 1.15);
  EXPECT_EQ(session.total_stats().lost, 0u);
}

TEST(SamplingSessionTest, IdentifierIsSampledOnlyWhenSeveralEventsShareABuffer) {
  constexpr std::size_t pages = 64;
  auto faults = software_attr(abi::SoftwareEvent::page_faults_min).set_sample_period(1);
  faults.set_sample_type(sf::ip | sf::addr);
  auto clock = software_attr(abi::SoftwareEvent::cpu_clock).set_sample_period(100'000);
  clock.set_sample_type(sf::ip);
  auto groups = one_event(faults, "minor-faults");
  groups.push_back(one_event(clock, "cpu-clock").front());
  SamplingSession session(std::move(groups), Target::calling_thread(), per_thread_options());
  // One event: no IDENTIFIER (every record is its own), no CPU (a task target); perf's layout.
  SamplingSession single(one_event(faults, "minor-faults"), Target::calling_thread(),
                         per_thread_options());
  EXPECT_EQ(single.config(0).sample_type, sf::ip | sf::addr | sf::tid | sf::time);
  EXPECT_EQ(session.config(0).sample_type, sf::ip | sf::addr | sf::tid | sf::time | sf::identifier);
  EXPECT_EQ(session.config(1).sample_type, sf::ip | sf::tid | sf::time | sf::identifier);

  std::size_t length = pages * perfscope::sys::page_size();
  void* memory =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto begin = reinterpret_cast<std::uintptr_t>(memory);
  session.start();
  for (std::size_t page = 0; page < pages; ++page) {
    static_cast<volatile char*>(memory)[page * perfscope::sys::page_size()] = 1;
  }
  burn_cpu(0.02);
  session.stop();
  ::munmap(memory, length);

  std::uint64_t fault_samples_in_range = 0, clock_samples = 0, misattributed = 0;
  Recorder recorder([&](const SessionRecord& session_record, const Record& record) {
    const auto* sample = std::get_if<perfscope::SampleRecord>(&record);
    if (!sample) return;
    if (session_record.event == 0) {
      if (sample->addr >= begin && sample->addr < begin + length) ++fault_samples_in_range;
    } else if (session_record.event == 1) {
      ++clock_samples;
    } else {
      ++misattributed;
    }
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  EXPECT_EQ(misattributed, 0u);
  EXPECT_EQ(fault_samples_in_range, pages);  // each fresh page faults exactly once
  EXPECT_GE(clock_samples, 100u);            // 20 ms of CPU at a 100 us period: about 200
}

TEST(SamplingSessionTest, TinyBufferCountsEveryLostSample) {
  if (auto why = watchpoint_unavailable(); !why.empty()) GTEST_SKIP() << why;
  constexpr std::uint64_t writes = 1000;
  SamplingOptions options = per_thread_options();
  options.data_pages = 1;
  SamplingSession session(one_event(watchpoint_attr(), "mem:watched_word:w"),
                          Target::calling_thread(), options);
  session.start();
  for (std::uint64_t i = 0; i < writes; ++i) watched_word = i;
  std::uint64_t samples = 0, lost = 0, lost_records = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    if (std::holds_alternative<perfscope::SampleRecord>(record)) ++samples;
    if (const auto* loss = std::get_if<perfscope::LostRecord>(&record)) {
      ++lost_records;
      lost += loss->lost;
    }
  });
  session.drain(recorder);
  std::uint64_t samples_before = samples;
  // The kernel writes the LOST record only with the next record that fits: make one.
  watched_word = writes;
  session.stop();
  session.drain(recorder);

  EXPECT_EQ(recorder.decode_errors, 0u);
  EXPECT_LT(samples_before, writes) << "the buffer did not overflow";
  EXPECT_GE(lost_records, 1u);
  EXPECT_EQ(samples + lost, writes + 1) << "every write is either a sample or a lost one";
  auto stats = session.total_stats();
  EXPECT_EQ(stats.lost, lost);
  EXPECT_EQ(stats.lost_records, lost_records);
  EXPECT_EQ(stats.samples, samples);
  std::printf("tiny buffer: %llu samples delivered, %llu lost in %llu LOST records\n",
              static_cast<unsigned long long>(samples), static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(lost_records));
}

TEST(SamplingSessionTest, RecordsOfPerCpuBuffersAreMergedInTimeOrder) {
  auto cpus = perfscope::online_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two online CPUs, this machine has " << cpus.size();
  auto attr = software_attr(abi::SoftwareEvent::cpu_clock).set_sample_period(500'000);
  attr.set_sample_type(sf::ip);
  SamplingOptions options;  // inherit: one buffer per CPU, threads created later included
  options.track_tasks = false;
  SamplingSession session(one_event(attr, "cpu-clock"), Target::calling_thread(), options);
  session.start();
  std::vector<pid_t> tids(2);
  std::vector<int> pinned_ok(2, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[static_cast<std::size_t>(i)], &set);
      pinned_ok[static_cast<std::size_t>(i)] = ::sched_setaffinity(0, sizeof set, &set) == 0;
      tids[static_cast<std::size_t>(i)] = thread_id();
      burn_cpu(0.2);
    });
  }
  for (auto& thread : threads) thread.join();
  session.stop();
  ASSERT_TRUE(pinned_ok[0] && pinned_ok[1]) << "sched_setaffinity failed";

  std::uint64_t last_time = 0, out_of_order = 0, records = 0;
  std::map<std::size_t, std::uint64_t> samples_per_buffer;
  std::map<pid_t, std::map<std::uint32_t, std::uint64_t>> cpus_of_thread;  // samples per CPU
  Recorder recorder([&](const SessionRecord& session_record, const Record& record) {
    ++records;
    if (session_record.time != 0) {
      if (session_record.time < last_time) ++out_of_order;
      last_time = session_record.time;
    }
    if (const auto* sample = std::get_if<perfscope::SampleRecord>(&record)) {
      ++samples_per_buffer[session_record.buffer];
      EXPECT_EQ(sample->time, session_record.time);
      // A task target's samples carry no CPU field: the per-CPU buffer says which CPU.
      EXPECT_FALSE(session_record.config.has(sf::cpu));
      ASSERT_GE(session_record.cpu, 0);
      EXPECT_EQ(session_record.cpu, session.buffer_stats(session_record.buffer).cpu);
      ++cpus_of_thread[static_cast<pid_t>(sample->tid)]
                      [static_cast<std::uint32_t>(session_record.cpu)];
    }
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  for (const auto& [buffer, count] : samples_per_buffer) {
    std::printf("buffer %zu (CPU %d): %llu samples\n", buffer, session.buffer_stats(buffer).cpu,
                static_cast<unsigned long long>(count));
  }
  EXPECT_EQ(session.buffer_count(), cpus.size());
  EXPECT_EQ(out_of_order, 0u) << "of " << records << " records";
  EXPECT_GE(samples_per_buffer.size(), 2u) << "samples came from one buffer only";
  // Each thread's samples are in its CPU's buffer, but for the moment before its pin took hold
  // (a thread starts where its creator runs: on a loaded machine a sample or two fall there).
  for (int i = 0; i < 2; ++i) {
    auto pinned = static_cast<std::uint32_t>(cpus[static_cast<std::size_t>(i)]);
    std::uint64_t there = 0, elsewhere = 0;
    for (const auto& [cpu, count] : cpus_of_thread[tids[static_cast<std::size_t>(i)]]) {
      (cpu == pinned ? there : elsewhere) += count;
    }
    EXPECT_GE(there, 100u) << "thread " << i << " was pinned to CPU " << pinned;
    EXPECT_LE(elsewhere, 2u) << "thread " << i << " was pinned to CPU " << pinned;
  }
}

TEST(SamplingSessionTest, FramePointerCallchainsReturnIntoTheCaller) {
  auto leaf = function_range(reinterpret_cast<const void*>(&perfscope_test_fp_leaf));
  auto caller = function_range(reinterpret_cast<const void*>(&perfscope_test_fp_caller));
  ASSERT_TRUE(leaf && caller) << "dladdr1 found no symbol sizes: is the test linked -rdynamic?";

  auto attr = software_attr(abi::SoftwareEvent::cpu_clock).set_sample_period(100'000);
  attr.set_sample_type(sf::ip | sf::callchain).count_user_only();
  SamplingSession session(one_event(attr, "cpu-clock:u"), Target::calling_thread(),
                          per_thread_options());
  session.start();
  double start = thread_cpu_seconds();
  while (thread_cpu_seconds() - start < 0.3) perfscope_test_fp_caller(200'000);
  session.stop();

  std::uint64_t leaf_samples = 0, returns_into_caller = 0, user_marked = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    const auto* sample = std::get_if<perfscope::SampleRecord>(&record);
    if (!sample || !leaf->contains(sample->ip)) return;
    ++leaf_samples;
    bool user = false, found = false;
    for (std::uint64_t ip : sample->callchain) {
      if (ip == abi::callchain_context::user) {
        user = true;
        continue;
      }
      if (abi::callchain_context::is_marker(ip)) {
        user = false;
        continue;
      }
      if (user && caller->contains(ip)) found = true;
    }
    if (!sample->callchain.empty() && sample->callchain[0] == abi::callchain_context::user) {
      ++user_marked;
    }
    if (found) ++returns_into_caller;
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  std::printf("%llu leaf samples, %llu with the caller's return address\n",
              static_cast<unsigned long long>(leaf_samples),
              static_cast<unsigned long long>(returns_into_caller));
  ASSERT_GE(leaf_samples, 100u);
  EXPECT_EQ(user_marked, leaf_samples) << "a user-only callchain starts with PERF_CONTEXT_USER";
  // A sample on the leaf's first instruction, before it pushed its frame, skips the caller.
  EXPECT_GE(returns_into_caller * 100, leaf_samples * 95)
      << returns_into_caller << " of " << leaf_samples << " leaf samples";
}

TEST(SamplingSessionTest, UserRegistersAndStackMatchTheWritingThread) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "register numbers are those of x86-64 (perf_regs.h); not checked here";
#else
  if (auto why = watchpoint_unavailable(); !why.empty()) GTEST_SKIP() << why;
  constexpr unsigned reg_bp = 6, reg_sp = 7, reg_ip = 8;
  constexpr std::uint32_t stack_bytes = 8192;
  auto writer = function_range(reinterpret_cast<const void*>(&perfscope_test_write_with_canary));
  ASSERT_TRUE(writer) << "dladdr1 found no symbol size: is the test linked -rdynamic?";
  auto attr = watchpoint_attr(sf::regs_user | sf::stack_user)
                  .set_sample_regs_user((1ULL << reg_bp) | (1ULL << reg_sp) | (1ULL << reg_ip))
                  .set_sample_stack_user(stack_bytes);
  SamplingSession session(one_event(attr, "mem:watched_word:w"), Target::calling_thread(),
                          per_thread_options());
  session.start();
  std::uintptr_t canary_address = 0;
  perfscope_test_write_with_canary(&watched_word, 42, &canary_address);
  session.stop();

  int samples = 0;
  Recorder recorder([&](const SessionRecord&, const Record& record) {
    const auto* sample = std::get_if<perfscope::SampleRecord>(&record);
    if (!sample) return;
    ++samples;
    EXPECT_EQ(sample->tid, static_cast<std::uint32_t>(thread_id()));
    EXPECT_EQ(sample->regs_user.abi, static_cast<std::uint64_t>(abi::SampleRegsAbi::abi64));
    auto ip = sample->regs_user.value(reg_ip);
    auto sp = sample->regs_user.value(reg_sp);
    ASSERT_TRUE(ip && sp);
    EXPECT_EQ(*ip, sample->ip);
    EXPECT_TRUE(writer->contains(*ip)) << std::hex << *ip << " outside the writing function";
    // The canary lives in the writer's frame: at or above SP, inside the copied stack.
    ASSERT_LE(*sp, canary_address);
    std::uint64_t offset = canary_address - *sp;
    ASSERT_EQ(sample->stack_user.size(), stack_bytes);
    ASSERT_LT(offset + sizeof(std::uint64_t), sample->stack_user_dyn_size);
    std::uint64_t copied = 0;
    std::memcpy(&copied, sample->stack_user.data() + offset, sizeof copied);
    EXPECT_EQ(copied, canary_value) << "at SP+" << offset;
  });
  session.drain(recorder);
  EXPECT_EQ(recorder.decode_errors, 0u);
  EXPECT_EQ(samples, 1);
#endif
}

// ---------------------------------------------------------------------------------------------
// Overflow signals.

// Installs an SA_SIGINFO handler for the test's duration.
class ScopedHandler {
 public:
  ScopedHandler(int signal, void (*handler)(int, siginfo_t*, void*)) : signal_(signal) {
    struct sigaction action {};
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal_, &action, &previous_);
  }
  ~ScopedHandler() { ::sigaction(signal_, &previous_, nullptr); }
  ScopedHandler(const ScopedHandler&) = delete;
  ScopedHandler& operator=(const ScopedHandler&) = delete;

 private:
  int signal_;
  struct sigaction previous_ {};
};

std::atomic<int> overflow_signals{0};
std::atomic<int> overflow_last_fd{-1};
std::atomic<int> overflow_hang_ups{0};
std::atomic<int> overflow_wrong_thread{0};
std::atomic<pid_t> overflow_expected_thread{0};

void on_overflow(int, siginfo_t* info, void*) {
  perfscope::OverflowNotice notice;
  if (!perfscope::decode_overflow_notice(*info, notice)) return;
  overflow_signals.fetch_add(1);
  overflow_last_fd.store(notice.fd);
  if (notice.last) overflow_hang_ups.fetch_add(1);
  if (static_cast<pid_t>(::syscall(SYS_gettid)) != overflow_expected_thread.load()) {
    overflow_wrong_thread.fetch_add(1);
  }
}

void reset_overflow_counters() {
  overflow_signals = 0;
  overflow_last_fd = -1;
  overflow_hang_ups = 0;
  overflow_wrong_thread = 0;
  overflow_expected_thread = thread_id();
}

perfscope::Event open_task_clock_sampler(std::uint64_t period_ns) {
  auto attr = software_attr(abi::SoftwareEvent::task_clock).set_sample_period(period_ns);
  attr.set_flag(flag::disabled);
  return perfscope::Event::open(attr, 0, -1);
}

TEST(OverflowSignalTest, RoutedSignalArrivesOncePerOverflowOnTheThread) {
  reset_overflow_counters();
  ScopedHandler handler(SIGRTMIN, on_overflow);
  auto event = open_task_clock_sampler(1'000'000);
  perfscope::route_overflows(event, SIGRTMIN);
  auto wall_start = std::chrono::steady_clock::now();
  ASSERT_EQ(event.enable(), 0);
  burn_cpu(0.05);
  ASSERT_EQ(event.disable(), 0);
  double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
          .count();
  int signals = overflow_signals.load();
  std::printf("task-clock 1 ms over 50 ms of CPU: %d signals\n", signals);
  EXPECT_GE(signals, 25);
  // task-clock also runs while the host steals the vCPU: the wall time bounds it.
  EXPECT_LE(signals, std::max(75.0, wall_ms * 1.15 + 2));
  EXPECT_EQ(overflow_last_fd.load(), event.fd());
  EXPECT_EQ(overflow_hang_ups.load(), 0);
  EXPECT_EQ(overflow_wrong_thread.load(), 0);
}

TEST(OverflowSignalTest, RefreshArmsExactlyOneOverflowAtATime) {
  reset_overflow_counters();
  ScopedHandler handler(SIGRTMIN, on_overflow);
  auto event = open_task_clock_sampler(1'000'000);
  perfscope::route_overflows(event, SIGRTMIN);
  perfscope::arm_for_overflows(event, 1);
  burn_cpu(0.03);
  EXPECT_EQ(overflow_signals.load(), 1);
  EXPECT_EQ(overflow_hang_ups.load(), 1) << "the overflow that ends a refresh says POLL_HUP";
  // Disabled by the kernel: no further signals until re-armed.
  burn_cpu(0.02);
  EXPECT_EQ(overflow_signals.load(), 1);
  perfscope::arm_for_overflows(event, 1);
  burn_cpu(0.03);
  EXPECT_EQ(overflow_signals.load(), 2);
  EXPECT_EQ(overflow_hang_ups.load(), 2);
  EXPECT_EQ(overflow_wrong_thread.load(), 0);
}

TEST(OverflowSignalTest, RefreshOfAnInheritedEventIsRefusedWithAReason) {
  auto attr = software_attr(abi::SoftwareEvent::task_clock).set_sample_period(1'000'000);
  attr.set_flag(flag::disabled).set_flag(flag::inherit);
  auto event = perfscope::Event::open(attr, 0, -1);
  try {
    perfscope::arm_for_overflows(event, 1);
    FAIL() << "REFRESH of an inherited event succeeded";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_NE(error.diagnosis().find("inherit"), std::string::npos) << error.what();
  }
}

TEST(OverflowSignalTest, RoutingToAThreadThatDoesNotExistIsRefusedWithAReason) {
  auto event = open_task_clock_sampler(1'000'000);
  try {
    perfscope::route_overflows(event, SIGRTMIN, INT_MAX - 1);
    FAIL() << "routing to a nonexistent thread succeeded";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), ESRCH);
    EXPECT_FALSE(error.diagnosis().empty());
  }
}

constexpr std::uint64_t trap_sig_data = 0xfeed;
std::atomic<int> traps{0};
std::atomic<int> traps_not_perf{0};
std::atomic<int> traps_bad_fields{0};
std::atomic<int> traps_async{0};

void on_trap(int, siginfo_t* info, void*) {
  perfscope::PerfTrap trap;
  if (!perfscope::decode_perf_trap(*info, trap)) {
    traps_not_perf.fetch_add(1);
    return;
  }
  traps.fetch_add(1);
  if (trap.data != trap_sig_data ||
      trap.address != reinterpret_cast<std::uintptr_t>(&watched_word) ||
      trap.type != static_cast<std::uint32_t>(abi::EventType::breakpoint)) {
    traps_bad_fields.fetch_add(1);
  }
  if (trap.asynchronous()) traps_async.fetch_add(1);
}

TEST(OverflowSignalTest, SigtrapWatchpointRaisesOneTrapPerWriteWithItsData) {
  if (auto why = watchpoint_unavailable(); !why.empty()) GTEST_SKIP() << why;
  constexpr int writes = 100;
  traps = 0;
  traps_not_perf = 0;
  traps_bad_fields = 0;
  traps_async = 0;
  ScopedHandler handler(SIGTRAP, on_trap);
  auto attr = perfscope::with_sigtrap(watchpoint_attr(), trap_sig_data);
  EXPECT_TRUE(attr.has(flag::sigtrap) && attr.has(flag::remove_on_exec));
  EXPECT_EQ(attr.raw().sig_data, trap_sig_data);
  attr.set_flag(flag::disabled);
  auto event = perfscope::Event::open(attr, 0, -1);
  ASSERT_EQ(event.enable(), 0);
  for (int i = 0; i < writes; ++i) watched_word = static_cast<std::uint64_t>(i);
  ASSERT_EQ(event.disable(), 0);
  EXPECT_EQ(traps.load(), writes);
  EXPECT_EQ(traps_not_perf.load(), 0);
  EXPECT_EQ(traps_bad_fields.load(), 0)
      << "si_perf_data must be sig_data, si_addr the watched address, si_perf_type BREAKPOINT";
  EXPECT_EQ(traps_async.load(), 0);
}

TEST(OverflowSignalTest, PerfTrapDecoderReadsTheKernelsOffsets) {
  if (sizeof(void*) != 8) GTEST_SKIP() << "the offsets below are those of 64-bit siginfo";
  // A siginfo laid out as a 64-bit kernel writes it for TRAP_PERF: si_addr at 16, then
  // si_perf_data (unsigned long) at 24, si_perf_type at 32, si_perf_flags at 36.
  siginfo_t info{};
  info.si_signo = SIGTRAP;
  info.si_code = 6;
  info.si_addr = reinterpret_cast<void*>(0x1234);
  auto* bytes = reinterpret_cast<unsigned char*>(&info);
  std::uint64_t data = 0xabcdef;
  std::uint32_t type = 5, flags = 1;
  std::memcpy(bytes + 24, &data, sizeof data);
  std::memcpy(bytes + 32, &type, sizeof type);
  std::memcpy(bytes + 36, &flags, sizeof flags);
  perfscope::PerfTrap trap;
  ASSERT_TRUE(perfscope::decode_perf_trap(info, trap));
  EXPECT_EQ(trap.data, 0xabcdefu);
  EXPECT_EQ(trap.address, 0x1234u);
  EXPECT_EQ(trap.type, 5u);
  EXPECT_TRUE(trap.asynchronous());
  info.si_code = 4;  // TRAP_HWBKPT: a ptrace-style breakpoint, not perf's
  EXPECT_FALSE(perfscope::decode_perf_trap(info, trap));
}

TEST(OverflowSignalTest, SelfProfilerExampleSeesTheThreeToOneSplit) {
  auto result = pt::run_command({PERFSCOPE_SELF_PROFILER_PATH, "300"});
  ASSERT_EQ(result.exit_status, 0) << result.out << result.err;
  std::map<std::string, double> shares;
  std::size_t total = 0;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    double share = 0;
    std::size_t count = 0;
    char name[128] = {};
    if (std::sscanf(line.c_str(), " %lf%% %zu %127s", &share, &count, name) == 3) {
      shares[name] = share;
      total += count;
    }
  }
  std::printf("%s", result.out.c_str());
  EXPECT_GE(total, 150u) << result.out;
  EXPECT_GE(shares["heavy_work"], 60.0) << result.out;
  EXPECT_LE(shares["heavy_work"], 90.0) << result.out;
  EXPECT_GE(shares["light_work"], 10.0) << result.out;
  EXPECT_LE(shares["light_work"], 40.0) << result.out;
}

}  // namespace

// Frame-pointer functions (the file is built with -fno-omit-frame-pointer). g++ sets up no frame
// in a leaf function that needs no stack, whatever the flags: the leaf keeps its state in a
// volatile local so that it has a frame, as the callchain test needs.
extern "C" std::uint64_t perfscope_test_fp_leaf(std::uint64_t iterations) {
  volatile std::uint64_t state = iterations;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return state;
}

extern "C" std::uint64_t perfscope_test_fp_caller(std::uint64_t iterations) {
  std::uint64_t result = perfscope_test_fp_leaf(iterations);
  asm volatile("" : "+r"(result));  // keeps the call from becoming a tail call
  return result + 1;
}

// Not a leaf (it calls after the write), so its locals lie above SP and not in the red zone
// below it, which a user stack copy (starting at SP) would miss.
extern "C" void perfscope_test_write_with_canary(volatile std::uint64_t* target,
                                                 std::uint64_t value,
                                                 std::uintptr_t* canary_address) {
  volatile std::uint64_t canary = canary_value;
  *canary_address = reinterpret_cast<std::uintptr_t>(&canary);
  *target = value;
  perfscope_test_fp_leaf(1);
  canary = canary_value;  // the canary is live across the watched write
}
