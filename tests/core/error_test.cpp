// perfscope::Error and the diagnosis of perf_event_open failures, with the failures provoked for
// real where this machine allows it, and every errno of the manual's ERRORS list checked for a
// specific explanation.
#include "perfscope/core/error.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/perf_syscalls.hpp"
#include "support/test_support.hpp"

namespace pabi = perfscope::abi;
namespace flag = pabi::attr_flag;
using perfscope::diagnose_open_failure;
using perfscope::Error;
using perfscope::Event;
using perfscope::EventAttr;
using perfscope::OpenContext;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

EventAttr task_clock() { return EventAttr::software(pabi::SoftwareEvent::task_clock); }

// Opens `attr` expecting failure; returns the Error thrown.
Error open_error(const EventAttr& attr, pid_t pid, int cpu, const Event* leader = nullptr) {
  try {
    Event::open(attr, pid, cpu, leader);
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "the open succeeded";
  return Error(0, "");
}

// Runs `body` in a forked child and returns what it returned, so that a test can change the
// child's identity or limits without touching this process.
std::string run_in_child(const std::function<std::string()>& body) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) < 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string result = body();
    std::size_t written = 0;
    while (written < result.size()) {
      ssize_t n = ::write(pipe_fds[1], result.data() + written, result.size() - written);
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string output;
  char buffer[512];
  for (;;) {
    ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return output;
}

alignas(8) volatile std::uint64_t watch_slots[6];

}  // namespace

TEST(ErrorType, WhatHoldsSummaryAndDiagnosis) {
  Error error(EACCES, "cannot open event 'cycles'", "lower perf_event_paranoid", task_clock());
  EXPECT_EQ(error.errnum(), EACCES);
  EXPECT_EQ(error.code(), std::errc::permission_denied);
  EXPECT_EQ(error.summary(), "cannot open event 'cycles'");
  EXPECT_EQ(error.diagnosis(), "lower perf_event_paranoid");
  std::string what = error.what();
  EXPECT_THAT(what, HasSubstr("cannot open event 'cycles'\nlower perf_event_paranoid"));
  ASSERT_TRUE(error.attr().has_value());
  EXPECT_EQ(error.attr()->config(), 1u);
  std::string detailed = error.detailed();
  EXPECT_THAT(detailed, HasSubstr(what));
  EXPECT_THAT(detailed, HasSubstr("PERF_TYPE_SOFTWARE"));

  Error bare(ENOENT, "just a summary");
  EXPECT_THAT(bare.what(), HasSubstr("just a summary"));
  EXPECT_EQ(bare.diagnosis(), "");
  EXPECT_FALSE(bare.attr().has_value());
  EXPECT_EQ(bare.detailed(), std::string(bare.what()));
}

TEST(ErrorType, ErrnoNames) {
  EXPECT_EQ(perfscope::errno_name(EACCES), "EACCES");
  EXPECT_EQ(perfscope::errno_name(E2BIG), "E2BIG");
  EXPECT_EQ(perfscope::errno_name(EOPNOTSUPP), "EOPNOTSUPP");
  EXPECT_EQ(perfscope::errno_name(ESRCH), "ESRCH");
  EXPECT_EQ(perfscope::errno_name(0), "");
  EXPECT_EQ(perfscope::errno_name(-1), "");
  EXPECT_EQ(perfscope::errno_name(99999), "");
  EXPECT_EQ(perfscope::errno_name(ECHILD), "ECHILD");
  EXPECT_EQ(perfscope::errno_name(512), "ERESTARTSYS");
  EXPECT_EQ(perfscope::errno_label(99999), "errno 99999");
}

// Every errno the kernel's UAPI headers define has its name (the first name of a number: EAGAIN,
// not its alias EWOULDBLOCK), as perf trace prints them.
TEST(ErrorType, EveryKernelErrnoHasItsName) {
  std::map<int, std::string> kernel;  // number -> first name
  for (const char* header :
       {"/usr/include/asm-generic/errno-base.h", "/usr/include/asm-generic/errno.h"}) {
    std::ifstream in(header);
    if (!in) GTEST_SKIP() << header << " is not here (linux-libc-dev)";
    static const std::regex define(R"(^#define\s+(E[A-Z0-9]+)\s+([0-9]+)\b.*)");
    for (std::string line; std::getline(in, line);) {
      std::smatch match;
      if (std::regex_match(line, match, define)) {
        kernel.emplace(std::stoi(match[2].str()), match[1].str());
      }
    }
  }
  ASSERT_GE(kernel.size(), 130u);
  for (const auto& [number, name] : kernel) {
    EXPECT_EQ(perfscope::errno_name(number), name) << number;
  }
}

TEST(ErrorType, ThrowOpenErrorNamesTheEventAndErrno) {
  OpenContext context;
  context.pid = 42;
  context.cpu = 1;
  context.event_name = "task-clock:u";
  try {
    perfscope::throw_open_error(ESRCH, task_clock(), context);
    FAIL() << "did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.errnum(), ESRCH);
    EXPECT_THAT(error.summary(), HasSubstr("cannot open event 'task-clock:u' (pid 42, cpu 1)"));
    EXPECT_THAT(error.summary(), HasSubstr("(ESRCH)"));
    EXPECT_THAT(error.diagnosis(), HasSubstr("42"));
  }
  context.event_name.clear();
  try {
    perfscope::throw_open_error(EINVAL, EventAttr::raw_event(0x1a2b), context);
  } catch (const Error& error) {
    EXPECT_THAT(error.summary(), HasSubstr("type 4 config 0x1a2b"));
  }
}

TEST(RealOpenFailures, EveryProcessOnEveryCpuIsEinval) {
  Error error = open_error(task_clock(), -1, -1);
  EXPECT_EQ(error.errnum(), EINVAL);
  EXPECT_THAT(error.diagnosis(), HasSubstr("pid -1 with cpu -1"));
  EXPECT_THAT(error.summary(), HasSubstr("EINVAL"));
}

TEST(RealOpenFailures, FifthBreakpointHasNoSlot) {
  std::vector<Event> open_breakpoints;
  int errnum = 0;
  for (auto& slot : watch_slots) {
    auto attr = EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&slot), 8,
                                      pabi::breakpoint_type::write)
                    .set_flag(flag::disabled);
    Event event = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
    if (!event.valid()) break;
    open_breakpoints.push_back(std::move(event));
  }
  if (open_breakpoints.size() == std::size(watch_slots)) {
    GTEST_SKIP() << "this machine opened " << open_breakpoints.size()
                 << " breakpoints on one thread without running out of slots";
  }
  if (open_breakpoints.empty())
    GTEST_SKIP() << "no hardware breakpoint opens (errno " << errnum << ")";
  EXPECT_EQ(errnum, ENOSPC);
#if defined(__x86_64__)
  EXPECT_EQ(open_breakpoints.size(), 4u);  // DR0-DR3
#endif
  auto attr = EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watch_slots[5]), 8,
                                    pabi::breakpoint_type::write);
  Error error = open_error(attr, 0, -1);
  EXPECT_EQ(error.errnum(), ENOSPC);
  EXPECT_THAT(error.diagnosis(), HasSubstr("breakpoint slots are in use"));
}

TEST(RealOpenFailures, UnknownPmuTypeIsEnoent) {
  Error error = open_error(EventAttr::dynamic_pmu(12345, 0), 0, -1);
  EXPECT_EQ(error.errnum(), ENOENT);
  EXPECT_THAT(error.diagnosis(), HasSubstr("no PMU has type 12345"));
}

TEST(RealOpenFailures, HardwareEventWithoutAPmu) {
  if (perfscope::testing::hardware_counters_available()) {
    GTEST_SKIP() << "this machine has a hardware PMU, so a hardware event opens";
  }
  Error error =
      open_error(EventAttr::hardware(pabi::HardwareEvent::instructions).count_user_only(), 0, -1);
  EXPECT_EQ(error.errnum(), ENOENT);
  EXPECT_THAT(error.diagnosis(), HasSubstr("no hardware PMU"));
}

TEST(RealOpenFailures, UnprivilegedKernelCountingIsEacces) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "needs root to become nobody";
  auto paranoid = perfscope::sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) {
    GTEST_SKIP() << "perf_event_paranoid is below 2: unprivileged users may count the kernel";
  }
  std::string report = run_in_child([] {
    if (::setgroups(0, nullptr) < 0 || ::setgid(65534) < 0 || ::setuid(65534) < 0) {
      return std::string("setuid failed");
    }
    int with_kernel = 0;
    Event kernel = Event::try_open(task_clock(), 0, -1, nullptr, 0, with_kernel);
    int user_only = 0;
    Event user =
        Event::try_open(task_clock().set_flag(flag::exclude_kernel), 0, -1, nullptr, 0, user_only);
    OpenContext context;
    return std::to_string(with_kernel) + " " + std::to_string(user_only) + "\n" +
           diagnose_open_failure(with_kernel, task_clock(), context);
  });
  ASSERT_NE(report, "setuid failed");
  auto newline = report.find('\n');
  ASSERT_NE(newline, std::string::npos) << report;
  EXPECT_EQ(report.substr(0, newline), std::to_string(EACCES) + " 0");
  std::string diagnosis = report.substr(newline + 1);
  EXPECT_THAT(diagnosis, HasSubstr("perf_event_paranoid is"));
  EXPECT_THAT(diagnosis, HasSubstr("neither CAP_PERFMON"));
  EXPECT_THAT(diagnosis, HasSubstr(":u"));
}

TEST(RealOpenFailures, MissingProcessIsEsrch) {
  // Above the largest pid_max the kernel allows (2^22), so no such process can exist.
  constexpr pid_t missing = (1 << 22) + 17;
  Error error = open_error(task_clock(), missing, -1);
  EXPECT_EQ(error.errnum(), ESRCH);
  EXPECT_THAT(error.diagnosis(), HasSubstr(std::to_string(missing)));
  EXPECT_THAT(error.diagnosis(), HasSubstr("no process or thread"));
}

TEST(RealOpenFailures, BogusGroupFdIsEbadf) {
  int not_perf = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(not_perf, 0);
  auto outcome = perfscope::sys::perf_event_open(task_clock().raw(), 0, -1, not_perf, 0);
  ::close(not_perf);
  EXPECT_EQ(outcome.fd, -1);
  EXPECT_EQ(outcome.error, EBADF);
  auto closed = perfscope::sys::perf_event_open(task_clock().raw(), 0, -1, 1000000, 0);
  EXPECT_EQ(closed.error, EBADF);
  OpenContext context;
  context.group_fd = not_perf;
  EXPECT_THAT(diagnose_open_failure(outcome.error, task_clock(), context),
              HasSubstr("group_fd is not a valid perf event file descriptor"));
}

TEST(RealOpenFailures, RunningOutOfFileDescriptorsIsEmfile) {
  std::string report = run_in_child([] {
    rlimit limit{16, 16};
    if (::setrlimit(RLIMIT_NOFILE, &limit) < 0) return std::string("setrlimit failed");
    std::vector<Event> events;
    int errnum = 0;
    for (int i = 0; i < 64; ++i) {
      Event event = Event::try_open(task_clock(), 0, -1, nullptr, 0, errnum);
      if (!event.valid()) break;
      events.push_back(std::move(event));
    }
    return std::to_string(errnum) + " " + std::to_string(events.size()) + "\n" +
           diagnose_open_failure(errnum, task_clock(), OpenContext{});
  });
  auto newline = report.find('\n');
  ASSERT_NE(newline, std::string::npos) << report;
  auto space = report.find(' ');
  EXPECT_EQ(report.substr(0, space), std::to_string(EMFILE));
  int opened = std::stoi(report.substr(space + 1, newline - space - 1));
  EXPECT_GT(opened, 0);
  EXPECT_LT(opened, 16);  // every fd counts against the limit of 16
  std::string diagnosis = report.substr(newline + 1);
  EXPECT_THAT(diagnosis, HasSubstr("RLIMIT_NOFILE) is 16 (hard 16)"));
  // At the hard limit `ulimit -n` cannot help: the fix is the hard limit.
  EXPECT_THAT(diagnosis, HasSubstr("raise the hard limit"));
  EXPECT_THAT(diagnosis, Not(HasSubstr("`ulimit -n")));
}

TEST(Diagnosis, HardwareEnoentMentionsTheMissingPmu) {
  OpenContext context;
  for (const auto& attr :
       {EventAttr::hardware(pabi::HardwareEvent::cpu_cycles),
        EventAttr::hw_cache(pabi::CacheId::l1d, pabi::CacheOp::read, pabi::CacheResult::miss),
        EventAttr::raw_event(0x3c)}) {
    EXPECT_THAT(diagnose_open_failure(ENOENT, attr, context), HasSubstr("no hardware PMU"));
  }
  EXPECT_THAT(diagnose_open_failure(ENOENT, EventAttr::tracepoint(99999), context),
              HasSubstr("no tracepoint has id 99999"));
}

// One specific sentence per errno of the manual's ERRORS section.
TEST(Diagnosis, EveryManualErrnoIsExplained) {
  OpenContext context;
  struct Case {
    int errnum;
    EventAttr attr;
    const char* keyword;
  };
  auto bp = EventAttr::breakpoint(0x1000, 8, pabi::breakpoint_type::write);
  const Case cases[] = {
      {E2BIG, task_clock(), "attr size"},
      {EACCES, task_clock(), "perf_event_paranoid"},
      {EBADF, task_clock(), "group_fd"},
      {EBUSY, task_clock(), "exclusive"},
      {EFAULT, task_clock(), "not readable memory"},
      {EINVAL, task_clock(), "invalid"},
      {EINTR, task_clock(), "uprobe"},
      {EMFILE, task_clock(), "RLIMIT_NOFILE"},
      {ENODEV, task_clock(), "feature"},
      {ENOENT, EventAttr::dynamic_pmu(999, 0), "no PMU has type 999"},
      {ENOSPC, bp, "breakpoint slots"},
      {ENOSYS, task_clock(), "PERF_SAMPLE_STACK_USER"},
      {EOPNOTSUPP, task_clock().set_sample_period(1000), "cannot sample"},
      {EOVERFLOW, task_clock().set_sample_max_stack(500), "sample_max_stack 500"},
      {EPERM, task_clock().count_user_only(), "exclude_"},
      {ESRCH, task_clock(), "no process or thread"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(perfscope::errno_name(c.errnum));
    std::string text = diagnose_open_failure(c.errnum, c.attr, context);
    EXPECT_FALSE(text.empty());
    EXPECT_THAT(text, HasSubstr(c.keyword));
  }
  EXPECT_EQ(diagnose_open_failure(EXDEV, task_clock(), context), "");
}

TEST(Diagnosis, SpecificVariants) {
  OpenContext context;
  // E2BIG after renegotiation names the fields the kernel cannot see.
  context.kernel_attr_size = 128;
  EXPECT_THAT(diagnose_open_failure(E2BIG, task_clock().set_config3(1), context),
              HasSubstr("128-byte perf_event_attr but ours is 136 bytes and sets config3"));
  context.kernel_attr_size = 0;

  // EOPNOTSUPP: branch stacks and precise_ip are named before the generic sampling message.
  EXPECT_THAT(diagnose_open_failure(EOPNOTSUPP, task_clock().set_branch_sample_type(1), context),
              HasSubstr("branch stack"));
  EXPECT_THAT(diagnose_open_failure(EOPNOTSUPP, task_clock().set_precise_ip(2), context),
              HasSubstr("precise_ip 2"));
  EXPECT_THAT(diagnose_open_failure(EOPNOTSUPP, task_clock(), context),
              HasSubstr("hardware feature"));
  EXPECT_THAT(diagnose_open_failure(ENOSPC, task_clock(), context), HasSubstr("PMU resources"));

  // EPERM for a kernel-address breakpoint.
  auto kernel_bp = EventAttr::breakpoint(0xffffffff81000000ULL, 8, pabi::breakpoint_type::write);
  EXPECT_THAT(diagnose_open_failure(EPERM, kernel_bp, context), HasSubstr("kernel address"));
  EXPECT_THAT(
      diagnose_open_failure(
          EPERM, task_clock().set_flag(flag::sigtrap).set_flag(flag::remove_on_exec), context),
      HasSubstr("sigtrap"));

  // EINVAL collects the static problems validate() finds plus the context's.
  OpenContext cgroup;
  cgroup.flags = pabi::open_flag::pid_cgroup;
  cgroup.cpu = -1;
  EXPECT_THAT(diagnose_open_failure(EINVAL, task_clock(), cgroup), HasSubstr("cpu >= 0"));
  EXPECT_THAT(diagnose_open_failure(EINVAL, task_clock().set_flag(flag::sigtrap), context),
              HasSubstr("remove_on_exec"));
  OpenContext member;
  member.group_fd = 3;
  member.group_size = 5;
  std::string text = diagnose_open_failure(EINVAL, task_clock().set_flag(flag::pinned), member);
  EXPECT_THAT(text, HasSubstr("only allowed on a group leader"));
  EXPECT_THAT(text, HasSubstr("the group has 5 events"));
  OpenContext far_cpu;
  far_cpu.cpu = 4096;
  EXPECT_THAT(diagnose_open_failure(EINVAL, task_clock(), far_cpu),
              HasSubstr("cpu 4096 does not exist"));
  EXPECT_THAT(diagnose_open_failure(EINVAL, task_clock(), context),
              HasSubstr("the kernel gave no detail"));

  // EACCES system-wide and for another process.
  OpenContext system_wide;
  system_wide.pid = -1;
  system_wide.cpu = 0;
  std::string wide = diagnose_open_failure(EACCES, task_clock(), system_wide);
  EXPECT_THAT(wide, HasSubstr("perf_event_paranoid"));
  EXPECT_FALSE(wide.empty());
  EXPECT_THAT(diagnose_open_failure(EBADF, task_clock(), cgroup), HasSubstr("cgroup"));
}
