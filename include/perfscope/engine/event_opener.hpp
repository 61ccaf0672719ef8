// EventOpener: the one place where perf events are opened with perf's fallbacks and diagnoses,
// for CountingSession, SamplingSession and (through CountingSession) the embedded Counters.
//
// What it decides, once per session:
//   - user space only: at kernel.perf_event_paranoid >= 2 without CAP_PERFMON, an open that
//     counted the kernel is retried with exclude_kernel/exclude_hv, and every later open of the
//     session excludes the kernel too (user_space_only_fallback, user_space_only_notice);
//   - PERF_FORMAT_LOST: refused with EINVAL before Linux 6.0, so the first open that asks for it
//     and fails that way is retried without it, and no later open asks for it;
//   - "not supported here" (ENOENT, EOPNOTSUPP, ENODEV, ENXIO, ENOSYS, EINVAL on hardware
//     events: open_failure_means_unsupported): reported, not thrown, when the caller skips those;
//   - a task that exited while a process was being attached to: reported, not thrown;
//   - out of file descriptors (EMFILE/ENFILE): the caller's descriptors are given back (the
//     release hook) before the error is thrown, so that whatever prints it has one;
//   - everything else: perfscope::Error with the diagnosis (throw_open_error).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"

namespace perfscope {

struct OpenerPolicy {
  // Report events this machine lacks as unsupported instead of throwing.
  bool skip_unsupported = true;
  // At perf_event_paranoid >= 2, count user space only instead of failing.
  bool user_space_fallback = true;
  // ESRCH is a thread that exited meanwhile (attaching to a process), not an error.
  bool task_may_exit = false;
};

// Where one event is opened.
struct OpenSite {
  pid_t pid = 0;
  int cpu = -1;
  unsigned long flags = 0;
  const Event* leader = nullptr;
  std::string_view name;       // as the user wrote it, for messages
  std::size_t group_size = 1;  // events in the group including this one
};

enum class OpenStatus : std::uint8_t {
  opened,
  unsupported,  // the machine lacks the event (only with skip_unsupported)
  task_gone,    // the thread exited before it could be attached to (only with task_may_exit)
};

struct OpenOutcome {
  OpenStatus status = OpenStatus::opened;
  Event event;            // valid when opened
  int errnum = 0;         // why not, otherwise
  std::string diagnosis;  // for unsupported: diagnose_open_failure's words
};

class EventOpener {
 public:
  explicit EventOpener(OpenerPolicy policy = {}) : policy_(policy) {}

  // Called before an EMFILE/ENFILE error is thrown: close what the caller holds.
  void on_descriptors_exhausted(std::function<void()> release) { release_ = std::move(release); }

  // Opens `attr` (as the caller prepared it; the opener adds exclude_kernel/exclude_hv once the
  // session is user space only and drops PERF_FORMAT_LOST once the kernel refused it). Throws
  // perfscope::Error for a failure the policy does not turn into an outcome.
  OpenOutcome open(const EventAttr& attr, const OpenSite& site);

  // The attr as the opener would open it now.
  EventAttr adjusted(EventAttr attr) const;

  // Every event opened since the first fallback excludes the kernel.
  bool user_space_only() const noexcept { return user_space_only_; }
  // PERF_FORMAT_LOST is accepted (false once a kernel before 6.0 refused it).
  bool lost_format() const noexcept { return lost_format_; }
  // perf's label for an event the session counts in user space only (cycles -> cycles:u), the
  // name unchanged otherwise or when the user's attr already excluded the kernel.
  std::string label(std::string_view name, const EventAttr& as_written) const;
  // What the fallbacks changed that the user should know, one sentence each.
  const std::vector<std::string>& notices() const noexcept { return notices_; }
  // Raises RLIMIT_NOFILE for `descriptors` events as perf does, with a notice when it did.
  void reserve_descriptors(std::size_t descriptors);

 private:
  OpenerPolicy policy_;
  std::function<void()> release_;
  std::vector<std::string> notices_;
  bool user_space_only_ = false;
  bool lost_format_ = true;
  bool any_opened_ = false;
};

}  // namespace perfscope
