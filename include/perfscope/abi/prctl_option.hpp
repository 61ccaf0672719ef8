// prctl(2) options that act on every perf event attached to the calling process.
#pragma once

namespace perfscope::abi {
inline constexpr int pr_task_perf_events_disable = 31;
inline constexpr int pr_task_perf_events_enable = 32;
}  // namespace perfscope::abi
