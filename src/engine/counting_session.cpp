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

EventAttr CountingSession::prepare_attr(const EventAttr& attr, bool leader) const {
  EventAttr prepared = attr;
  prepared.set_read_format(counting_read_format);
  bool per_task =
      target_.kind() == Target::Kind::calling_thread || target_.kind() == Target::Kind::thread ||
      target_.kind() == Target::Kind::process || target_.kind() == Target::Kind::command;
  prepared.set_flag(flag::inherit, options_.inherit && per_task);
  prepared.set_flag(flag::disabled, leader);
  prepared.set_flag(flag::enable_on_exec, leader && target_.kind() == Target::Kind::command);
  if (user_space_only_) prepared.set_flag(flag::exclude_kernel).set_flag(flag::exclude_hv);
  return prepared;
}

void CountingSession::open_group(const EventGroupSpec& group, std::size_t first_count,
                                 const TargetUnit& unit) {
  OpenGroup open;
  for (std::size_t i = 0; i < group.events.size(); ++i) {
    EventCount& count = counts_[first_count + i];
    if (!count.supported) continue;  // failed on an earlier unit: same machine, same answer
    const EventSpec& spec = group.events[i];
    bool leader = open.events.empty();
    EventAttr attr = prepare_attr(spec.attr, leader);
    int errnum = 0;
    Event event = Event::try_open(attr, unit.pid, unit.cpu, leader ? nullptr : &open.events[0],
                                  unit.flags, errnum);
    OpenContext where;
    where.pid = unit.pid;
    where.cpu = unit.cpu;
    where.flags = unit.flags;
    if (!event.valid() && !user_space_only_ && user_space_only_fallback(errnum, attr, where)) {
      user_space_only_ = true;
      notices_.push_back(user_space_only_notice());
      attr = prepare_attr(spec.attr, leader);
      event = Event::try_open(attr, unit.pid, unit.cpu, leader ? nullptr : &open.events[0],
                              unit.flags, errnum);
    }
    if (!event.valid()) {
      if (errnum == ESRCH && target_.kind() == Target::Kind::process) return;  // thread exited
      OpenContext context;
      context.pid = unit.pid;
      context.cpu = unit.cpu;
      context.group_fd = leader ? -1 : open.events[0].fd();
      context.flags = unit.flags;
      context.event_name = count.name;
      context.group_size = open.events.size() + 1;
      context.kernel_attr_size = event.kernel_attr_size();
      if (options_.skip_unsupported && open_failure_means_unsupported(errnum, attr)) {
        count.supported = false;
        count.open_errno = errnum;
        count.unsupported_reason = diagnose_open_failure(errnum, attr, context);
        continue;
      }
      if (errnum == EMFILE || errnum == ENFILE) {
        // Out of descriptors: give back the ones held before explaining (the explanation, and
        // whatever prints it, may need one).
        open.events.clear();
        open_groups_.clear();
      }
      throw_open_error(errnum, attr, context);
    }
    open.ids.push_back(event.id());
    open.count_index.push_back(first_count + i);
    open.events.push_back(std::move(event));
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
  if (auto notice = raise_open_files_for(units_.units().size() * counts_.size())) {
    notices_.push_back(std::move(*notice));
  }
  try {
    for (const auto& unit : units_.units()) {
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
  if (user_space_only_) {
    // Named as perf names them: the label says what was counted.
    std::size_t index = 0;
    for (const auto& group : groups_) {
      for (const auto& spec : group.events) {
        EventCount& count = counts_[index++];
        if (!spec.attr.has(flag::exclude_kernel)) {
          count.name = user_space_only_name(count.name);
        }
      }
    }
  }
  std::size_t largest = 0;
  for (const auto& group : groups_) largest = std::max(largest, group.events.size());
  read_buffer_.assign(read_size_bytes(counting_read_format, largest) / sizeof(std::uint64_t), 0);
  opened_ = true;
}

void CountingSession::start() {
  if (!opened_) open();
  if (target_.kind() != Target::Kind::command) {
    for (auto& group : open_groups_) group.events[0].enable(true);
  }
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

void CountingSession::stop() noexcept {
  for (auto& group : open_groups_) group.events[0].disable(true);
}

const std::vector<EventCount>& CountingSession::read() noexcept {
  for (auto& count : counts_) count.reading = Reading{};
  for (auto& group : open_groups_) {
    ssize_t bytes = group.events[0].read_words(read_buffer_);
    if (bytes <= 0) continue;
    // Decoded here rather than by decode_read(): the format is fixed (counting_read_format:
    // nr, time_enabled, time_running, then value and id per member), and this runs right after
    // the syscall, where every instruction shows in the cost of a read.
    const std::uint64_t* words = read_buffer_.data();
    std::size_t available = static_cast<std::size_t>(bytes) / sizeof(std::uint64_t);
    if (available < 3) continue;
    std::size_t members = std::min<std::size_t>(words[0], (available - 3) / 2);
    std::uint64_t enabled = words[1];
    std::uint64_t running = words[2];
    const std::uint64_t* member = words + 3;
    for (std::size_t m = 0; m < members; ++m, member += 2) {
      std::uint64_t id = member[1];
      // The kernel lists members in the order they joined the group, the order of `ids`: look
      // there first, and search only when that is not the member (one could not be opened).
      std::size_t index = m;
      if (m >= group.ids.size() || group.ids[m] != id) {
        index = static_cast<std::size_t>(std::find(group.ids.begin(), group.ids.end(), id) -
                                         group.ids.begin());
        if (index == group.ids.size()) continue;
      }
      Reading& sum = counts_[group.count_index[index]].reading;
      sum.value += member[0];
      sum.enabled += enabled;
      sum.running += running;
    }
  }
  for (auto& count : counts_) count.scaled = scale(count.reading);
  return counts_;
}

int CountingSession::wait_for_command() {
  if (!child_) throw Error(ECHILD, "the session has no command to wait for");
  int status = child_->wait();
  stop();
  if (status < 0) throw Error(-status, "waiting for the command failed");
  return status;
}

}  // namespace perfscope
