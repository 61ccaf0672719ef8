// perfscope::Error: a std::system_error for setup failures that carries the errno, the attr that
// failed and a diagnosis in plain words that says what to change.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include "perfscope/core/event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

class PERFSCOPE_EXPORT Error : public std::system_error {
 public:
  Error(int errnum, std::string summary, std::string diagnosis = {},
        std::optional<EventAttr> attr = std::nullopt);

  int errnum() const noexcept { return code().value(); }
  const std::string& summary() const noexcept { return summary_; }
  const std::string& diagnosis() const noexcept { return diagnosis_; }
  const std::optional<EventAttr>& attr() const noexcept { return attr_; }
  // summary, diagnosis and the attr dump together, for -v output and logs.
  std::string detailed() const;
  // The summary and the diagnosis (std::system_error would append strerror after them).
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
  std::string summary_;
  std::string diagnosis_;
  std::optional<EventAttr> attr_;
};

// Where an open was attempted: enough to explain a failure.
struct OpenContext {
  pid_t pid = 0;
  int cpu = -1;
  int group_fd = -1;
  unsigned long flags = 0;
  std::string event_name;              // as the user wrote it, if known
  std::size_t group_size = 1;          // events in the group including this one
  std::uint32_t kernel_attr_size = 0;  // from E2BIG renegotiation
};

// The plain-words explanation of a perf_event_open(2) failure with its fix.
PERFSCOPE_EXPORT std::string diagnose_open_failure(int errnum, const EventAttr& attr,
                                                   const OpenContext& context);

// errno name such as "EACCES", for every errno the kernel returns (and its internal restart
// codes, ERESTARTSYS...); empty for numbers that are none.
PERFSCOPE_EXPORT std::string_view errno_name(int errnum) noexcept;
// errno_name, or "errno N" for a number that has none: every error is said by some name.
PERFSCOPE_EXPORT std::string errno_label(int errnum);

[[noreturn]] PERFSCOPE_EXPORT void throw_open_error(int errnum, const EventAttr& attr,
                                                    const OpenContext& context);

// Like perf: at kernel.perf_event_paranoid >= 2 an unprivileged user may count user space only.
// True when an open of a task (not CPU-wide) event that failed with EACCES/EPERM counted the
// kernel, the level is 2 or more and the process has neither CAP_PERFMON nor CAP_SYS_ADMIN: the
// same open with exclude_kernel and exclude_hv set is allowed. Sessions then retry that way and
// give user_space_only_notice().
PERFSCOPE_EXPORT bool user_space_only_fallback(int errnum, const EventAttr& attr,
                                               const OpenContext& context);
PERFSCOPE_EXPORT std::string user_space_only_notice();
// perf's label for an event the fallback made user-space only: a "u" modifier added to the name
// (cycles -> cycles:u, cycles:p -> cycles:pu, cpu/event=0x76/ -> cpu/event=0x76/u).
PERFSCOPE_EXPORT std::string user_space_only_name(std::string_view name);

// True when an open failed because this machine lacks the event (no such PMU, event or
// hardware: ENOENT, EOPNOTSUPP, ENODEV, ENXIO, ENOSYS, or EINVAL for hardware-type events),
// rather than because of its settings or privileges: callers asked to skip unsupported events
// (perf stat's "<not supported>") leave it out.
PERFSCOPE_EXPORT bool open_failure_means_unsupported(int errnum, const EventAttr& attr) noexcept;

}  // namespace perfscope
