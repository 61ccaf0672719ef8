// perf's inspection commands (issue #45): evlist, buildid-list and kallsyms print what perf
// prints, byte for byte, on the same recordings (perf's and perfscope's) and the same kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

class PerfInspectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  }
  std::string record(const std::string& recorder, const std::vector<std::string>& events,
                     const std::string& getpid_calls = "1000") {
    std::string file = dir_.path() + "/" + recorder + std::to_string(++files_) + ".data";
    std::vector<std::string> command{"record", "-q", "-o", file};
    for (const auto& event : events) {
      command.push_back("-e");
      command.push_back(event);
    }
    command.insert(command.end(), {"--", work_helper, "getpid", getpid_calls});
    auto result = pt::run_perf_or_perfscope(recorder, command);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return file;
  }
  // perf CMD ARGS and perfscope CMD ARGS: the same standard output and exit status.
  std::string expect_as_perfs(const std::vector<std::string>& arguments) {
    auto perf = pt::run_perf_or_perfscope("perf", arguments);
    auto ours = pt::run_perfscope(arguments);
    EXPECT_EQ(ours.exit_status, perf.exit_status) << ours.err;
    EXPECT_EQ(ours.out, perf.out) << ::testing::PrintToString(arguments) << "\n" << ours.err;
    return ours.out;
  }
  pt::TempDir dir_;
  int files_ = 0;
};

TEST_F(PerfInspectionTest, EvlistAsPerfs) {
  const bool tracepoints = pt::tracefs_available() && pt::running_as_root();
  std::vector<std::string> events{"cpu-clock", "page-faults"};
  if (tracepoints) events.push_back("syscalls:sys_enter_getpid");
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string file = record(recorder, events);
    std::string names = expect_as_perfs({"evlist", "-i", file});
    EXPECT_EQ(names.rfind("cpu-clock\npage-faults\n", 0), 0u) << names;
    EXPECT_NE(expect_as_perfs({"evlist", "-i", file, "-F"}).find("cpu-clock: sample_freq="),
              std::string::npos);
    EXPECT_NE(expect_as_perfs({"evlist", "-i", file, "-v"}).find("cpu-clock: type: 1, size: "),
              std::string::npos);
    expect_as_perfs({"evlist", "-i", file, "-g"});
    std::string fields = expect_as_perfs({"evlist", "-i", file, "--trace-fields"});
    EXPECT_NE(fields.find("cpu-clock: (not a tracepoint)\n"), std::string::npos) << fields;
    if (tracepoints) {
      EXPECT_NE(fields.find("syscalls:sys_enter_getpid: trace_fields: __syscall_nr\n"),
                std::string::npos)
          << fields;
    }
  }
  // A group: its leader's line names the members.
  std::string grouped = record("perf", {"{cpu-clock,page-faults}"});
  EXPECT_EQ(expect_as_perfs({"evlist", "-i", grouped, "-g"}), "{cpu-clock,page-faults}\n");
}

TEST_F(PerfInspectionTest, BuildidListAsPerfs) {
  for (const std::string recorder : {"perf", "perfscope"}) {
    // Enough system calls that some of cpu-clock's samples land in the kernel for certain.
    std::string file = record(recorder, {"cpu-clock"}, "2000000");
    std::string all = expect_as_perfs({"buildid-list", "-i", file});
    EXPECT_NE(all.find(" [kernel.kallsyms]\n"), std::string::npos) << all;
    std::string hits = expect_as_perfs({"buildid-list", "-i", file, "-H"});
    EXPECT_NE(hits.find("[kernel.kallsyms]\n"), std::string::npos) << hits;
  }
  std::string kernel = expect_as_perfs({"buildid-list", "-k"});
  EXPECT_EQ(kernel.size(), 41u) << kernel;  // 40 hex digits and a newline
}

TEST_F(PerfInspectionTest, KallsymsAsPerfs) {
  if (!pt::running_as_root()) GTEST_SKIP() << "kernel addresses read 0 for a user (kptr_restrict)";
  std::string found = expect_as_perfs({"kallsyms", "schedule", "do_sys_openat2", "no_such_sym"});
  EXPECT_NE(found.find("schedule: [kernel] [kernel.kallsyms] 0x"), std::string::npos) << found;
  EXPECT_NE(found.find("no_such_sym: not found\n"), std::string::npos) << found;
}

}  // namespace
