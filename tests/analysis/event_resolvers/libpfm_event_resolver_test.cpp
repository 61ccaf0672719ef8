// LibpfmEventResolver with LIBPFM_FORCE_PMU=skl (this machine's CPU is unknown to libpfm4 4.13):
// Intel event names encode to the raw event|umask<<8 of the SDM, and the parser takes them.
#include "perfscope/analysis/event_resolvers/libpfm_event_resolver.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event_spec.hpp"

using perfscope::LibpfmEventResolver;
using ::testing::HasSubstr;

namespace {

// libpfm reads LIBPFM_FORCE_PMU once, at its initialization: before any test resolves a name.
const bool forced = ::setenv("LIBPFM_FORCE_PMU", "skl", 1) == 0;

}  // namespace

TEST(LibpfmEventResolver, EncodesSkylakeEvents) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "libpfm4's Skylake tables exist only in x86 builds";
#endif
  ASSERT_TRUE(forced);
  LibpfmEventResolver resolver;
  struct Expected {
    const char* name;
    std::uint64_t config;  // event | umask << 8, Intel SDM volume 3B, Skylake
  };
  const Expected table[] = {
      {"INST_RETIRED.ANY_P", 0x00c0},
      {"BR_INST_RETIRED.ALL_BRANCHES", 0x00c4},
      {"BR_MISP_RETIRED.ALL_BRANCHES", 0x00c5},
      {"MEM_LOAD_RETIRED.L1_HIT", 0x01d1},
      {"skl::MEM_LOAD_RETIRED.L3_MISS", 0x20d1},
  };
  for (const auto& e : table) {
    SCOPED_TRACE(e.name);
    auto lookup = resolver.resolve(e.name);
    ASSERT_TRUE(lookup.event.has_value()) << lookup.error;
    EXPECT_EQ(lookup.event->type, 4u);  // PERF_TYPE_RAW
    EXPECT_EQ(lookup.event->config & 0xffff, e.config);
    EXPECT_FALSE(lookup.event->canonical_name.empty());
  }
  EXPECT_FALSE(resolver.resolve("NO_SUCH_EVENT.ANY").event.has_value());
  EXPECT_TRUE(resolver.resolve("NO_SUCH_EVENT.ANY").error.empty());
}

TEST(LibpfmEventResolver, ParserTakesVendorNamesWithModifiers) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "libpfm4's Skylake tables exist only in x86 builds";
#endif
  ASSERT_TRUE(forced);
  LibpfmEventResolver resolver;
  perfscope::EventParseOptions options;
  options.vendor = &resolver;
  auto groups =
      perfscope::parse_event_list("INST_RETIRED.ANY_P:u,{BR_MISP_RETIRED.ALL_BRANCHES}", options);
  ASSERT_EQ(groups.size(), 2u);
  const auto& any = groups[0].events[0];
  EXPECT_EQ(any.attr.type(), 4u);
  EXPECT_EQ(any.attr.config() & 0xffff, 0x00c0u);
  EXPECT_TRUE(any.attr.has(perfscope::abi::attr_flag::exclude_kernel));
  EXPECT_EQ(any.name, "INST_RETIRED.ANY_P");
  EXPECT_EQ(groups[1].events[0].attr.config() & 0xffff, 0x00c5u);
  auto error_of = [&](const char* text) -> std::string {
    try {
      perfscope::parse_event_list(text, options);
    } catch (const perfscope::EventSpecError& error) {
      return error.what();
    }
    ADD_FAILURE() << text << " parsed";
    return {};
  };
  // A known event with an unknown umask: libpfm4's reason; an unknown name: the parser's.
  EXPECT_THAT(error_of("INST_RETIRED.ANY_PP"),
              HasSubstr("libpfm4: 'INST_RETIRED.ANY_PP' cannot be encoded"));
  EXPECT_THAT(error_of("NO_SUCH_EVENT.ANY"), HasSubstr("unknown event 'NO_SUCH_EVENT.ANY'"));
}
