// SyscallTracer as a library user runs it: a command's calls, paired, with the kernel-side -e
// filter (only the chosen calls' events reach the buffers), and names checked before tracing.
#include "perfscope/analysis/trace/syscall_tracer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "perfscope/core/error.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::SyscallCall;
using perfscope::SyscallTracer;
using perfscope::Target;

struct Calls : perfscope::SyscallCallSink {
  void call(const SyscallCall& call) override { calls.push_back(call); }
  std::vector<SyscallCall> calls;
};

// Traces the workload command to its end; returns every call handed out.
std::vector<SyscallCall> trace_workload(SyscallTracer& tracer) {
  Calls sink;
  tracer.open();
  tracer.start();
  while (!tracer.target_ended()) tracer.poll(sink, 100);
  tracer.stop(sink);
  EXPECT_EQ(tracer.wait_for_command(), 0);
  return sink.calls;
}

std::unique_ptr<SyscallTracer> make_tracer(std::vector<std::string> syscalls) {
  perfscope::SyscallTraceOptions options;
  options.syscalls = std::move(syscalls);
  return std::make_unique<SyscallTracer>(Target::command({PERFSCOPE_SYSCALL_WORKLOAD_PATH}),
                                         options);
}

TEST(SyscallTracer, PairsACommandsCallsWithTheirArgumentsAndReturns) {
  std::unique_ptr<SyscallTracer> tracer;
  try {
    tracer = make_tracer({});
  } catch (const perfscope::Error& error) {
    GTEST_SKIP() << error.what();
  }
  auto calls = trace_workload(*tracer);
  long openat = *tracer->table().number("openat");
  std::map<long, int> counts;
  for (const auto& call : calls) {
    ++counts[call.number];
    if (call.number == openat) {
      EXPECT_TRUE(call.entered && call.exited);
      EXPECT_EQ(call.ret, -2);                          // ENOENT
      EXPECT_EQ(static_cast<int>(call.args[0]), -100);  // AT_FDCWD
      EXPECT_NE(call.args[1], 0u);                      // the path's address
    }
  }
  EXPECT_EQ(counts[*tracer->table().number("getpid")], 1000);
  EXPECT_EQ(counts[openat], 10);
  EXPECT_EQ(counts[*tracer->table().number("write")], 5);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(tracer->comm(calls.back().tid), "syscall_workloa");  // comm holds 15 characters
  EXPECT_EQ(tracer->stats().lost, 0u);
}

TEST(SyscallTracer, TheKernelFilterKeepsOnlyTheChosenCalls) {
  std::unique_ptr<SyscallTracer> tracer;
  try {
    tracer = make_tracer({"getpid", "write"});
  } catch (const perfscope::Error& error) {
    GTEST_SKIP() << error.what();
  }
  auto calls = trace_workload(*tracer);
  std::map<long, int> counts;
  for (const auto& call : calls) ++counts[call.number];
  EXPECT_EQ(counts, (std::map<long, int>{{*tracer->table().number("getpid"), 1000},
                                         {*tracer->table().number("write"), 5}}));
  // Filtered in the kernel: only their enter and exit events were read.
  EXPECT_EQ(tracer->stats().events, 2u * 1005u);
}

TEST(SyscallTracer, UnknownNamesAreRefusedBeforeTracing) {
  EXPECT_THROW(make_tracer({"getpid", "opnat"}), perfscope::UnknownSyscallError);
}

}  // namespace
