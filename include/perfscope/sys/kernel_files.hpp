// Reads and writes of the procfs, sysfs and tracefs files that govern perf_event.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope::sys {

// Whole-file read; nullopt when it cannot be opened (errno is left set).
PERFSCOPE_EXPORT std::optional<std::string> read_text_file(const std::string& path);
// Like read_text_file, for paths taken from recordings: only a regular file is read (errno is
// ENODEV for a FIFO, device or terminal, which could block or never end).
PERFSCOPE_EXPORT std::optional<std::string> read_regular_file(const std::string& path);
// At most the first `max_bytes` of a file (for large procfs files such as /proc/kallsyms).
PERFSCOPE_EXPORT std::optional<std::string> read_text_file_head(const std::string& path,
                                                                std::size_t max_bytes);
// Integer file (first token); nullopt when absent or not a number.
PERFSCOPE_EXPORT std::optional<std::int64_t> read_integer_file(const std::string& path);
// Writes `text` to an existing file; returns 0 or -errno.
PERFSCOPE_EXPORT int write_text_file(const std::string& path, std::string_view text);

// Every perf-related sysctl of the manual, by the name of its /proc/sys/kernel file.
struct Sysctl {
  std::string_view name;
  std::string_view what;
};
// perf_event_paranoid, perf_event_max_sample_rate, perf_event_max_stack,
// perf_event_max_contexts_per_stack, perf_event_mlock_kb, perf_cpu_time_max_percent,
// perf_user_access (arm64), kptr_restrict and nmi_watchdog.
PERFSCOPE_EXPORT const std::vector<Sysctl>& perf_sysctls();
PERFSCOPE_EXPORT std::string sysctl_path(std::string_view name);
PERFSCOPE_EXPORT std::optional<std::int64_t> read_sysctl(std::string_view name);
PERFSCOPE_EXPORT int write_sysctl(std::string_view name, std::int64_t value);

// Switches for reading counters in user space without a system call. arm64:
// kernel.perf_user_access (0 off, 1 for events opened with config1 bit 1). x86:
// <pmu>/rdpmc in sysfs (0 never, 1 for tasks that have a perf event mapped, 2 any task).
PERFSCOPE_EXPORT std::optional<std::int64_t> perf_user_access();
PERFSCOPE_EXPORT int set_perf_user_access(bool enabled);
PERFSCOPE_EXPORT std::optional<std::int64_t> rdpmc_mode(std::string_view pmu = "cpu");
PERFSCOPE_EXPORT int set_rdpmc_mode(std::int64_t mode, std::string_view pmu = "cpu");

// sysfs: /sys/bus/event_source/devices
inline constexpr std::string_view pmu_devices_dir = "/sys/bus/event_source/devices";
PERFSCOPE_EXPORT std::vector<std::string> list_directory(const std::string& path);
// Whether a path names an existing file or directory (for sysfs attributes such as <pmu>/cpus).
PERFSCOPE_EXPORT bool path_exists(const std::string& path);

// CPUs: /sys/devices/system/cpu/{online,possible} as their kernel list strings ("0-3,8").
PERFSCOPE_EXPORT std::optional<std::string> online_cpu_list();
// Threads of a process from /proc/PID/task (empty when the process is gone).
PERFSCOPE_EXPORT std::vector<pid_t> list_threads(pid_t pid);
PERFSCOPE_EXPORT bool process_exists(pid_t pid);

// tracefs: the mount point, mounting it at /sys/kernel/tracing when it is not mounted and we may.
PERFSCOPE_EXPORT std::optional<std::string> tracefs_root();
// Where tracefs is mounted, whether or not this process may look inside (tracefs_root() finds
// only a readable one).
PERFSCOPE_EXPORT std::optional<std::string> tracefs_mount_point();
// The mount point of the cgroup v2 hierarchy, if any.
PERFSCOPE_EXPORT std::optional<std::string> cgroup2_root();
// Opens a directory (cgroup) as an O_RDONLY|O_CLOEXEC fd; returns fd or -errno.
PERFSCOPE_EXPORT int open_directory(const std::string& path) noexcept;
// Opens a regular file for reading; returns fd or -errno (-ENODEV when `path` is something else).
// Paths from recordings may name anything: a FIFO would block the open, a terminal or pipe
// (/proc/self/fd/0) the reads, a device would read forever.
PERFSCOPE_EXPORT int open_regular_file(const std::string& path) noexcept;

// Whether `path` exists and is no regular file (a device such as /dev/null, a FIFO): an output
// there is written in place, never renamed, replaced or given another mode.
PERFSCOPE_EXPORT bool is_special_file(const std::string& path) noexcept;

// Creates (or truncates) `path` with mode 0600 and closes it, so that a stream opened on it next
// writes a private file: outputs name the processes and code that were measured, so they are
// private like perf's. An existing regular file is set to 0600 (a device keeps its mode).
// Returns 0 or -errno.
PERFSCOPE_EXPORT int create_private_file(const std::string& path) noexcept;
// Creates `path` and its missing parents with mode 0700 (existing ones are left as they are).
// Returns 0 or -errno.
PERFSCOPE_EXPORT int create_private_directories(const std::string& path) noexcept;
// Replaces `path` with a file of mode 0600 holding `text`, through a temporary file in the same
// directory renamed over it, so that a reader never sees a partial file. Returns 0 or -errno.
PERFSCOPE_EXPORT int replace_private_file(const std::string& path, std::string_view text) noexcept;
// The size of a regular file; nullopt when there is none at `path`.
PERFSCOPE_EXPORT std::optional<std::uint64_t> regular_file_size(const std::string& path) noexcept;

// Resource limits relevant to perf: RLIMIT_NOFILE and RLIMIT_MEMLOCK (soft, hard).
struct Limit {
  std::uint64_t soft;
  std::uint64_t hard;
};
PERFSCOPE_EXPORT Limit open_files_limit();
PERFSCOPE_EXPORT Limit locked_memory_limit();
PERFSCOPE_EXPORT int raise_open_files_limit(std::uint64_t wanted) noexcept;

// Effective capabilities of this process (bit numbers as in capability(7)).
PERFSCOPE_EXPORT std::uint64_t effective_capabilities();
inline constexpr unsigned cap_sys_admin = 21;
inline constexpr unsigned cap_sys_ptrace = 19;
inline constexpr unsigned cap_perfmon = 38;
inline constexpr unsigned cap_syslog = 34;
inline constexpr unsigned cap_ipc_lock = 14;

}  // namespace perfscope::sys
