#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace perfscope {
namespace {

using testing::run_perfscope;

TEST(DoctorCli, JsonReport) {
  auto result = run_perfscope({"doctor", "--json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto document = nlohmann::json::parse(result.out);
  EXPECT_EQ(document.at("schema"), "perfscope-doctor");
  EXPECT_EQ(document.at("version"), 1);
  EXPECT_FALSE(document.contains("binary"));
  const std::set<std::string> statuses = {"ok", "warn", "fail", "info"};
  bool has_paranoid = false;
  ASSERT_TRUE(document.at("checks").is_array());
  for (const auto& check : document.at("checks")) {
    for (const char* key : {"id", "title", "status", "value", "explanation", "fix"}) {
      EXPECT_TRUE(check.at(key).is_string()) << key;
    }
    EXPECT_TRUE(statuses.count(check.at("status").get<std::string>())) << check.dump();
    if (check.at("id") == "perf_event_paranoid") {
      has_paranoid = true;
      auto paranoid = sys::read_sysctl("perf_event_paranoid");
      ASSERT_TRUE(paranoid.has_value());
      EXPECT_EQ(check.at("value").get<std::string>().rfind(std::to_string(*paranoid) + " (", 0), 0u)
          << check.dump();
    }
    if (check.at("id") == "software_events") {
      EXPECT_EQ(check.at("status"), "ok");
    }
  }
  EXPECT_TRUE(has_paranoid);
  const auto& summary = document.at("summary");
  EXPECT_EQ(summary.at("hardware_counters").get<bool>(), testing::hardware_counters_available());
  EXPECT_TRUE(summary.at("sampling").is_string());
  EXPECT_TRUE(summary.at("user_space_reads").is_string());
  auto names = sys::list_directory(std::string(sys::pmu_devices_dir));
  ASSERT_EQ(document.at("pmus").size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(document.at("pmus")[i].at("name"), names[i]);
  }
  EXPECT_TRUE(document.at("user_page").at("mapped").get<bool>());
}

TEST(DoctorCli, JsonBinarySection) {
  auto result = run_perfscope({"doctor", "--json", "--binary", PERFSCOPE_CLI_PATH});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto binary = nlohmann::json::parse(result.out).at("binary");
  EXPECT_EQ(binary.at("path"), PERFSCOPE_CLI_PATH);
  EXPECT_GT(binary.at("functions").get<int>(), 100);
  EXPECT_LE(binary.at("functions_with_frame_pointer").get<int>(),
            binary.at("functions").get<int>());
  double fraction = binary.at("frame_pointer_fraction");
  EXPECT_GE(fraction, 0.0);
  EXPECT_LE(fraction, 1.0);
  EXPECT_EQ(binary.at("frame_pointers_usable").get<bool>(), fraction >= 0.5);
  EXPECT_TRUE(binary.at("eh_frame").get<bool>());
  EXPECT_FALSE(binary.at("advice").empty());
}

TEST(DoctorCli, TextReportOneLinePerCheckAndSummary) {
  auto result = run_perfscope({"doctor"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("[ ok ] software events: task-clock counted"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("] perf_event_paranoid: "), std::string::npos);
  auto last_line_start = result.out.rfind('\n', result.out.size() - 2);
  ASSERT_NE(last_line_start, std::string::npos);
  std::string summary = result.out.substr(last_line_start + 1);
  EXPECT_EQ(summary.rfind("hardware counters: ", 0), 0u) << summary;
  EXPECT_NE(summary.find("; sampling: "), std::string::npos) << summary;
  EXPECT_NE(summary.find("; user-space reads: "), std::string::npos) << summary;
  // Problems are followed by their fix.
  auto warn = result.out.find("[warn]");
  auto fail = result.out.find("[FAIL]");
  auto first_problem = std::min(warn, fail);
  if (first_problem != std::string::npos) {
    auto next_check = result.out.find("\n[", first_problem + 1);
    EXPECT_NE(result.out.substr(first_problem, next_check - first_problem).find("fix: "),
              std::string::npos);
  }
}

TEST(DoctorCli, MissingBinaryIsAnError) {
  auto result = run_perfscope({"doctor", "--binary", "/nonexistent/app"});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("'/nonexistent/app'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("No such file"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

}  // namespace
}  // namespace perfscope

namespace perfscope {
namespace {

// The JIT runtimes on PATH, each with what record --jit would set for it.
TEST(DoctorCli, NamesTheJitRuntimesAndWhatJitWouldSet) {
  auto result = perfscope::testing::run_perfscope({"doctor", "--json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto runtimes = nlohmann::json::parse(result.out).at("jit_runtimes");
  ASSERT_TRUE(runtimes.is_array());
  bool node = false;
  for (const auto& runtime : runtimes) {
    if (runtime.at("runtime") != "node") continue;
    node = true;
    EXPECT_NE(
        runtime.at("record_jit_sets").at("NODE_OPTIONS").get<std::string>().find("--perf-prof"),
        std::string::npos)
        << runtime.dump();
  }
  if (::access("/usr/bin/node", X_OK) == 0) {
    EXPECT_TRUE(node) << runtimes.dump();
  }
  auto text = perfscope::testing::run_perfscope({"doctor"});
  EXPECT_NE(text.out.find("JIT runtimes (record --jit):"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace perfscope
