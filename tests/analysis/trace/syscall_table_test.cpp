// System call names and numbers, misspelt names, tracepoint filters and argument printing.
#include "perfscope/analysis/trace/syscall_table.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "perfscope/analysis/trace/syscall_arguments.hpp"
#include "perfscope/analysis/trace/syscall_tracer.hpp"

namespace {

using perfscope::SyscallArgumentKind;
using perfscope::SyscallTable;

TEST(SyscallTable, KnowsBothArchitecturesNumbers) {
  auto x86 = SyscallTable::for_architecture("x86_64");
  ASSERT_TRUE(x86);
  EXPECT_EQ(x86->number("getpid"), 39);
  EXPECT_EQ(x86->number("openat"), 257);
  EXPECT_EQ(x86->number("write"), 1);
  EXPECT_EQ(x86->name(0), "read");
  EXPECT_EQ(x86->name(435), "clone3");
  EXPECT_EQ(x86->name(462), "mseal");  // newer than the 6.1 headers
  EXPECT_EQ(x86->name(400), "");       // a hole
  EXPECT_EQ(x86->name(-1), "");
  EXPECT_EQ(x86->name(100000), "");
  auto arm = SyscallTable::for_architecture("aarch64");
  ASSERT_TRUE(arm);
  EXPECT_EQ(arm->number("getpid"), 172);
  EXPECT_EQ(arm->number("openat"), 56);
  EXPECT_EQ(arm->number("write"), 64);
  EXPECT_FALSE(arm->number("open"));  // aarch64 has openat only
  EXPECT_FALSE(SyscallTable::for_architecture("sparc"));
}

TEST(SyscallTable, SuggestsTheClosestNames) {
  auto table = *SyscallTable::for_architecture("x86_64");
  auto closest = table.closest_names("getpidd");
  ASSERT_FALSE(closest.empty());
  EXPECT_EQ(closest.front(), "getpid");
  EXPECT_TRUE(table.closest_names("completelyunrelatedword").empty());
  EXPECT_THROW(perfscope::syscall_numbers(table, std::vector<std::string>{"opnat"}),
               perfscope::UnknownSyscallError);
  try {
    perfscope::syscall_numbers(table, std::vector<std::string>{"opnat"});
  } catch (const perfscope::UnknownSyscallError& error) {
    EXPECT_NE(std::string(error.what()).find("openat"), std::string::npos) << error.what();
  }
  auto numbers =
      perfscope::syscall_numbers(table, std::vector<std::string>{"write", "getpid", "0", "write"});
  EXPECT_EQ(numbers, (std::vector<long>{0, 1, 39}));
}

TEST(SyscallTable, NamesTheTracepointsOfRenamedCalls) {
  EXPECT_EQ(SyscallTable::tracepoint_names("fstat").front(), "newfstat");
  EXPECT_EQ(SyscallTable::tracepoint_names("openat"), std::vector<std::string>{"openat"});
}

TEST(SyscallTable, NumbersEveryCallThisKernelHasATracepointFor) {
  auto table = SyscallTable::for_this_machine();
  std::string tracefs = "/sys/kernel/tracing";
  if (!std::filesystem::exists(tracefs + "/events/syscalls")) {
    GTEST_SKIP() << "no syscall tracepoints under " << tracefs;
  }
  // A kernel newer than the table: add its calls to src/analysis/trace/syscall_table.cpp.
  EXPECT_EQ(table.calls_missing_from_table(tracefs), std::vector<std::string>{});
  // And the check itself sees a call the table lacks.
  auto other =
      SyscallTable::for_architecture(table.architecture() == "x86_64" ? "aarch64" : "x86_64");
  ASSERT_TRUE(other);
  auto missing = other->calls_missing_from_table(tracefs);
  EXPECT_FALSE(missing.empty());
}

TEST(SyscallFilter, KeepsTheCallsAndLeavesOutTheTracer) {
  std::vector<long> numbers{39, 257};
  std::vector<pid_t> none, tracer{77}, two{77, 78};
  EXPECT_EQ(perfscope::syscall_filter(numbers, none), "id == 39 || id == 257");
  EXPECT_EQ(perfscope::syscall_filter(numbers, tracer),
            "(id == 39 || id == 257) && common_pid != 77");
  EXPECT_EQ(perfscope::syscall_filter({}, tracer), "common_pid != 77");
  EXPECT_EQ(perfscope::syscall_filter({}, two), "common_pid != 77 && common_pid != 78");
  EXPECT_EQ(perfscope::syscall_filter({}, none), "");
  EXPECT_EQ(perfscope::syscall_filter(numbers, tracer, true),
            "(id != 39 && id != 257) && common_pid != 77");
}

TEST(SyscallArguments, PrintsEachKindOfArgument) {
  using perfscope::syscall_argument_kind;
  EXPECT_EQ(syscall_argument_kind("const char *", "filename"), SyscallArgumentKind::pointer);
  EXPECT_EQ(syscall_argument_kind("int", "dfd"), SyscallArgumentKind::directory_fd);
  EXPECT_EQ(syscall_argument_kind("int", "flags"), SyscallArgumentKind::flags);
  EXPECT_EQ(syscall_argument_kind("umode_t", "mode"), SyscallArgumentKind::mode);
  EXPECT_EQ(syscall_argument_kind("unsigned int", "fd"), SyscallArgumentKind::unsigned_number);
  EXPECT_EQ(syscall_argument_kind("int", "fd"), SyscallArgumentKind::int32);
  EXPECT_EQ(syscall_argument_kind("size_t", "count"), SyscallArgumentKind::unsigned_number);
  EXPECT_EQ(syscall_argument_kind("off_t", "offset"), SyscallArgumentKind::signed_number);
  auto text = [](SyscallArgumentKind kind, std::uint64_t value) {
    std::string out;
    perfscope::SyscallSignatures::append_value(out, kind, value);
    return out;
  };
  EXPECT_EQ(text(SyscallArgumentKind::directory_fd, static_cast<std::uint32_t>(-100)), "AT_FDCWD");
  EXPECT_EQ(text(SyscallArgumentKind::directory_fd, 3), "3");
  EXPECT_EQ(text(SyscallArgumentKind::pointer, 0), "NULL");
  EXPECT_EQ(text(SyscallArgumentKind::pointer, 0x7ffd1000), "0x7ffd1000");
  EXPECT_EQ(text(SyscallArgumentKind::mode, 0644), "0644");
  EXPECT_EQ(text(SyscallArgumentKind::int32, 0xffffffffULL), "-1");
  EXPECT_EQ(text(SyscallArgumentKind::signed_number, static_cast<std::uint64_t>(-5)), "-5");
  EXPECT_EQ(text(SyscallArgumentKind::flags, 0x80000), "0x80000");
}

}  // namespace
