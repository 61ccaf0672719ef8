// The lab test binary's main: GoogleTest, plus one closing line on the serial console that
// scripts/pmu-lab turns into the lab's pass/fail ("pmu-lab-tests: N passed, M failed, K skipped").
#include <gtest/gtest.h>

#include <cstdio>

namespace {

class SummaryLine : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& unit_test) override {
    std::printf("pmu-lab-tests: %d passed, %d failed, %d skipped\n",
                unit_test.successful_test_count(), unit_test.failed_test_count(),
                unit_test.skipped_test_count());
    std::fflush(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new SummaryLine);
  return RUN_ALL_TESTS();
}
