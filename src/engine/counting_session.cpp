#include "perfscope/engine/counting_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/engine/target_units.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;
namespace rf = abi::read_format;

namespace {

constexpr std::uint64_t counting_read_format =
    rf::total_time_enabled | rf::total_time_running | rf::id | rf::group;

}  // namespace

CountingSession::CountingSession(std::vector<EventGroupSpec> groups, Target target,
                                 CountingOptions options)
    : groups_(std::move(groups)), target_(std::move(target)), options_(options) {
  std::size_t group_index = 0;
  for (const auto& group : groups_) {
    for (const auto& spec : group.events) {
      EventCount count;
      count.name = spec.name.empty() ? spec.text : spec.name;
      if (!spec.text.empty() && spec.text != spec.name) count.name = spec.text;
      count.group = group_index;
      count.scale = spec.scale;
      count.unit = spec.unit;
      counts_.push_back(std::move(count));
    }
    ++group_index;
  }
}

CountingSession::~CountingSession() { open_groups_.clear(); }

pid_t CountingSession::command_pid() const noexcept { return child_ ? child_->pid() : -1; }
double CountingSession::command_user_seconds() const noexcept {
  return child_ ? child_->user_seconds() : 0;
}
double CountingSession::command_system_seconds() const noexcept {
  return child_ ? child_->system_seconds() : 0;
}

std::size_t CountingSession::open_fd_count() const noexcept {
  std::size_t fds = 0;
  for (const auto& group : open_groups_) fds += group.events.size();
  return fds;
}

std::uint64_t CountingSession::read_format() const noexcept {
  return options_.identify_members ? counting_read_format : counting_read_format & ~rf::id;
}

EventAttr CountingSession::prepare_attr(const EventAttr& attr, bool leader) const {
  EventAttr prepared = attr;
  prepared.set_read_format(read_format());
  bool per_task =
      target_.kind() == Target::Kind::calling_thread || target_.kind() == Target::Kind::thread ||
      target_.kind() == Target::Kind::process || target_.kind() == Target::Kind::command;
  prepared.set_flag(flag::inherit, options_.inherit && per_task);
  prepared.set_flag(flag::disabled, leader);
  prepared.set_flag(flag::enable_on_exec,
                    leader && options_.enable_at_start && target_.kind() == Target::Kind::command);
  return prepared;
}

void CountingSession::open_group(const EventGroupSpec& group, std::size_t first_count,
                                 std::size_t unit_index) {
  const TargetUnit& unit = units_.units()[unit_index];
  OpenGroup open;
  open.unit = unit_index;
  for (std::size_t i = 0; i < group.events.size(); ++i) {
    EventCount& count = counts_[first_count + i];
    if (!count.supported) continue;  // failed on an earlier unit: same machine, same answer
    bool leader = open.events.empty();
    OpenSite site{unit.pid,   unit.cpu,
                  unit.flags, leader ? nullptr : &open.events[0],
                  count.name, open.events.size() + 1};
    OpenOutcome outcome = opener_.open(prepare_attr(group.events[i].attr, leader), site);
    if (outcome.status == OpenStatus::task_gone) return;  // the thread exited meanwhile
    if (outcome.status == OpenStatus::unsupported) {
      count.supported = false;
      count.open_errno = outcome.errnum;
      count.unsupported_reason = std::move(outcome.diagnosis);
      continue;
    }
    // A tracepoint's filter (stat --filter): the kernel counts only the hits it keeps.
    if (!group.events[i].filter.empty()) outcome.event.set_filter(group.events[i].filter);
    if (options_.identify_members) open.ids.push_back(outcome.event.id());
    open.count_index.push_back(first_count + i);
    open.events.push_back(std::move(outcome.event));
  }
  if (!open.events.empty()) open_groups_.push_back(std::move(open));
}

void CountingSession::open() {
  if (opened_) return;
  if (target_.has_command()) {
    child_ = std::make_unique<sys::GatedChild>(target_.argv());
    if (child_->pid() < 0) {
      throw Error(child_->error(),
                  fmt::format("cannot start '{}': {}", target_.argv().front(),
                              std::strerror(child_->error())),
                  "the system is out of processes or memory.");
    }
  }
  units_.resolve(target_, command_pid(), /*tasks_per_cpu=*/false);
  OpenerPolicy policy;
  policy.skip_unsupported = options_.skip_unsupported;
  policy.user_space_fallback = options_.user_space_when_restricted;
  policy.task_may_exit = target_.kind() == Target::Kind::process;
  opener_ = EventOpener(policy);
  // Out of descriptors: give back the ones held before explaining (the explanation, and
  // whatever prints it, may need one).
  opener_.on_descriptors_exhausted([this] { open_groups_.clear(); });
  opener_.reserve_descriptors(units_.units().size() * counts_.size());
  try {
    for (std::size_t unit = 0; unit < units_.units().size(); ++unit) {
      std::size_t first = 0;
      for (const auto& group : groups_) {
        open_group(group, first, unit);
        first += group.events.size();
      }
    }
  } catch (...) {
    if (child_) child_->abandon();
    throw;
  }
  if (target_.kind() == Target::Kind::process && open_groups_.empty() &&
      !sys::process_exists(target_.pid())) {
    throw Error(ESRCH,
                fmt::format("process {} exited before it could be attached to", target_.pid()));
  }
  // Named as perf names them: the label says what was counted.
  std::size_t index = 0;
  for (const auto& group : groups_) {
    for (const auto& spec : group.events) {
      EventCount& count = counts_[index++];
      count.name = opener_.label(count.name, spec.attr);
    }
  }
  std::size_t largest = 0;
  for (const auto& group : groups_) largest = std::max(largest, group.events.size());
  read_buffer_.assign(read_size_bytes(read_format(), largest) / sizeof(std::uint64_t), 0);
  sums_.assign(counts_.size(), Reading{});
  opened_ = true;
}

void CountingSession::start() {
  if (!opened_) open();
  if (options_.enable_at_start && target_.kind() != Target::Kind::command) enable();
  if (child_) {
    int exec_error = child_->release();
    if (exec_error != 0) {
      child_->wait();
      // execvp searches PATH only for a name without a slash.
      const std::string& program = target_.argv().front();
      bool searched_path = program.find('/') == std::string::npos;
      throw Error(exec_error,
                  fmt::format("cannot run '{}': {}", program, std::strerror(exec_error)),
                  exec_error != ENOENT ? "check that the file is an executable you may run."
                  : searched_path      ? "the command was not found in PATH; give its path."
                                       : "no such file: check the path.");
    }
  }
}

void CountingSession::enable() noexcept {
  for (auto& group : open_groups_) group.events[0].enable(true);
}

void CountingSession::stop() noexcept {
  for (auto& group : open_groups_) group.events[0].disable(true);
}

bool CountingSession::add_group_read(OpenGroup& group, Reading* out) noexcept {
  ssize_t bytes = group.events[0].read_words(read_buffer_);
  if (bytes <= 0) return false;
  // Decoded here rather than by decode_read(): the format is fixed (nr, time_enabled,
  // time_running, then value and, with identify_members, id per member), and this runs right
  // after the syscall, where every instruction shows in the cost of a read.
  const std::uint64_t* words = read_buffer_.data();
  std::size_t available = static_cast<std::size_t>(bytes) / sizeof(std::uint64_t);
  if (available < 3) return false;
  std::size_t stride = options_.identify_members ? 2 : 1;
  std::size_t members = std::min<std::size_t>(words[0], (available - 3) / stride);
  std::uint64_t enabled = words[1];
  std::uint64_t running = words[2];
  const std::uint64_t* member = words + 3;
  for (std::size_t m = 0; m < members; ++m, member += stride) {
    std::size_t index = m;
    if (stride == 2) {
      // The kernel lists members in the order they joined the group, the order of `ids`: look
      // there first, and search only when that is not the member (one could not be opened).
      std::uint64_t id = member[1];
      if (m >= group.ids.size() || group.ids[m] != id) {
        index = static_cast<std::size_t>(std::find(group.ids.begin(), group.ids.end(), id) -
                                         group.ids.begin());
      }
    }
    if (index >= group.count_index.size()) continue;
    Reading& sum = out[group.count_index[index]];
    sum.value += member[0];
    sum.enabled += enabled;
    sum.running += running;
  }
  return true;
}

const std::vector<EventCount>& CountingSession::read() noexcept {
  std::fill(sums_.begin(), sums_.end(), Reading{});
  for (auto& group : open_groups_) add_group_read(group, sums_.data());
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i].reading = sums_[i];
    counts_[i].scaled = scale(sums_[i]);
  }
  return counts_;
}

void CountingSession::read_unit(std::size_t unit, std::vector<Reading>& out) noexcept {
  out.assign(counts_.size(), Reading{});
  for (auto& group : open_groups_) {
    if (group.unit == unit) add_group_read(group, out.data());
  }
}

int CountingSession::wait_for_command() {
  if (!child_) throw Error(ECHILD, "the session has no command to wait for");
  int status = child_->wait();
  stop();
  if (status < 0) throw Error(-status, "waiting for the command failed");
  return status;
}

}  // namespace perfscope
