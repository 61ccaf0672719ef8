#include "perfscope/engine/event_opener.hpp"

#include <cerrno>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/engine/target_units.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;
namespace rf = abi::read_format;

// An event that asks for kernel space alone (":k", exclude_user) is never made user space only:
// it would count nothing. It fails with the diagnosis instead.
EventAttr EventOpener::adjusted(EventAttr attr) const {
  if (user_space_only_ && !attr.has(flag::exclude_user)) {
    attr.set_flag(flag::exclude_kernel).set_flag(flag::exclude_hv);
  }
  if (!lost_format_) attr.set_read_format(attr.raw().read_format & ~rf::lost);
  return attr;
}

OpenOutcome EventOpener::open(const EventAttr& requested, const OpenSite& site) {
  OpenOutcome outcome;
  EventAttr attr = adjusted(requested);
  int errnum = 0;
  auto attempt = [&] {
    outcome.event = Event::try_open(attr, site.pid, site.cpu, site.leader, site.flags, errnum);
  };
  attempt();
  OpenContext context;
  context.pid = site.pid;
  context.cpu = site.cpu;
  context.flags = site.flags;
  if (!outcome.event.valid() && policy_.user_space_fallback && !user_space_only_ &&
      !attr.has(flag::exclude_user) && user_space_only_fallback(errnum, attr, context)) {
    user_space_only_ = true;
    notices_.push_back(user_space_only_notice());
    attr = adjusted(requested);
    attempt();
  }
  // A kernel before 6.0 refuses PERF_FORMAT_LOST with EINVAL. Decided on the first open only: a
  // later EINVAL is the event's own (the kernel said yes to the format before).
  if (!outcome.event.valid() && errnum == EINVAL && lost_format_ && !any_opened_ &&
      (attr.raw().read_format & rf::lost)) {
    lost_format_ = false;
    attr = adjusted(requested);
    attempt();
  }
  if (outcome.event.valid()) {
    any_opened_ = true;
    return outcome;
  }
  outcome.errnum = errnum;
  if (errnum == ESRCH && policy_.task_may_exit) {
    outcome.status = OpenStatus::task_gone;
    return outcome;
  }
  context.group_fd = site.leader ? site.leader->fd() : -1;
  context.event_name = std::string(site.name);
  context.group_size = site.group_size;
  context.kernel_attr_size = outcome.event.kernel_attr_size();
  if (policy_.skip_unsupported && open_failure_means_unsupported(errnum, attr)) {
    outcome.status = OpenStatus::unsupported;
    outcome.diagnosis = diagnose_open_failure(errnum, attr, context);
    return outcome;
  }
  if ((errnum == EMFILE || errnum == ENFILE) && release_) release_();
  throw_open_error(errnum, attr, context);
}

std::string EventOpener::label(std::string_view name, const EventAttr& as_written) const {
  if (!user_space_only_ || as_written.has(flag::exclude_kernel) ||
      as_written.has(flag::exclude_user)) {
    return std::string(name);
  }
  return user_space_only_name(name);
}

void EventOpener::reserve_descriptors(std::size_t descriptors) {
  if (auto notice = raise_open_files_for(descriptors)) notices_.push_back(std::move(*notice));
}

}  // namespace perfscope
