// The generic event names: every perf name and alias maps to the kernel's type/config, hw-cache
// names encode id | op << 8 | result << 16, and generic_event_name() inverts the lookup.
#include "perfscope/core/event_names.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "perfscope/abi/perf_event_attr.hpp"

namespace pabi = perfscope::abi;
using perfscope::EventAttr;
using perfscope::generic_event_name;
using perfscope::lookup_generic_event;

namespace {

struct Expected {
  const char* name;
  std::uint32_t type;
  std::uint64_t config;
};

void expect_maps_to(const char* name, std::uint32_t type, std::uint64_t config) {
  SCOPED_TRACE(name);
  auto attr = lookup_generic_event(name);
  ASSERT_TRUE(attr.has_value());
  EXPECT_EQ(attr->type(), type);
  EXPECT_EQ(attr->config(), config);
}

}  // namespace

TEST(EventNames, EveryHardwareNameAndAlias) {
  const Expected table[] = {
      {"cycles", 0, 0},
      {"cpu-cycles", 0, 0},
      {"instructions", 0, 1},
      {"cache-references", 0, 2},
      {"cache-misses", 0, 3},
      {"branches", 0, 4},
      {"branch-instructions", 0, 4},
      {"branch-misses", 0, 5},
      {"bus-cycles", 0, 6},
      {"stalled-cycles-frontend", 0, 7},
      {"idle-cycles-frontend", 0, 7},
      {"stalled-cycles-backend", 0, 8},
      {"idle-cycles-backend", 0, 8},
      {"ref-cycles", 0, 9},
  };
  for (const auto& e : table) expect_maps_to(e.name, e.type, e.config);
  EXPECT_EQ(perfscope::hardware_event_names().size(), pabi::hardware_event_count);
}

TEST(EventNames, EverySoftwareNameAndAlias) {
  const Expected table[] = {
      {"cpu-clock", 1, 0},      {"task-clock", 1, 1},       {"page-faults", 1, 2},
      {"faults", 1, 2},         {"context-switches", 1, 3}, {"cs", 1, 3},
      {"cpu-migrations", 1, 4}, {"migrations", 1, 4},       {"minor-faults", 1, 5},
      {"major-faults", 1, 6},   {"alignment-faults", 1, 7}, {"emulation-faults", 1, 8},
      {"dummy", 1, 9},          {"bpf-output", 1, 10},      {"cgroup-switches", 1, 11},
  };
  for (const auto& e : table) expect_maps_to(e.name, e.type, e.config);
  EXPECT_EQ(perfscope::software_event_names().size(), pabi::software_event_count);
}

TEST(EventNames, HwCacheCanonicalNames) {
  expect_maps_to("L1-dcache-loads", 3, 0x0);
  expect_maps_to("L1-dcache-load-misses", 3, 0x10000);
  expect_maps_to("L1-dcache-stores", 3, 0x100);
  expect_maps_to("L1-icache-load-misses", 3, 0x10001);
  expect_maps_to("LLC-loads", 3, 0x2);
  expect_maps_to("LLC-stores", 3, 0x102);
  expect_maps_to("LLC-store-misses", 3, 0x10102);
  expect_maps_to("dTLB-loads", 3, 0x3);
  expect_maps_to("dTLB-load-misses", 3, 0x10003);
  expect_maps_to("iTLB-load-misses", 3, 0x10004);
  expect_maps_to("branch-loads", 3, 0x5);
  expect_maps_to("branch-load-misses", 3, 0x10005);
  expect_maps_to("node-prefetches", 3, 0x206);
  expect_maps_to("node-prefetch-misses", 3, 0x10206);
}

TEST(EventNames, HwCacheAlternateSpellings) {
  expect_maps_to("l1d-loads", 3, 0x0);
  expect_maps_to("l1-d-loads", 3, 0x0);
  expect_maps_to("L1-data-load-miss", 3, 0x10000);
  expect_maps_to("L1-data-read-misses", 3, 0x10000);
  expect_maps_to("l1i-load-misses", 3, 0x10001);
  expect_maps_to("L1-instruction-loads", 3, 0x1);
  expect_maps_to("L2-stores", 3, 0x102);
  expect_maps_to("LLC-write-miss", 3, 0x10102);
  expect_maps_to("d-tlb-loads", 3, 0x3);
  expect_maps_to("Data-TLB-store-misses", 3, 0x10103);
  expect_maps_to("i-tlb-loads", 3, 0x4);
  expect_maps_to("Instruction-TLB-load-misses", 3, 0x10004);
  expect_maps_to("bpu-loads", 3, 0x5);
  expect_maps_to("btb-load-misses", 3, 0x10005);
  expect_maps_to("branches-loads", 3, 0x5);
  expect_maps_to("LLC-prefetch", 3, 0x202);
  expect_maps_to("LLC-speculative-read-misses", 3, 0x10202);
  expect_maps_to("node-loads-refs", 3, 0x6);
  expect_maps_to("node-load-access", 3, 0x6);
  expect_maps_to("LLC-load-ops", 3, 0x2);
}

TEST(EventNames, UnknownAndMalformedNames) {
  for (const char* name :
       {"cyclez", "", "CYCLES", "L1-dcache", "L1-dcache-", "L1-dcache-loadz",
        "L1-dcache-load-missez", "L3-loads", "LLC-loads-misses-x", "dTLBloads", "task_clock"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(lookup_generic_event(name).has_value());
  }
}

TEST(EventNames, HwCacheNameListIsComplete) {
  auto names = perfscope::hw_cache_event_names();
  EXPECT_EQ(names.size(), 7u * 3u * 2u);
  std::set<std::uint64_t> configs;
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    auto attr = lookup_generic_event(name);
    ASSERT_TRUE(attr.has_value());
    EXPECT_EQ(attr->type(), 3u);
    configs.insert(attr->config());
  }
  EXPECT_EQ(configs.size(), names.size());  // every name is a different event
}

TEST(EventNames, GenericNameRoundTrips) {
  for (auto table : {perfscope::hardware_event_names(), perfscope::software_event_names()}) {
    for (const auto& entry : table) {
      SCOPED_TRACE(entry.name);
      auto attr = lookup_generic_event(entry.name);
      ASSERT_TRUE(attr.has_value());
      EXPECT_EQ(generic_event_name(attr->raw()), entry.name);
      if (!entry.alias.empty()) {
        // An alias comes back as the canonical name.
        EXPECT_EQ(generic_event_name(lookup_generic_event(entry.alias)->raw()), entry.name);
      }
    }
  }
  for (const auto& name : perfscope::hw_cache_event_names()) {
    EXPECT_EQ(generic_event_name(lookup_generic_event(name)->raw()), name);
  }
  EXPECT_EQ(generic_event_name(lookup_generic_event("l1d-load-miss")->raw()),
            "L1-dcache-load-misses");
}

TEST(EventNames, GenericNameOfRawBreakpointAndOthers) {
  EXPECT_EQ(generic_event_name(EventAttr::raw_event(0x1a2b).raw()), "r1a2b");
  EXPECT_EQ(
      generic_event_name(EventAttr::breakpoint(0x1000, 8, pabi::breakpoint_type::write).raw()),
      "mem:0x1000/8:w");
  EXPECT_EQ(
      generic_event_name(EventAttr::breakpoint(0xabc0, 4, pabi::breakpoint_type::read_write).raw()),
      "mem:0xabc0/4:rw");
  EXPECT_EQ(
      generic_event_name(EventAttr::breakpoint(0x4000, 8, pabi::breakpoint_type::execute).raw()),
      "mem:0x4000/8:x");
  EXPECT_EQ(generic_event_name(EventAttr::tracepoint(12).raw()), "");
  EXPECT_EQ(generic_event_name(EventAttr::dynamic_pmu(20, 1).raw()), "");
  EXPECT_EQ(generic_event_name(EventAttr{}.set_type(1).set_config(99).raw()), "");
  EXPECT_EQ(generic_event_name(EventAttr{}.set_type(3).set_config(0x30000).raw()), "");
  // A hybrid extended type in the upper config bits keeps the generic name.
  EXPECT_EQ(generic_event_name(EventAttr{}.set_type(0).set_config((8ULL << 32) | 1).raw()),
            "instructions");
}

TEST(EditDistance, Basics) {
  using perfscope::edit_distance;
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abcd"), 4u);
  EXPECT_EQ(edit_distance("cycles", "cycles"), 0u);
  EXPECT_EQ(edit_distance("cyclez", "cycles"), 1u);   // substitution
  EXPECT_EQ(edit_distance("cycle", "cycles"), 1u);    // insertion
  EXPECT_EQ(edit_distance("ccycles", "cycles"), 1u);  // deletion
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("sitting", "kitten"), 3u);  // symmetric
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
}
