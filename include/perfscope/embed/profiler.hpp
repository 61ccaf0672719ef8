// Profiler: a sampling profiler of the calling program, from inside it. start() and stop() around
// a region; the samples are symbolized in-process and the profile written in any exporter format
// (folded stacks, speedscope, Firefox Profiler, pprof, JSON, SVG flame graph).
//
// It links perfscope::analysis (ELF/DWARF symbols), not only perfscope::perfscope. Defaults work
// unprivileged at perf_event_paranoid 2: the events then sample user space only (exclude_kernel,
// said in notices(); kernel frames are absent), and each ring buffer is 64 pages (256 KiB), well
// inside the kernel's per-user mlock allowance. A background thread drains the buffers as they
// fill, so that only a workload outrunning it loses samples, and every loss is counted in
// stats() and in the profile's summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

enum class ProfilerScope : std::uint8_t {
  calling_thread,  // the thread that calls start(), without threads it creates later
  process,         // every thread of the process: those it has at start() and those created later
};

enum class ProfilerCallGraph : std::uint8_t {
  frame_pointers,  // the kernel walks the frame-pointer chain (build with -fno-omit-frame-pointer)
  dwarf,           // copies of the user stack unwound with the binaries' CFI (no frame pointers
                   // needed; each sample carries dwarf_stack_size bytes, so the buffers fill fast)
  none,            // the sampled function alone
};

struct PERFSCOPE_EXPORT ProfilerOptions {
  // Events to sample in the CLI's grammar. Empty: cycles, or cpu-clock where no PMU can sample
  // cycles (a VM without one), which notices() says.
  std::string events;
  // Samples per second of each thread's running time, for events whose string gives no period or
  // frequency. Above kernel.perf_event_max_sample_rate it is lowered to that rate (a notice).
  std::uint64_t frequency = 4000;
  std::uint64_t period = 0;  // sample every `period` events instead; 0: use the frequency
  ProfilerCallGraph call_graph = ProfilerCallGraph::frame_pointers;
  std::uint32_t dwarf_stack_size = 8192;  // bytes of user stack per sample (multiple of 8)
  ProfilerScope scope = ProfilerScope::calling_thread;
  // Data pages of each ring buffer (a power of two): one buffer for the calling thread, one per
  // CPU for the process.
  std::size_t buffer_pages = 64;
  // Symbolization (source lines, inline frames, demangling) and filters of the profile.
  ProfileOptions profile;
};

// What the kernel delivered and dropped during the last start()/stop().
struct ProfilerStats {
  std::uint64_t samples = 0;       // samples read from the buffers
  std::uint64_t lost_records = 0;  // PERF_RECORD_LOST records ...
  std::uint64_t lost = 0;  // ... and the records they (and the kernel's count) say were lost
  std::uint64_t lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES totals
  std::uint64_t throttles = 0;     // the kernel lowered the rate (sampling took too long)
  // Samples left out of the profile: those that user-space-only events took in kernel code
  // (skid into a system call) where kernel addresses are hidden, and those of the profiler's own
  // drain thread (process scope).
  std::uint64_t kernel_samples_left_out = 0;
  std::uint64_t drain_thread_samples = 0;
  std::uint64_t wakeups = 0;  // times the drain thread emptied the buffers
};

class PERFSCOPE_EXPORT Profiler {
 public:
  // Parses the events (perfscope::EventSpecError on a malformed string) and checks the options
  // (std::invalid_argument); nothing is opened before start() but a probe of the cycles counter
  // when no events are given.
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler();  // stops a running profile
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Opens the events on the calling thread (or every thread of the process), records the
  // process's current mappings and threads, and starts sampling and the drain thread. Each
  // start() begins a new profile. perfscope::Error (with the diagnosis) when the events cannot
  // be opened; std::logic_error when the profiler is already running.
  void start();
  // Stops sampling, drains what is left, closes the events and finishes the profile.
  // std::logic_error when the profiler is not running.
  void stop();
  bool running() const noexcept { return running_; }

  // The profile of the last start()/stop(); std::logic_error before the first stop().
  const Profile& profile() const;
  void write(std::ostream& out, ExportFormat format) const;
  // Writes the file (perfscope::Error when it cannot be created or written).
  void write_file(const std::string& path, ExportFormat format) const;

  const ProfilerStats& stats() const noexcept { return stats_; }
  // The events as sampled ("cycles", or "cpu-clock" after the fallback).
  const std::string& events() const noexcept { return events_; }
  std::uint64_t frequency() const noexcept { return options_.frequency; }
  // What the user should know about what is sampled ("sampling user space only: ..."), one
  // sentence each; empty when everything is sampled as asked.
  const std::vector<std::string>& notices() const noexcept { return notices_; }

 private:
  struct Run;

  void configure_sampling(EventSpec& spec);

  ProfilerOptions options_;
  std::string events_;
  std::vector<EventGroupSpec> groups_;  // parsed, with the sampling settings
  bool dwarf_ = false;                  // some event copies user stacks
  std::vector<std::string> notices_;
  std::size_t base_notices_ = 0;  // notices of the constructor; start() adds the session's
  std::unique_ptr<Run> run_;
  bool running_ = false;
  bool finished_ = false;
  Profile profile_;
  ProfilerStats stats_;
};

// Profiles the enclosing scope: start() at construction, stop() at destruction.
class ScopedProfile {
 public:
  explicit ScopedProfile(Profiler& profiler) : profiler_(profiler) { profiler_.start(); }
  ~ScopedProfile() {
    if (profiler_.running()) profiler_.stop();
  }
  ScopedProfile(const ScopedProfile&) = delete;
  ScopedProfile& operator=(const ScopedProfile&) = delete;

 private:
  Profiler& profiler_;
};

}  // namespace perfscope
