// perf data convert --to-json on perfscope (issue #45): perf's layout, tab for tab, and perf's
// samples (count, time, task, comm, call-chain ips and names) on the same recordings, perf's and
// perfscope's; a tracepoint's fields as libtraceevent prints them; perf's refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

// perf's names where perfscope gives another by design (docs/FOREIGN_FILES.md, "Names"): symbol
// versions, cfree for free; a return address just past a function that never returns is named
// by perf as the next symbol (__pfx_clear_bss), by perfscope as its caller.
std::string perfscope_name(const std::string& name) {
  static const std::regex version(R"(@@?[A-Z]+_[0-9.]+$)");
  std::string plain = std::regex_replace(name, version, "");
  return plain == "cfree" ? "free" : plain;
}

class DataConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  }
  std::string convert(const std::string& tool, const std::string& input) {
    std::string output = dir_.path() + "/" + tool + std::to_string(++files_) + ".json";
    auto result = pt::run_perf_or_perfscope(
        tool, {"data", "convert", "--to-json", output, "-i", input, "--force"});
    EXPECT_EQ(result.exit_status, 0) << tool << ": " << result.err;
    return output;
  }
  pt::TempDir dir_;
  int files_ = 0;
};

TEST_F(DataConvertTest, PerfsLayoutAndPerfsSamplesFromBothRecorders) {
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string data = dir_.path() + "/" + recorder + ".data";
    auto recorded =
        pt::run_perf_or_perfscope(recorder, {"record", "-q", "-g", "-e", "cpu-clock,page-faults",
                                             "-o", data, "--", work_helper, "faults", "2000"});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    std::string perf_text = pt::read_file(convert("perf", data));
    std::string our_text = pt::read_file(convert("perfscope", data));
    // The text up to the first sample: perf's, tab for tab (the headers).
    std::size_t samples_at = perf_text.find("\"samples\": [");
    ASSERT_NE(samples_at, std::string::npos) << perf_text.substr(0, 400);
    EXPECT_EQ(our_text.substr(0, samples_at + 40), perf_text.substr(0, samples_at + 40));
    auto perf = nlohmann::json::parse(perf_text);
    auto ours = nlohmann::json::parse(our_text);
    EXPECT_EQ(ours["headers"], perf["headers"]);
    ASSERT_EQ(ours["samples"].size(), perf["samples"].size()) << recorder;
    ASSERT_GT(ours["samples"].size(), 10u);
    std::size_t frames = 0, named = 0;
    for (std::size_t i = 0; i < perf["samples"].size(); ++i) {
      const auto& a = perf["samples"][i];
      const auto& b = ours["samples"][i];
      for (const char* key : {"timestamp", "pid", "tid", "comm"}) {
        ASSERT_EQ(b[key], a[key]) << recorder << " sample " << i << " " << key;
      }
      EXPECT_EQ(b.contains("cpu"), a.contains("cpu"));
      ASSERT_EQ(b["callchain"].size(), a["callchain"].size()) << recorder << " sample " << i;
      for (std::size_t f = 0; f < a["callchain"].size(); ++f) {
        const auto& x = a["callchain"][f];
        const auto& y = b["callchain"][f];
        ++frames;
        EXPECT_EQ(y["ip"], x["ip"]);
        if (!x.contains("symbol")) continue;
        std::string symbol = x["symbol"];
        if (symbol.starts_with("__pfx_")) continue;
        ++named;
        // perf 6.1 leaves some PLT stubs unnamed ("@plt") that perfscope names (X@plt).
        if (symbol == "@plt" && y.value("symbol", "").ends_with("@plt")) continue;
        EXPECT_EQ(y.value("symbol", ""), perfscope_name(symbol)) << y.dump();
        EXPECT_EQ(y.value("dso", ""), x.value("dso", "")) << y.dump();
      }
    }
    EXPECT_GT(named, frames / 2) << recorder;
  }
}

// Exact: sys_enter_getpid fires once per getpid, each sample with its field as libtraceevent
// prints it (perf 6.1 prints no tracepoint fields; later perfs print these).
TEST_F(DataConvertTest, TracepointFieldsAsLibtraceeventPrintsThem) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted";
  std::string data = dir_.path() + "/getpid.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-e", "syscalls:sys_enter_getpid", "-o", data,
                                     "--", work_helper, "getpid", "1000"});
  if (recorded.exit_status != 0) GTEST_SKIP() << "cannot record the tracepoint: " << recorded.err;
  auto ours = nlohmann::json::parse(pt::read_file(convert("perfscope", data)));
  ASSERT_EQ(ours["samples"].size(), 1000u);
  for (const auto& sample : ours["samples"]) {
    ASSERT_EQ(sample.value("__syscall_nr", ""), "39") << sample.dump();  // x86-64's getpid
  }
  auto perf = nlohmann::json::parse(pt::read_file(convert("perf", data)));
  EXPECT_EQ(perf["samples"].size(), 1000u);
}

TEST_F(DataConvertTest, PerfsRefusalsWithWhatToDo) {
  std::string data = dir_.path() + "/small.data";
  auto recorded =
      pt::run_perfscope({"record", "-q", "-o", data, "--", work_helper, "getpid", "10"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::string out = dir_.path() + "/exists.json";
  std::ofstream(out) << "keep";
  auto exists = pt::run_perfscope({"data", "convert", "--to-json", out, "-i", data});
  EXPECT_EQ(exists.exit_status, 1);
  EXPECT_NE(exists.err.find("--force"), std::string::npos) << exists.err;
  EXPECT_EQ(pt::read_file(out), "keep");
  auto ctf = pt::run_perfscope({"data", "convert", "--to-ctf", out, "-i", data});
  EXPECT_NE(ctf.exit_status, 0);
  EXPECT_NE(ctf.err.find("babeltrace"), std::string::npos) << ctf.err;
  auto neither = pt::run_perfscope({"data", "convert", "-i", data});
  EXPECT_NE(neither.exit_status, 0);
  EXPECT_NE(neither.err.find("--to-json"), std::string::npos) << neither.err;
  auto bare = pt::run_perfscope({"data"});
  EXPECT_NE(bare.exit_status, 0);
  EXPECT_NE(bare.err.find("convert"), std::string::npos) << bare.err;
  auto missing = pt::run_perfscope(
      {"data", "convert", "--to-json", dir_.path() + "/x.json", "-i", dir_.path() + "/none"});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("none"), std::string::npos) << missing.err;
}

}  // namespace
