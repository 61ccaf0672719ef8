// Profile: a recording read once, symbolized and aggregated into the shape every output wants:
// interned DSOs, functions and frames, a table of stacks shared by prefix (each node names its
// caller), and one compact entry per sample. `perfscope report` and every exporter (folded,
// speedscope, Firefox Profiler, pprof, JSON, SVG) read a Profile; nothing re-reads the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/profile/sample_timeline.hpp"
#include "perfscope/analysis/profile/stack_sources.hpp"
#include "perfscope/analysis/recording/off_cpu_state.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/analysis/unwinding/dwarf_unwinder.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

inline constexpr std::uint32_t no_index = 0xffffffffu;

struct ProfileDso {
  std::string path;      // as recorded ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel.kallsyms]")
  std::string build_id;  // lower-case hex; empty when unknown
  bool kernel = false;
};

struct ProfileFunction {
  // The demangled name; for an unresolved address perf's spelling of it: the address relative
  // to its DSO in hex, as perf prints it ("0x0000000000001139"), or "[unknown]" when not even the
  // DSO is known.
  std::string name;
  std::uint32_t dso = no_index;  // into Profile::dsos; no_index when unknown
  bool resolved = false;
  // Where the function starts in its DSO (as ProfileFrame::dso_address counts); for an unresolved
  // one its address, for an inlined one 0. perf orders equal branches of a call tree by it.
  std::uint64_t start = 0;
};

// One place in the code: an address and, with inline frames, one of the calls inlined there.
struct ProfileFrame {
  std::uint32_t function = 0;     // into Profile::functions
  std::uint64_t address = 0;      // the sampled or return address, as recorded
  std::uint64_t dso_address = 0;  // the address inside its DSO (file-relative, as perf prints)
  std::string source_file;        // with source lines; empty otherwise
  std::uint32_t line = 0;
  bool inlined = false;  // a call the compiler inlined at `address` (not a real frame)
  bool kernel = false;
  // Into Profile::mappings: the mapping the address was found in when a sample first hit it;
  // no_index when the recording mapped nothing there (or the kernel frame is in a module).
  std::uint32_t mapping = no_index;
};

// A range of a file mapped into a process (or into the kernel, for every process), as the
// recording's MMAP records had it when a sample first hit it. Frames point here; pprof's mappings
// and the Firefox Profiler's libraries are made of these.
struct ProfileMapping {
  std::uint32_t pid = no_index;      // no_index: the kernel's
  std::uint32_t dso = no_index;      // into Profile::dsos
  std::uint64_t start = 0, end = 0;  // [start, end) in the address space
  std::uint64_t pgoff = 0;           // the file offset (or for the kernel, perf's anchor) at start
};

// A node of the stack table: `frame` called from the stack `parent` (no_index: the outermost).
struct ProfileStack {
  std::uint32_t parent = no_index;
  std::uint32_t frame = 0;
};

struct ProfileThread {
  std::uint32_t pid = 0, tid = 0;
  std::string comm;  // the command name when the thread's first sample was taken
};

struct ProfileEvent {
  std::string name;
  std::uint64_t samples = 0;
  std::uint64_t period = 0;     // the sum of sample periods (weights)
  bool has_callchains = false;  // PERF_SAMPLE_CALLCHAIN or dwarf stacks
  // Before the comm/pid/tid/dso/symbol filters: perf's percentages of a filtered report are
  // shares of everything the event recorded.
  std::uint64_t period_read = 0;
  // Off-CPU samples ("offcpu-time"): each one blocking interval, its period the blocked time in
  // nanoseconds, its stack where the thread blocked, its state why (ProfileSample::state).
  bool off_cpu = false;
  std::uint64_t samples_read = 0;  // the samples of period_read (perf's "Samples: N")
};

struct ProfileSample {
  std::uint32_t stack = no_index;  // the leaf's node in Profile::stacks
  std::uint32_t thread = 0;
  std::uint32_t event = 0;
  std::uint32_t cpu = no_index;  // no_index when the recording has no CPU field
  std::uint64_t time = 0;        // of an off-CPU sample: the end of the interval (its switch-in)
  std::uint64_t period = 1;
  ThreadState state = ThreadState::on_cpu;  // why an off-CPU sample's thread was off the CPU
};

// Samples folded by everything but their time: how many, and their summed period. A profile
// built with ProfileOptions::keep_samples false holds these in place of its samples.
struct ProfileSampleGroup {
  std::uint32_t stack = no_index;
  std::uint32_t thread = 0;
  std::uint32_t event = 0;
  std::uint32_t cpu = no_index;
  std::uint64_t samples = 0;
  std::uint64_t period = 0;
  ThreadState state = ThreadState::on_cpu;
};

struct ProfileSummary {
  std::uint64_t samples = 0;       // kept (after filters)
  std::uint64_t samples_read = 0;  // before filters
  std::uint64_t lost = 0;          // records the kernel dropped (PERF_RECORD_LOST)
  std::uint64_t lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES
  std::uint64_t throttle = 0, unthrottle = 0;
  bool dwarf_unwinding = false;
  UnwindStatistics unwinding;
  // Where the samples' user stacks came from, and of the samples with call chains how many
  // reach a thread's first frame (_start, clone, clone3, start_thread; ret_from_fork in the
  // kernel): how complete the stacks are.
  StackSources stack_sources;
  std::uint64_t stacks_walked = 0, stacks_reaching_start = 0;
  std::uint64_t first_time = 0, last_time = 0;  // of the samples, ns
  // From the recording's CLOCK_DATA: the clock of the sample times (a clockid_t) and the
  // wall-clock time (CLOCK_REALTIME, ns since the epoch) at time 0 of that clock, so that sample
  // time t happened at wall_clock_ns + t. Unknown for recordings without it (perf record without
  // -k, which also leaves its times on the kernel's perf_clock).
  std::optional<std::int32_t> clockid;
  std::optional<std::uint64_t> wall_clock_ns;
  std::string hostname, os_release, arch, cpu_description, command_line;
  std::vector<std::string> warnings;  // from the reader and the symbolizer, each once
  std::vector<std::string> notes;     // information, not warnings (Symbolizer::notes)
  // The recording was read only up to an error (partial_data_warning's text, also among the
  // warnings); empty when it was read whole.
  std::string partial_data;
  // The files the samples needed that were not found or were of another build: their frames
  // are unresolved (or named from another build). Exports say so (gecko meta, speedscope).
  std::vector<MissingSymbolFile> missing_files;
};

struct Profile {
  std::vector<ProfileDso> dsos;
  std::vector<ProfileFunction> functions;
  std::vector<ProfileFrame> frames;
  std::vector<ProfileStack> stacks;
  std::vector<ProfileThread> threads;
  std::vector<ProfileEvent> events;
  std::vector<ProfileSample> samples;
  std::vector<ProfileMapping> mappings;
  ProfileSummary summary;
  // Empty unless built with ProfileOptions::keep_samples false: then the samples, folded.
  std::vector<ProfileSampleGroup> sample_groups;
  // Built with ProfileOptions::keep_sample_times (and keep_samples false): each sample in order
  // as its group (into sample_groups), time and period.
  SampleTimeline timeline;

  // The frames of a stack, leaf first (the sampled function, then its callers).
  template <typename Visit>
  void for_each_frame(std::uint32_t stack, Visit&& visit) const {
    for (; stack != no_index; stack = stacks[stack].parent) visit(frames[stacks[stack].frame]);
  }
};

}  // namespace perfscope
