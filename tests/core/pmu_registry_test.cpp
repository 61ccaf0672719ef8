// PmuRegistry against the fake sysfs trees in tests/core/data/fake_sysfs: types, format/ bit
// layouts (split ranges, single bits, config1/2/3), aliases with .scale/.unit/.per-pkg/.snapshot,
// cpumask, caps, hybrid core PMUs; and the format bit arithmetic with its overflow messages.
#include "perfscope/core/pmu_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "perfscope/sys/kernel_files.hpp"
#include "perfscope_build_paths.hpp"

using perfscope::apply_pmu_format;
using perfscope::parse_pmu_format;
using perfscope::PmuRegistry;
using ::testing::ElementsAre;

namespace {

const std::string plain_root = std::string(PERFSCOPE_TEST_DATA_DIR) + "/fake_sysfs/plain";
const std::string hybrid_root = std::string(PERFSCOPE_TEST_DATA_DIR) + "/fake_sysfs/hybrid";

perfscope::abi::PerfEventAttr empty_attr() { return {}; }

}  // namespace

TEST(PmuFormat, ParsesRangesSingleBitsAndWords) {
  auto split = parse_pmu_format("event", "config:0-7,32-35\n");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->word, 0u);
  ASSERT_EQ(split->ranges.size(), 2u);
  EXPECT_EQ(split->ranges[0].low, 0u);
  EXPECT_EQ(split->ranges[0].high, 7u);
  EXPECT_EQ(split->ranges[1].low, 32u);
  EXPECT_EQ(split->ranges[1].high, 35u);
  EXPECT_EQ(split->width(), 12u);
  EXPECT_EQ(split->mask(), 0xf000000ffULL);
  EXPECT_EQ(split->layout(), "config:0-7,32-35");

  auto bit = parse_pmu_format("remote", "config1:0");
  ASSERT_TRUE(bit.has_value());
  EXPECT_EQ(bit->word, 1u);
  EXPECT_EQ(bit->width(), 1u);
  EXPECT_EQ(bit->layout(), "config1:0");
  EXPECT_EQ(parse_pmu_format("fe", "config2:0-23")->word, 2u);
  EXPECT_EQ(parse_pmu_format("acr", "config3:0-7")->word, 3u);
  EXPECT_EQ(parse_pmu_format("all", "config:0-63")->width(), 64u);

  for (const char* bad : {"", "config", "config4:0", "config:", "config:7-0", "config:0-64",
                          "config:a", "config:1,", "bogus:0-3"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_pmu_format("x", bad).has_value());
  }
}

TEST(PmuFormat, SplitRangeFillsLowRangeFirst) {
  auto field = *parse_pmu_format("event", "config:0-7,32-35");
  auto attr = empty_attr();
  EXPECT_EQ(apply_pmu_format(field, 0x1a3, attr), "");
  // Low 8 bits (0xa3) into bits 0-7, the next 4 bits (0x1) into bits 32-35.
  EXPECT_EQ(attr.config, 0x1000000a3ULL);
  EXPECT_EQ(field.extract(attr), 0x1a3u);
  // Applying again replaces the old value, and leaves other bits alone.
  attr.config |= 0xff00;
  EXPECT_EQ(apply_pmu_format(field, 0xfff, attr), "");
  EXPECT_EQ(attr.config, 0xf0000ffffULL);
  EXPECT_EQ(apply_pmu_format(field, 0, attr), "");
  EXPECT_EQ(attr.config, 0xff00u);
}

TEST(PmuFormat, ConfigWordsOneTwoThree) {
  auto attr = empty_attr();
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("remote", "config1:0"), 1, attr), "");
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("ldlat", "config1:8-23"), 0xbeef, attr), "");
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("fe", "config2:0-23"), 0x123456, attr), "");
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("acr", "config3:0-7"), 0x5a, attr), "");
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("all", "config:0-63"), ~0ULL, attr), "");
  EXPECT_EQ(attr.config, ~0ULL);
  EXPECT_EQ(attr.config1, 0xbeef01u);
  EXPECT_EQ(attr.config2, 0x123456u);
  EXPECT_EQ(attr.config3, 0x5au);
}

TEST(PmuFormat, ValueTooWideNamesTheTermAndItsBits) {
  auto attr = empty_attr();
  auto umask = *parse_pmu_format("umask", "config:8-15");
  EXPECT_EQ(apply_pmu_format(umask, 0x1ff, attr),
            "value 0x1ff is too wide for term 'umask' (8 bits: config:8-15)");
  EXPECT_EQ(attr.config, 0u);  // nothing written
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("edge", "config:18"), 2, attr),
            "value 0x2 is too wide for term 'edge' (1 bit: config:18)");
  EXPECT_EQ(apply_pmu_format(*parse_pmu_format("event", "config:0-7,32-35"), 0x1000, attr),
            "value 0x1000 is too wide for term 'event' (12 bits: config:0-7,32-35)");
  EXPECT_EQ(apply_pmu_format(umask, 0xff, attr), "");
}

TEST(PmuRegistryFake, TypesFormatAndCaps) {
  PmuRegistry registry(plain_root);
  EXPECT_THAT(registry.names(),
              ElementsAre("breakpoint", "cpu", "kprobe", "msr", "power", "software", "tracepoint",
                          "uncore_imc_0", "uncore_imc_1", "uprobe"));
  const auto* cpu = registry.find("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->type, 4u);
  EXPECT_TRUE(cpu->core);
  ASSERT_EQ(cpu->format.size(), 9u);
  EXPECT_EQ(cpu->find_term("event")->layout(), "config:0-7,32-35");
  EXPECT_EQ(cpu->find_term("remote")->layout(), "config1:0");
  EXPECT_EQ(cpu->find_term("fe")->word, 2u);
  EXPECT_EQ(cpu->find_term("acr")->word, 3u);
  EXPECT_EQ(cpu->find_term("nope"), nullptr);
  EXPECT_EQ(cpu->caps.at("max_precise"), "3");
  EXPECT_EQ(cpu->caps.at("branches"), "32");
  EXPECT_TRUE(cpu->cpumask.empty());
  EXPECT_EQ(registry.find("nope"), nullptr);
  EXPECT_EQ(registry.find_by_type(9)->name, "msr");
  EXPECT_EQ(registry.find_by_type(99), nullptr);
  EXPECT_FALSE(registry.hybrid());
  ASSERT_EQ(registry.core_pmus().size(), 1u);
  EXPECT_EQ(registry.core_pmus()[0]->name, "cpu");
  EXPECT_EQ(registry.all().size(), 10u);
}

TEST(PmuRegistryFake, AliasesWithScaleUnitPerPkgSnapshot) {
  PmuRegistry registry(plain_root);
  const auto* cpu = registry.find("cpu");
  ASSERT_NE(cpu, nullptr);
  const auto* loads = cpu->find_alias("mem-loads");
  ASSERT_NE(loads, nullptr);
  EXPECT_EQ(loads->terms, "event=0xcd,umask=0x1,ldlat=3");
  EXPECT_FALSE(loads->scale.has_value());
  EXPECT_EQ(cpu->find_alias("MEM-LOADS"), loads);  // case-insensitive, as perf
  EXPECT_EQ(*cpu->find_alias("topdown-retiring")->scale, 4.0);
  // The .scale, .unit files are attributes of an alias, not aliases themselves.
  EXPECT_EQ(cpu->find_alias("topdown-retiring.scale"), nullptr);
  EXPECT_EQ(cpu->aliases.size(), 6u);

  const auto* power = registry.find("power");
  const auto* energy = power->find_alias("energy-pkg");
  ASSERT_NE(energy, nullptr);
  EXPECT_DOUBLE_EQ(*energy->scale, 2.3283064365386962890625e-10);
  EXPECT_EQ(energy->unit, "Joules");
  EXPECT_EQ(power->cpumask, "0");
  EXPECT_FALSE(power->core);

  const auto* imc = registry.find("uncore_imc_1");
  EXPECT_EQ(imc->type, 13u);
  EXPECT_TRUE(imc->find_alias("clockticks")->per_pkg);
  EXPECT_FALSE(imc->find_alias("clockticks")->snapshot);
  EXPECT_TRUE(imc->find_alias("occupancy")->snapshot);
  EXPECT_EQ(imc->find_alias("cas_count_read")->unit, "MiB");
  EXPECT_DOUBLE_EQ(*imc->find_alias("cas_count_read")->scale, 6.103515625e-5);
}

// Two aliases differing only in case (sysfs allows it; the sysfs_format fuzzer made one): each
// name finds its own alias, and another spelling the first of them.
TEST(PmuRegistryFake, AnAliasSpelledExactlyComesFirst) {
  perfscope::Pmu pmu;
  perfscope::PmuAlias upper, lower;
  upper.name = "Energy-pkg";
  lower.name = "energy-pkg";
  lower.scale = 2.0;
  pmu.aliases = {upper, lower};
  EXPECT_EQ(pmu.find_alias("Energy-pkg"), &pmu.aliases[0]);
  EXPECT_EQ(pmu.find_alias("energy-pkg"), &pmu.aliases[1]);
  EXPECT_EQ(pmu.find_alias("ENERGY-PKG"), &pmu.aliases[0]);
}

TEST(PmuRegistryFake, HybridCorePmus) {
  PmuRegistry registry(hybrid_root);
  EXPECT_TRUE(registry.hybrid());
  auto core = registry.core_pmus();
  ASSERT_EQ(core.size(), 2u);
  EXPECT_EQ(core[0]->name, "cpu_atom");
  EXPECT_EQ(core[0]->type, 10u);
  EXPECT_EQ(core[0]->cpus, "8-15");
  EXPECT_EQ(core[1]->name, "cpu_core");
  EXPECT_EQ(core[1]->cpus, "0-7");
  EXPECT_EQ(core[1]->caps.at("pmu_name"), "core");
}

TEST(PmuRegistrySystem, MatchesSysfs) {
  const auto& registry = PmuRegistry::system();
  const auto* software = registry.find("software");
  if (!software) GTEST_SKIP() << "no software PMU in sysfs (sysfs not mounted?)";
  EXPECT_EQ(software->type, 1u);
  EXPECT_EQ(registry.find("tracepoint")->type, 2u);
  for (const auto* pmu : registry.all()) {
    SCOPED_TRACE(pmu->name);
    auto type = perfscope::sys::read_integer_file(registry.root() + "/" + pmu->name + "/type");
    ASSERT_TRUE(type.has_value());
    EXPECT_EQ(pmu->type, static_cast<std::uint32_t>(*type));
    EXPECT_EQ(pmu->format.size(),
              perfscope::sys::list_directory(registry.root() + "/" + pmu->name + "/format").size());
  }
}
