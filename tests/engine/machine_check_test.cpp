#include "perfscope/engine/machine_check.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace perfscope {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

class MachineCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { report_ = new MachineReport(check_machine()); }
  static void TearDownTestSuite() {
    delete report_;
    report_ = nullptr;
  }
  static const MachineCheck& check(const std::string& id) {
    const MachineCheck* found = report_->find(id);
    if (!found) throw std::runtime_error("no check " + id);
    return *found;
  }
  static MachineReport* report_;
};
MachineReport* MachineCheckTest::report_ = nullptr;

TEST_F(MachineCheckTest, ParanoidValueIsTheSysctl) {
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  ASSERT_TRUE(paranoid.has_value()) << "no /proc/sys/kernel/perf_event_paranoid";
  const auto& paranoid_check = check("perf_event_paranoid");
  EXPECT_TRUE(starts_with(paranoid_check.value, std::to_string(*paranoid) + " ("))
      << paranoid_check.value;
  EXPECT_NE(paranoid_check.status, CheckStatus::info);
}

TEST_F(MachineCheckTest, SoftwareEventsWork) {
  const auto& software = check("software_events");
  EXPECT_EQ(software.status, CheckStatus::ok) << software.value << "\n" << software.explanation;
  EXPECT_NE(software.value.find("task-clock counted"), std::string::npos) << software.value;
}

TEST_F(MachineCheckTest, HardwareCheckAgreesWithOpeningOneHere) {
  const auto& hardware = check("hardware_events");
  bool available = testing::hardware_counters_available();
  EXPECT_EQ(hardware.status != CheckStatus::fail, available) << hardware.value;
  EXPECT_EQ(report_->hardware_counters, hardware.status == CheckStatus::ok);
  if (hardware.status == CheckStatus::ok) {
    EXPECT_NE(hardware.value.find("instructions:u counted"), std::string::npos);
    // The user page was mapped from the hardware event, and x86 and arm64 publish the width.
    EXPECT_TRUE(report_->user_page.mapped);
    EXPECT_TRUE(report_->user_page.from_hardware_event);
    EXPECT_GE(report_->user_page.pmc_width, 32u);
  } else {
    EXPECT_FALSE(hardware.fix.empty());
  }
}

TEST_F(MachineCheckTest, PmusAreTheSysfsDevicesWithTheirFixedTypes) {
  auto names = sys::list_directory(std::string(sys::pmu_devices_dir));
  ASSERT_EQ(report_->pmus.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& pmu = report_->pmus[i];
    EXPECT_EQ(pmu.name, names[i]);
    // Types fixed by the ABI (PERF_TYPE_SOFTWARE, _TRACEPOINT, _BREAKPOINT).
    if (pmu.name == "software") {
      EXPECT_EQ(pmu.type, 1);
    }
    if (pmu.name == "tracepoint") {
      EXPECT_EQ(pmu.type, 2);
    }
    if (pmu.name == "breakpoint") {
      EXPECT_EQ(pmu.type, 5);
    }
    if (pmu.name == "cpu") {
      EXPECT_TRUE(pmu.core);
    }
    if (pmu.name == "software") {
      EXPECT_FALSE(pmu.core);
    }
  }
}

TEST(AuxTracingPmus, KnownByTheirNamesAsPerfKnowsThem) {
  for (const char* name : {"intel_pt", "intel_bts", "arm_spe_0", "cs_etm", "hisi_ptt0_2"}) {
    EXPECT_TRUE(perfscope::is_aux_tracing_pmu(name)) << name;
  }
  for (const char* name : {"cpu", "software", "armv8_pmuv3_0", "uncore_imc_0", "intel_cqm"}) {
    EXPECT_FALSE(perfscope::is_aux_tracing_pmu(name)) << name;
  }
}

// The AUX check lists exactly the AUX PMUs sysfs has (none on most virtual machines).
TEST_F(MachineCheckTest, AuxTracingListsTheAuxPmus) {
  const auto* aux = report_->find("aux_tracing");
  ASSERT_NE(aux, nullptr);
  EXPECT_EQ(aux->status, perfscope::CheckStatus::info);
  std::vector<std::string> expected;
  for (const auto& pmu : report_->pmus) {
    if (perfscope::is_aux_tracing_pmu(pmu.name)) expected.push_back(pmu.name);
  }
  if (expected.empty()) {
    EXPECT_EQ(aux->value, "no AUX-area PMU");
  }
  for (const auto& name : expected) {
    EXPECT_NE(aux->value.find(name + "="), std::string::npos) << aux->value;
  }
}

TEST_F(MachineCheckTest, BreakpointCountIsExactWhenItOpens) {
  const auto& breakpoints = check("breakpoints");
  if (breakpoints.status == CheckStatus::fail) {
    GTEST_SKIP() << "breakpoints do not open here: " << breakpoints.value;
  }
  // Where the debug registers never fire (some virtual machines), the check says so.
  if (!testing::hardware_breakpoints_problem().empty()) {
    EXPECT_NE(breakpoints.status, CheckStatus::ok);
    EXPECT_EQ(breakpoints.value, "3 writes to a watched variable counted 0");
    return;
  }
  EXPECT_EQ(breakpoints.status, CheckStatus::ok);
  EXPECT_EQ(breakpoints.value, "3 writes to a watched variable counted 3");
}

TEST_F(MachineCheckTest, TracepointsWorkForRoot) {
  if (!testing::running_as_root() || !testing::tracefs_available()) {
    GTEST_SKIP() << "needs root and tracefs";
  }
  const auto& tracepoints = check("tracepoints");
  EXPECT_EQ(tracepoints.status, CheckStatus::ok) << tracepoints.value;
}

TEST_F(MachineCheckTest, SysctlValuesAreReported) {
  if (auto watchdog = sys::read_sysctl("nmi_watchdog")) {
    const auto& nmi = check("nmi_watchdog");
    EXPECT_TRUE(starts_with(nmi.value, std::to_string(*watchdog) + " ")) << nmi.value;
    EXPECT_EQ(nmi.status, *watchdog == 0 ? CheckStatus::ok : CheckStatus::warn);
  }
  if (auto restrict_level = sys::read_sysctl("kptr_restrict")) {
    EXPECT_TRUE(starts_with(check("kptr_restrict").value, std::to_string(*restrict_level) + ";"));
  }
  if (auto rate = sys::read_sysctl("perf_event_max_sample_rate")) {
    EXPECT_EQ(check("perf_event_max_sample_rate").value, std::to_string(*rate) + " Hz");
  }
  auto files = sys::open_files_limit();
  EXPECT_NE(check("open_files").value.find("soft " + std::to_string(files.soft)),
            std::string::npos);
  auto cgroup = sys::cgroup2_root();
  EXPECT_EQ(check("cgroup2").status, cgroup ? CheckStatus::ok : CheckStatus::warn);
}

TEST_F(MachineCheckTest, EveryCheckIsCompleteAndProblemsCarryAFix) {
  std::set<std::string> ids;
  for (const auto& c : report_->checks) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
    EXPECT_FALSE(c.title.empty()) << c.id;
    EXPECT_FALSE(c.value.empty()) << c.id;
    EXPECT_FALSE(c.explanation.empty()) << c.id;
    if (c.status == CheckStatus::warn || c.status == CheckStatus::fail) {
      EXPECT_FALSE(c.fix.empty()) << c.id << " is " << check_status_name(c.status)
                                  << " without a fix";
    }
  }
  for (const char* id : {"kernel", "capabilities", "perf_event_paranoid", "pmus", "hardware_events",
                         "sampling", "call_graphs", "software_events", "tracepoints", "breakpoints",
                         "user_counter_reads", "kptr_restrict", "nmi_watchdog",
                         "perf_event_max_sample_rate", "locked_memory", "open_files", "cgroup2"}) {
    EXPECT_TRUE(ids.count(id)) << "missing check " << id;
  }
}

// record -g and --call-graph dwarf sample user registers and stack copies: this process may.
TEST_F(MachineCheckTest, CallGraphsWithStackCopiesSampleHere) {
  const auto& graphs = check("call_graphs");
  EXPECT_EQ(graphs.status, CheckStatus::ok) << graphs.value;
  EXPECT_NE(graphs.explanation.find("record -g: frame pointers"), std::string::npos);
}

TEST_F(MachineCheckTest, SummaryAgreesWithTheChecks) {
  const auto& sampling = check("sampling");
  if (sampling.status == CheckStatus::ok) {
    EXPECT_EQ(report_->sampling, "hardware (cycles)");
  }
  if (sampling.status == CheckStatus::warn) {
    EXPECT_EQ(report_->sampling, "software only (cpu-clock)");
  }
  if (sampling.status == CheckStatus::fail) {
    EXPECT_EQ(report_->sampling, "no");
  }
  // Software sampling works everywhere perfscope runs, so sampling never fails outright here.
  EXPECT_NE(sampling.status, CheckStatus::fail) << sampling.value;
  EXPECT_TRUE(std::set<std::string>({"counters and time", "counters only", "time only", "no"})
                  .count(report_->user_space_reads))
      << report_->user_space_reads;
  bool counters = report_->user_space_reads.rfind("counters", 0) == 0;
  EXPECT_EQ(counters, check("user_counter_reads").status == CheckStatus::ok);
  if (counters) {
    EXPECT_NE(report_->user_page.index, 0u);
  }
}

}  // namespace
}  // namespace perfscope
