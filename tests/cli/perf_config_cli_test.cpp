// perf's configuration files on perfscope (issue #45): `config` writes, lists and shows settings
// as perf config does (the same file and text, each tool reading the other's), and the settings
// perfscope honours change its defaults as they change perf's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

class PerfConfigTest : public ::testing::Test {
 protected:
  // TOOL ARGS with HOME=home: its ~/.perfconfig; no system file (PERF_CONFIG_NOSYSTEM).
  pt::CommandResult run(const std::string& tool, const std::string& home,
                        const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"env", "HOME=" + home, "PERF_CONFIG_NOSYSTEM=1",
                                  tool == "perf" ? perf_path : PERFSCOPE_CLI_PATH};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    auto result = pt::run_command(argv);
    if (tool != "perf") pt::expect_no_crash(result);
    return result;
  }
  std::string home(const std::string& name) {
    std::string path = dir_.path() + "/" + name;
    std::filesystem::create_directories(path);
    return path;
  }
  bool have_perf() const { return ::access(perf_path.c_str(), X_OK) == 0; }
  pt::TempDir dir_;
};

TEST_F(PerfConfigTest, SetListAndGetAsPerfConfig) {
  std::string ours = home("ours");
  auto set =
      run("perfscope", ours, {"config", "report.children=false", "call-graph.record-mode=dwarf"});
  ASSERT_EQ(set.exit_status, 0) << set.err;
  set = run("perfscope", ours, {"config", "report.sort_order=dso,sym", "report.children=true"});
  ASSERT_EQ(set.exit_status, 0) << set.err;
  const std::string expected_file =
      "# this file is auto-generated.\n"
      "[report]\n"
      "\tchildren = true\n"
      "\tsort_order = dso,sym\n"
      "[call-graph]\n"
      "\trecord-mode = dwarf\n";
  EXPECT_EQ(pt::read_file(ours + "/.perfconfig"), expected_file);
  auto list = run("perfscope", ours, {"config", "--list"});
  EXPECT_EQ(list.out,
            "report.children=true\nreport.sort_order=dso,sym\ncall-graph.record-mode=dwarf\n");
  EXPECT_EQ(run("perfscope", ours, {"config", "report.sort_order"}).out,
            "report.sort_order=dso,sym\n");
  EXPECT_EQ(run("perfscope", ours, {"config", "report.nothing"}).out, "");
  auto nameless = run("perfscope", ours, {"config", "children"});
  EXPECT_NE(nameless.exit_status, 0);
  EXPECT_NE(nameless.err.find("section.name"), std::string::npos) << nameless.err;
  if (!have_perf()) GTEST_SKIP() << "Linux perf is not installed";
  // perf writes the same file for the same commands, and each lists the other's file alike.
  std::string perfs = home("perfs");
  run("perf", perfs, {"config", "report.children=false", "call-graph.record-mode=dwarf"});
  run("perf", perfs, {"config", "report.sort_order=dso,sym", "report.children=true"});
  EXPECT_EQ(pt::read_file(perfs + "/.perfconfig"), expected_file);
  EXPECT_EQ(run("perf", ours, {"config", "--list"}).out, list.out);
  EXPECT_EQ(run("perfscope", perfs, {"config", "-l", "--user"}).out,
            run("perf", perfs, {"config", "-l", "--user"}).out);
}

TEST_F(PerfConfigTest, ReportChildrenFalseChangesTheDefaultAsPerfs) {
  std::string plain = home("plain"), configured = home("configured");
  std::ofstream(configured + "/.perfconfig") << "[report]\n\tchildren = false\n[ui]\n"
                                             << "\tshow-headers = true\n";
  std::string data = dir_.path() + "/g.data";
  auto recorded =
      pt::run_perfscope({"record", "-q", "-g", "-o", data, "--", work_helper, "faults", "2000"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto header_of = [&](const std::string& tool, const std::string& home_dir,
                       std::vector<std::string> extra) {
    std::vector<std::string> arguments{"report", "--stdio", "-i", data};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    auto result = run(tool, home_dir, arguments);
    EXPECT_EQ(result.exit_status, 0) << tool << ": " << result.err;
    std::istringstream lines(result.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("Overhead") != std::string::npos || line.find("Children") != std::string::npos)
        return line;
    }
    return std::string("(no header) ") + result.out.substr(0, 300);
  };
  std::string with_children = header_of("perfscope", plain, {});
  std::string without = header_of("perfscope", configured, {});
  EXPECT_NE(with_children.find("Children"), std::string::npos) << with_children;
  EXPECT_EQ(without.find("Children"), std::string::npos) << without;
  // The command line still wins over the file.
  EXPECT_NE(header_of("perfscope", configured, {"--children"}).find("Children"), std::string::npos);
  // -v names the settings perfscope does not read.
  auto verbose = run("perfscope", configured, {"report", "--stdio", "-v", "-i", data});
  EXPECT_NE(verbose.err.find("ui.show-headers: a perf setting perfscope does not read"),
            std::string::npos)
      << verbose.err;
  EXPECT_EQ(verbose.err.find("report.children: a perf"), std::string::npos) << verbose.err;
  if (!have_perf()) GTEST_SKIP() << "Linux perf is not installed";
  EXPECT_NE(header_of("perf", plain, {}).find("Children"), std::string::npos);
  EXPECT_EQ(header_of("perf", configured, {}).find("Children"), std::string::npos);
}

TEST_F(PerfConfigTest, RecordModeDwarfMakesDashGUnwindDwarf) {
  std::string configured = home("dwarf");
  std::ofstream(configured + "/.perfconfig")
      << "[call-graph]\n\trecord-mode = dwarf\n\tdump-size = 4096\n";
  std::string data = dir_.path() + "/dwarf.data";
  auto recorded = run("perfscope", configured,
                      {"record", "-g", "-o", data, "--", work_helper, "faults", "200"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  // The events copied 4096-byte user stacks with the user registers: -g was dwarf,4096.
  auto events = pt::run_perfscope({"evlist", "-v", "-i", data});
  EXPECT_NE(events.out.find("REGS_USER|STACK_USER"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("sample_stack_user: 4096"), std::string::npos) << events.out;
  // A line that does not parse is an error that names the file and line.
  std::ofstream(configured + "/.perfconfig") << "[report\nchildren = false\n";
  auto broken = run("perfscope", configured, {"report", "--stdio", "-i", data});
  EXPECT_EQ(broken.exit_status, 1);
  EXPECT_NE(broken.err.find(".perfconfig:1:"), std::string::npos) << broken.err;
}

}  // namespace
