// CPU lists in the kernel's notation, both ways, and the errors for malformed ones.
#include "perfscope/core/cpu_list.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>

using perfscope::format_cpu_list;
using perfscope::parse_cpu_list;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_THAT(parse_cpu_list("0-3,8"), ElementsAre(0, 1, 2, 3, 8));
  EXPECT_THAT(parse_cpu_list("5"), ElementsAre(5));
  EXPECT_THAT(parse_cpu_list("10-11,0,2-2"), ElementsAre(0, 2, 10, 11));
  // Sorted and without duplicates, whatever the order written.
  EXPECT_THAT(parse_cpu_list("3,1,1,0-1"), ElementsAre(0, 1, 3));
}

TEST(CpuList, FormatsConsecutiveRuns) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_cpu_list({0, 2, 4}), "0,2,4");
  EXPECT_EQ(format_cpu_list({7}), "7");
  EXPECT_EQ(format_cpu_list({0, 1, 3, 4, 5, 9, 10}), "0-1,3-5,9-10");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(CpuList, RoundTrips) {
  for (const char* text : {"0-3,8", "0", "1,3,5-7", "0-127"}) {
    EXPECT_EQ(format_cpu_list(parse_cpu_list(text)), text);
  }
}

TEST(CpuList, ErrorsNameTheBadPart) {
  auto message = [](const char* text) -> std::string {
    try {
      parse_cpu_list(text);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    ADD_FAILURE() << "'" << text << "' parsed";
    return {};
  };
  EXPECT_THAT(message("0-3,x"), HasSubstr("bad CPU 'x'"));
  EXPECT_THAT(message("a-b"), HasSubstr("bad CPU 'a'"));
  EXPECT_THAT(message("3-1"), HasSubstr("runs backwards"));
  EXPECT_THAT(message("1-"), HasSubstr("bad CPU ''"));
  EXPECT_THAT(message("-1"), HasSubstr("bad CPU ''"));
  EXPECT_THAT(message("1.5"), HasSubstr("bad CPU '1.5'"));
  EXPECT_THAT(message(""), HasSubstr("empty"));
  EXPECT_THAT(message(","), HasSubstr("empty"));
}

TEST(CpuList, OnlineCpusMatchSysconf) {
  auto cpus = perfscope::online_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(static_cast<long>(cpus.size()), ::sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(cpus.front(), 0);
}
