#include "record_summary.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace perfscope::cli {

void print_samples_line(const BufferStats& stats) {
  fmt::print(stderr,
             "[ perfscope record: {} samples, {} LOST records ({} records lost), {} lost samples, "
             "{} throttles ]\n",
             stats.samples, stats.lost_records, stats.lost, stats.lost_samples, stats.throttles);
}

// What became of the blocking intervals: written, left out below the threshold, cut by the
// recording's end, and the switches that went missing (lost with the records around them).
void print_off_cpu_summary(const OffCpuRecorder& recorder, const OffCpuCapability& capability,
                           std::uint64_t lost_records) {
  const OffCpuStats& off = recorder.stats();
  fmt::print(stderr,
             "[ perfscope record: off-CPU ({}{}): {} intervals written ({:.3f} s blocked), {} "
             "below --off-cpu-thresh left out ({:.3f} s), {} still blocked at the end ]\n",
             off_cpu_method_name(capability.method),
             capability.method == OffCpuMethod::switch_records ? ", no stacks" : ", with stacks",
             off.written, static_cast<double>(off.written_ns) / 1e9, off.below_threshold,
             static_cast<double>(off.below_threshold_ns) / 1e9, off.still_blocked);
  if (off.before_recording != 0) {
    fmt::print(stderr,
               "perfscope: note: off-CPU: {} thread{} already blocked when the recording began: "
               "that time before {} first switch-in is not in the profile\n",
               off.before_recording, off.before_recording == 1 ? " was" : "s were",
               off.before_recording == 1 ? "its" : "their");
  }
  if (off.lost_switch_ins != 0) {
    // Some kernels (6.18 under KVM) leave switches out with nothing lost: no buffer helps then.
    fmt::print(stderr,
               "perfscope: warning: off-CPU: {} switch-in{} never came ({}): the interval{} before "
               "{} left out{}\n",
               off.lost_switch_ins, off.lost_switch_ins == 1 ? "" : "s",
               lost_records != 0 ? "lost with the records the kernel dropped"
                                 : "the kernel did not report them; no record was lost",
               off.lost_switch_ins == 1 ? "" : "s",
               off.lost_switch_ins == 1 ? "it was" : "them were",
               lost_records != 0 ? "; raise --mmap-pages or use --off-cpu-every N" : "");
  }
}

// How the user stacks were completed while recording (-g, --call-graph dwarf).
void print_stack_summary(const StackCompletionSink& completion) {
  const StackCompletionStatistics& stacks = completion.statistics();
  auto share = [](std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  };
  if (completion.mode() == StackCompletion::unwind_dwarf) {
    fmt::print(stderr,
               "[ perfscope record: stacks: {} samples unwound while recording ({:.1f} % reach a "
               "thread's first frame), {} kept their stack copies ]\n",
               stacks.completed, share(stacks.reached_start, stacks.completed), stacks.kept);
  } else {
    fmt::print(stderr,
               "[ perfscope record: stacks: frame pointers; callers the walk skipped recovered "
               "in {} of {} samples ({} frames; {}-byte stack copies) ]\n",
               stacks.gaps_filled, stacks.samples, stacks.frames_inserted, stacks.stack_copy_bytes);
  }
  if (completion.passed_behind() != 0) {
    std::uint64_t shed = completion.shed(), backlog = completion.passed_behind() - shed;
    std::string why;
    if (shed != 0) {
      why = fmt::format(
          "{} while the buffers filled faster than they were read (stacks are "
          "left for later so that no record is lost)",
          shed);
    }
    if (backlog != 0) {
      why +=
          fmt::format("{}{} while the unwinding was {} MB behind the buffers",
                      why.empty() ? "" : ", ", backlog, StackCompletionSink::backlog_bound >> 20);
    }
    fmt::print(stderr,
               "perfscope: note: {} samples were written without completing their stacks: {}; "
               "{}\n",
               completion.passed_behind(), why,
               completion.mode() == StackCompletion::unwind_dwarf
                   ? "they kept their stack copies, and report unwinds them"
                   : "they have the kernel's frame-pointer chains, as perf record -g writes "
                     "them (a lower -F leaves time to recover the callers those skip)");
  }
}

}  // namespace perfscope::cli
