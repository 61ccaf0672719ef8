// The full event grammar against the fake sysfs and tracefs trees in tests/core/data:
// pmu/term=value/ with split ranges and config1/2/3, aliases with scale and unit, bare aliases,
// hybrid expansion, tracepoint globs, kprobes, uprobes and vendor names through resolvers,
// errors with their caret positions, and the canonical string round trip of every form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_resolvers.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope_build_paths.hpp"

namespace pabi = perfscope::abi;
namespace flag = pabi::attr_flag;
using perfscope::canonical_event_string;
using perfscope::EventGroupSpec;
using perfscope::EventParseOptions;
using perfscope::EventSpec;
using perfscope::EventSpecError;
using perfscope::PmuRegistry;
using ::testing::HasSubstr;

namespace {

const std::string data_dir = PERFSCOPE_TEST_DATA_DIR;

class FakeSymbols final : public perfscope::SymbolOffsetResolver {
 public:
  perfscope::SymbolOffset file_offset(const std::string& path,
                                      std::string_view symbol) const override {
    last_path = path;
    if (symbol == "main") return {0x1000, {}};
    return {std::nullopt, "no function '" + std::string(symbol) + "' here"};
  }
  mutable std::string last_path;
};

class FakeVendor final : public perfscope::VendorEventResolver {
 public:
  perfscope::VendorEventLookup resolve(std::string_view name) const override {
    if (name == "INST_RETIRED.ANY" || name == "skl::INST_RETIRED.ANY") {
      perfscope::VendorEvent event;
      event.type = 4;
      event.config = 0xc0;
      event.canonical_name = "skl::INST_RETIRED:ANY";
      return {event, {}};
    }
    if (name == "BROKEN.EVENT") return {std::nullopt, "the umask needs a modifier"};
    return {};
  }
  std::string_view source() const override { return "fake"; }
};

class Grammar : public ::testing::Test {
 protected:
  void SetUp() override { use(plain); }
  void use(const PmuRegistry& registry) {
    options.pmus = &registry;
    options.tracefs_root = data_dir + "/fake_tracefs";
    options.symbols = &symbols;
    options.vendor = &vendor;
  }

  std::vector<EventGroupSpec> groups(const std::string& text) {
    return perfscope::parse_event_list(text, options);
  }
  std::vector<EventSpec> events(const std::string& text) {
    std::vector<EventSpec> all;
    for (auto& group : groups(text)) {
      for (auto& event : group.events) all.push_back(std::move(event));
    }
    return all;
  }
  EventSpec one(const std::string& text) {
    auto all = events(text);
    EXPECT_EQ(all.size(), 1u) << text;
    return all.at(0);
  }
  EventSpecError error(const std::string& text) {
    try {
      groups(text);
    } catch (const EventSpecError& caught) {
      return caught;
    }
    ADD_FAILURE() << "'" << text << "' parsed without error";
    return EventSpecError("", "", 0);
  }
  std::string canonical(const EventSpec& spec) {
    return canonical_event_string(spec, options.pmus);
  }

  PmuRegistry plain{data_dir + "/fake_sysfs/plain"};
  PmuRegistry hybrid{data_dir + "/fake_sysfs/hybrid"};
  FakeSymbols symbols;
  FakeVendor vendor;
  EventParseOptions options;
};

}  // namespace

TEST_F(Grammar, PmuTermsApplyFormatBitRanges) {
  auto spec = one("cpu/event=0x1a3,umask=0x2,edge,inv=0,cmask=3/");
  EXPECT_EQ(spec.attr.type(), 4u);
  EXPECT_EQ(spec.attr.config(), 0x1000000a3ULL | 0x200 | (1ULL << 18) | (3ULL << 24));
  EXPECT_EQ(spec.pmu, "cpu");
  EXPECT_EQ(spec.name, "cpu/event=0x1a3,umask=0x2,edge,inv=0,cmask=3/");
  EXPECT_EQ(spec.attr.raw().flags, 0u);

  auto words = one("cpu/remote,ldlat=0x30,fe=0x12,acr=7/");
  EXPECT_EQ(words.attr.config(), 0u);
  EXPECT_EQ(words.attr.raw().config1, 0x3001u);
  EXPECT_EQ(words.attr.raw().config2, 0x12u);
  EXPECT_EQ(words.attr.raw().config3, 7u);

  auto raw = one("cpu/config=0x1234,config1=5,config2=6,config3=7/");
  EXPECT_EQ(raw.attr.config(), 0x1234u);
  EXPECT_EQ(raw.attr.raw().config1, 5u);
  EXPECT_EQ(raw.attr.raw().config2, 6u);
  EXPECT_EQ(raw.attr.raw().config3, 7u);
  // A later term overrides the bits an earlier one set.
  EXPECT_EQ(one("cpu/config=0xffff,umask=1/").attr.config(), 0x01ffu);
  EXPECT_EQ(one("msr/event=0xffffffffffffffff/").attr.config(), ~0ULL);
  EXPECT_EQ(one("cpu//").attr.config(), 0u);
}

TEST_F(Grammar, SamplingAndNameTerms) {
  auto period = one("cpu/event=0x3c,period=1000,name=my-cycles/");
  EXPECT_EQ(period.attr.raw().sample_period_or_freq, 1000u);
  EXPECT_FALSE(period.attr.has(flag::freq));
  EXPECT_EQ(period.name, "my-cycles");
  EXPECT_EQ(period.text, "cpu/event=0x3c,period=1000,name=my-cycles/");

  auto freq = one("cpu/event=0x3c,freq=4000/");
  EXPECT_EQ(freq.attr.raw().sample_period_or_freq, 4000u);
  EXPECT_TRUE(freq.attr.has(flag::freq));

  auto fp = one("cpu/event=0x3c,call-graph=fp/");
  EXPECT_EQ(fp.call_graph, "fp");
  EXPECT_EQ(fp.attr.raw().sample_type, pabi::sample_format::callchain);

  auto dwarf = one("cpu/event=0x3c,call-graph=dwarf,stack-size=4096/");
  EXPECT_EQ(dwarf.attr.raw().sample_type, pabi::sample_format::callchain |
                                              pabi::sample_format::regs_user |
                                              pabi::sample_format::stack_user);
  EXPECT_EQ(dwarf.attr.raw().sample_stack_user, 4096u);
  EXPECT_NE(dwarf.attr.raw().sample_regs_user, 0u);

  // Generic events take the sampling terms too.
  auto cycles = one("cycles/period=100000/");
  EXPECT_EQ(cycles.attr.type(), 0u);
  EXPECT_EQ(cycles.attr.config(), 0u);
  EXPECT_EQ(cycles.attr.raw().sample_period_or_freq, 100000u);
  auto clock = one("task-clock/freq=99,name=tc/:u");
  EXPECT_EQ(clock.attr.type(), 1u);
  EXPECT_TRUE(clock.attr.has(flag::freq));
  EXPECT_EQ(clock.name, "tc");
  EXPECT_TRUE(clock.attr.has(flag::exclude_kernel));
}

TEST_F(Grammar, AliasesApplyTheirTermsAndCarryScaleAndUnit) {
  auto loads = one("cpu/mem-loads/");
  EXPECT_EQ(loads.attr.config(), 0xcdu | 0x100u);
  EXPECT_EQ(loads.attr.raw().config1, 3u << 8);
  EXPECT_EQ(loads.scale, 1.0);
  EXPECT_EQ(loads.unit, "");
  // Terms after the alias override its values.
  EXPECT_EQ(one("cpu/mem-loads,ldlat=5/").attr.raw().config1, 5u << 8);
  EXPECT_EQ(one("cpu/MEM-LOADS/").attr.config(), 0x1cdu);

  auto retiring = one("cpu/topdown-retiring/");
  EXPECT_EQ(retiring.attr.config(), 0x8000u);
  EXPECT_EQ(retiring.scale, 4.0);

  auto energy = one("power/energy-pkg/");
  EXPECT_EQ(energy.attr.type(), 11u);
  EXPECT_EQ(energy.attr.config(), 2u);
  EXPECT_DOUBLE_EQ(energy.scale, 2.3283064365386962890625e-10);
  EXPECT_EQ(energy.unit, "Joules");

  EXPECT_TRUE(one("uncore_imc_0/clockticks/").per_pkg);
  EXPECT_TRUE(one("uncore_imc_0/occupancy/").snapshot);

  // An alias with a '?' parameter needs the user's value.
  auto missing = error("cpu/offcore/");
  EXPECT_THAT(missing.what(), HasSubstr("needs a value for 'umask'"));
  EXPECT_EQ(missing.position(), 4u);
  EXPECT_EQ(one("cpu/offcore,umask=3/").attr.config(), 0x3b7u);
}

TEST_F(Grammar, BareAliasesOpenOnEveryPmuThatHasThem) {
  auto energy = one("energy-pkg");
  EXPECT_EQ(energy.attr.type(), 11u);
  EXPECT_EQ(energy.name, "power/energy-pkg/");
  EXPECT_EQ(energy.unit, "Joules");
  auto tsc = one("tsc:u");
  EXPECT_EQ(tsc.attr.type(), 9u);
  EXPECT_EQ(tsc.pmu, "msr");
  EXPECT_TRUE(tsc.attr.has(flag::exclude_kernel));

  auto reads = groups("cas_count_read");
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].events[0].attr.type(), 12u);
  EXPECT_EQ(reads[1].events[0].attr.type(), 13u);
  EXPECT_EQ(reads[0].events[0].attr.config(), 0x304u);
  EXPECT_EQ(reads[1].events[0].text, "uncore_imc_1/cas_count_read/");
  EXPECT_EQ(reads[1].events[0].unit, "MiB");
}

TEST_F(Grammar, ModifiersOnPmuEvents) {
  EXPECT_EQ(one("cpu/event=0x3c/u").attr.raw().flags, flag::exclude_kernel | flag::exclude_hv);
  EXPECT_EQ(one("cpu/event=0x3c/:k").attr.raw().flags, flag::exclude_user | flag::exclude_hv);
  EXPECT_EQ(one("cpu/event=0x3c/ppp").attr.precise_ip(), 3u);
  auto grouped = groups("{cpu/event=0x3c/,cpu/event=0xc0/:p}:u");
  ASSERT_EQ(grouped.size(), 1u);
  ASSERT_EQ(grouped[0].events.size(), 2u);
  EXPECT_EQ(grouped[0].events[0].text, "cpu/event=0x3c/:u");
  EXPECT_EQ(grouped[0].events[1].attr.precise_ip(), 1u);
  EXPECT_TRUE(grouped[0].events[1].attr.has(flag::exclude_kernel));
}

TEST_F(Grammar, HybridGenericEventsExpandPerCorePmu) {
  use(hybrid);
  auto cycles = groups("cycles");
  ASSERT_EQ(cycles.size(), 2u);
  EXPECT_EQ(cycles[0].events[0].name, "cpu_atom/cycles/");
  EXPECT_EQ(cycles[0].events[0].attr.type(), 0u);
  EXPECT_EQ(cycles[0].events[0].attr.config(), 10ULL << 32);
  EXPECT_EQ(cycles[1].events[0].attr.config(), 4ULL << 32);
  EXPECT_EQ(cycles[1].events[0].pmu, "cpu_core");

  auto misses = groups("L1-dcache-load-misses:u");
  ASSERT_EQ(misses.size(), 2u);
  EXPECT_EQ(misses[0].events[0].attr.config(), (10ULL << 32) | 0x10000);
  EXPECT_EQ(misses[0].events[0].text, "cpu_atom/L1-dcache-load-misses/:u");
  EXPECT_TRUE(misses[1].events[0].attr.has(flag::exclude_kernel));

  // A group counts on one PMU: one group per core PMU, software events stay with the first.
  auto group = groups("{cycles,instructions,task-clock}");
  ASSERT_EQ(group.size(), 2u);
  ASSERT_EQ(group[0].events.size(), 3u);
  ASSERT_EQ(group[1].events.size(), 2u);
  EXPECT_TRUE(group[1].braced);
  EXPECT_EQ(group[0].events[2].name, "task-clock");
  EXPECT_EQ(group[1].events[1].attr.config(), (4ULL << 32) | 1);

  EXPECT_EQ(groups("task-clock").size(), 1u);
  auto core_only = one("cpu_core/cycles/");
  EXPECT_EQ(core_only.attr.type(), 0u);
  EXPECT_EQ(core_only.attr.config(), 4ULL << 32);
  EXPECT_EQ(one("cpu_atom/event=0x3c/").attr.type(), 10u);
  auto sampled = events("cycles/period=5000/");
  ASSERT_EQ(sampled.size(), 2u);
  EXPECT_EQ(sampled[1].attr.raw().sample_period_or_freq, 5000u);
  EXPECT_EQ(sampled[1].attr.config(), 4ULL << 32);
}

TEST_F(Grammar, TracepointsAndGlobs) {
  auto exact = one("sched:sched_switch:k");
  EXPECT_EQ(exact.attr.type(), 2u);
  EXPECT_EQ(exact.attr.config(), 316u);
  EXPECT_EQ(exact.name, "sched:sched_switch");
  EXPECT_TRUE(exact.attr.has(flag::exclude_user));

  auto all = groups("sched:*");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].events[0].name, "sched:sched_process_exec");
  EXPECT_EQ(all[1].events[0].attr.config(), 316u);
  EXPECT_EQ(all[2].events[0].attr.config(), 318u);

  auto getters = events("syscalls:sys_enter_get*:u");
  ASSERT_EQ(getters.size(), 2u);
  EXPECT_EQ(getters[0].name, "syscalls:sys_enter_getpid");
  EXPECT_EQ(getters[1].name, "syscalls:sys_enter_getppid");
  EXPECT_EQ(getters[1].text, "syscalls:sys_enter_getppid:u");
  EXPECT_TRUE(getters[1].attr.has(flag::exclude_kernel));

  EXPECT_EQ(events("sys*:sys_*_getpid").size(), 2u);
  auto group = groups("{sched:sched_s*,cycles}");
  ASSERT_EQ(group.size(), 1u);
  EXPECT_EQ(group[0].events.size(), 2u);

  auto none = error("cycles,sched:nomatch*");
  EXPECT_EQ(none.position(), 7u);
  EXPECT_THAT(none.what(), HasSubstr("no tracepoint matches 'sched:nomatch*'"));
  auto typo = error("sched:sched_swich");
  EXPECT_THAT(typo.what(), HasSubstr("did you mean 'sched_switch'?"));
}

TEST_F(Grammar, Kprobes) {
  auto entry = one("kprobe:do_sys_open+0x10");
  EXPECT_EQ(entry.attr.type(), 7u);
  ASSERT_NE(entry.probe_target, nullptr);
  EXPECT_EQ(*entry.probe_target, "do_sys_open");
  EXPECT_EQ(entry.attr.raw().config1,
            reinterpret_cast<std::uintptr_t>(entry.probe_target->c_str()));
  EXPECT_EQ(entry.attr.raw().config2, 0x10u);
  EXPECT_EQ(entry.attr.config(), 0u);

  auto ret = one("kretprobe:vfs_read:u");
  EXPECT_EQ(ret.attr.config(), 1u);  // format/retprobe: config:0
  EXPECT_TRUE(ret.attr.has(flag::exclude_kernel));

  auto address = one("kprobe:0xffffffff81000000");
  EXPECT_EQ(address.attr.raw().config1, 0u);
  EXPECT_EQ(address.attr.raw().config2, 0xffffffff81000000u);

  // config1 keeps pointing at the name through copies and moves of the spec and its list.
  std::vector<EventGroupSpec> list = groups("kprobe:first_function,kprobe:second_function");
  std::vector<EventGroupSpec> moved = std::move(list);
  EventSpec copy = moved[1].events[0];
  moved.clear();
  EXPECT_STREQ(reinterpret_cast<const char*>(copy.attr.raw().config1), "second_function");

  EXPECT_THAT(error("kprobe").what(), HasSubstr("needs a place"));
  // "2+0" is no function (the fuzzer's find: its canonical "kprobe:2" read back as an address).
  auto digits = error("kprobe:2+0");
  EXPECT_EQ(digits.position(), 7u);
  EXPECT_THAT(digits.what(), HasSubstr("'2' is not a function name"));
  EXPECT_THAT(error("kprobe:0x10+4").what(), HasSubstr("kprobe:0xADDRESS, without an offset"));
  use(hybrid);
  auto no_pmu = error("cycles,kprobe:f");
  EXPECT_EQ(no_pmu.position(), 7u);
  EXPECT_THAT(no_pmu.what(), HasSubstr("no kprobe PMU"));
}

TEST_F(Grammar, UprobesWithOffsetsAndResolvedSymbols) {
  auto offset = one("uprobe:/proc/self/exe:0x1234");
  EXPECT_EQ(offset.attr.type(), 8u);
  EXPECT_STREQ(reinterpret_cast<const char*>(offset.attr.raw().config1), "/proc/self/exe");
  EXPECT_EQ(offset.attr.raw().config2, 0x1234u);
  EXPECT_EQ(offset.attr.config(), 0u);

  auto symbol = one("uretprobe:/proc/self/exe:main+0x10:u");
  EXPECT_EQ(symbols.last_path, "/proc/self/exe");
  EXPECT_EQ(symbol.attr.raw().config2, 0x1010u);
  EXPECT_EQ(symbol.attr.config(), 1u);
  EXPECT_TRUE(symbol.attr.has(flag::exclude_kernel));
  EXPECT_EQ(symbol.name, "uretprobe:/proc/self/exe:main+0x10");

  auto unknown = error("uprobe:/proc/self/exe:nothing");
  EXPECT_EQ(unknown.position(), 22u);
  EXPECT_THAT(unknown.what(), HasSubstr("no function 'nothing' here"));
  auto missing = error("uprobe:/no/such/file:main");
  EXPECT_EQ(missing.position(), 7u);
  EXPECT_THAT(missing.what(), HasSubstr("no such file '/no/such/file'"));
  EXPECT_THAT(error("uprobe:/proc/self/exe").what(), HasSubstr("needs a file and a place"));

  options.symbols = nullptr;  // and none installed in this test program
  auto unresolved = error("uprobe:/proc/self/exe:main");
  EXPECT_THAT(unresolved.what(), HasSubstr("install_elf_symbol_resolver"));
  EXPECT_EQ(one("uprobe:/proc/self/exe:4096").attr.raw().config2, 4096u);
}

TEST_F(Grammar, VendorNamesThroughTheResolver) {
  auto any = one("INST_RETIRED.ANY:u");
  EXPECT_EQ(any.attr.type(), 4u);
  EXPECT_EQ(any.attr.config(), 0xc0u);
  EXPECT_EQ(any.name, "INST_RETIRED.ANY");
  EXPECT_TRUE(any.attr.has(flag::exclude_kernel));
  EXPECT_EQ(one("skl::INST_RETIRED.ANY:k").attr.config(), 0xc0u);
  auto broken = error("cycles,BROKEN.EVENT");
  EXPECT_EQ(broken.position(), 7u);
  EXPECT_THAT(broken.what(), HasSubstr("fake: the umask needs a modifier"));
  options.vendor = nullptr;
  EXPECT_THAT(error("INST_RETIRED.ANY").what(), HasSubstr("unknown event 'INST_RETIRED.ANY'"));
}

TEST_F(Grammar, ErrorsPointAtTheOffendingCharacter) {
  auto pmu = error("cycles,cpuu/event=1/");
  EXPECT_EQ(pmu.position(), 7u);
  EXPECT_THAT(pmu.what(), HasSubstr("unknown PMU 'cpuu'; did you mean 'cpu'?"));
  EXPECT_THAT(pmu.with_caret(), HasSubstr("\n  cycles,cpuu/event=1/\n         ^"));

  auto term = error("cpu/evnt=1/");
  EXPECT_EQ(term.position(), 4u);
  EXPECT_THAT(term.what(), HasSubstr("unknown term 'evnt' for PMU 'cpu'; did you mean 'event'?"));
  EXPECT_THAT(term.what(), HasSubstr("event (config:0-7,32-35)"));
  auto alias_typo = error("cpu/mem-load/");
  EXPECT_THAT(alias_typo.what(), HasSubstr("did you mean 'mem-loads'?"));

  auto wide = error("cpu/umask=0x1ff/");
  EXPECT_EQ(wide.position(), 10u);
  EXPECT_STREQ(wide.what(), "value 0x1ff is too wide for term 'umask' (8 bits: config:8-15)");
  auto split = error("cpu/event=0x1000/");
  EXPECT_STREQ(split.what(),
               "value 0x1000 is too wide for term 'event' (12 bits: config:0-7,32-35)");
  EXPECT_EQ(error("cpu/edge=2/").position(), 9u);

  auto modifier = error("cpu/event=1/:q");
  EXPECT_EQ(modifier.position(), 13u);
  EXPECT_THAT(modifier.what(), HasSubstr("modifier 'q'"));
  EXPECT_EQ(error("cpu/event=1/uz").position(), 13u);

  auto unbalanced = error("{cpu/event=1/,cycles");
  EXPECT_EQ(unbalanced.position(), 0u);
  EXPECT_THAT(unbalanced.what(), HasSubstr("unbalanced '{'"));
  auto unterminated = error("cpu/event=1");
  EXPECT_EQ(unterminated.position(), 3u);
  EXPECT_THAT(unterminated.what(), HasSubstr("never closed"));
  EXPECT_EQ(error("cpu/event=/").position(), 10u);
  EXPECT_EQ(error("cpu/event=zz/").position(), 10u);
  EXPECT_EQ(error("cpu/event=1;/").position(), 10u);
  EXPECT_EQ(error("cpu/event=1/x").position(), 12u);
  EXPECT_THAT(error("cycles/umask=1/").what(), HasSubstr("a generic event takes period"));
  EXPECT_THAT(error("cpu/cycles,event=1/").what(), HasSubstr("takes no format terms"));
  EXPECT_THAT(error("cpu/period/").what(), HasSubstr("needs a value"));
  EXPECT_THAT(error("cpu/call-graph=stack/").what(), HasSubstr("fp, dwarf, lbr or no"));
  auto name = error("energy-pkgg");
  EXPECT_THAT(name.what(), HasSubstr("did you mean 'energy-pkg'?"));
}

TEST_F(Grammar, CanonicalStringsOfEveryForm) {
  struct Case {
    const char* written;
    const char* canonical;
  };
  const Case cases[] = {
      {"cycles", "cycles"},
      {"cpu-cycles:ku", "cycles:uk"},
      {"instructions:uH", "instructions:uH"},
      {"faults:GIDe", "page-faults:GIDe"},
      {"L1-data-load-miss:pp", "L1-dcache-load-misses:pp"},
      {"rff:k", "rff:k"},
      {"r1a2b:P", "r1a2b:ppp"},
      {"mem:0x1000/4:w:u", "mem:0x1000/4:w:u"},
      {"mem:4096", "mem:0x1000/8:rw"},
      {"sched:sched_switch:k", "sched:sched_switch:k"},
      {"cpu/umask=2,event=0x1a3/", "cpu/event=0x1a3,umask=0x2/"},
      {"cpu/mem-loads/u", "cpu/mem-loads/:u"},
      {"cpu/event=0xcd,umask=1,ldlat=3/", "cpu/mem-loads/"},
      {"cpu/event=0xcd,umask=1,ldlat=4/", "cpu/event=0xcd,ldlat=0x4,umask=0x1/"},
      {"cpu/remote,fe=1,acr=2/", "cpu/acr=0x2,fe=0x1,remote=0x1/"},
      {"cpu/config=0x1000000000000/", "cpu/config=0x1000000000000/"},
      {"cpu/event=0x3c,period=1000,call-graph=fp/", "cpu/event=0x3c,period=1000,call-graph=fp/"},
      {"cpu/slots/", "cpu/slots/"},
      {"cpu/instructions/k", "instructions:k"},
      {"cpu/event=0x3d,freq=99/S", "cpu/event=0x3d,freq=99/:S"},
      {"msr/tsc/", "msr/tsc/"},
      {"msr/event=0x5/", "msr/event=0x5/"},
      {"energy-pkg", "power/energy-pkg/"},
      {"uncore_imc_1/cas_count_read/", "uncore_imc_1/cas_count_read/"},
      {"cycles/period=100000/", "cycles/period=100000/"},
      {"task-clock/freq=99/", "task-clock/freq=99/"},
      {"kprobe:do_sys_open+0x10", "kprobe:do_sys_open+0x10"},
      {"kretprobe:vfs_read", "kretprobe:vfs_read"},
      {"kprobe:0xffffffff81000000:k", "kprobe:0xffffffff81000000:k"},
      {"uprobe:/proc/self/exe:0x1234:u", "uprobe:/proc/self/exe:0x1234:u"},
      {"uretprobe:/proc/self/exe:main", "uretprobe:/proc/self/exe:0x1000"},
      {"INST_RETIRED.ANY", "rc0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.written);
    auto spec = one(c.written);
    std::string text = canonical(spec);
    EXPECT_EQ(text, c.canonical);
    // The canonical string parses to the same attr (the probe's name pointer aside).
    auto again = one(text);
    auto a = spec.attr.raw(), b = again.attr.raw();
    if (spec.probe_target) {
      ASSERT_NE(again.probe_target, nullptr);
      EXPECT_EQ(*spec.probe_target, *again.probe_target);
      a.config1 = b.config1 = 0;
    }
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << text;
    EXPECT_EQ(canonical(again), text);
    EXPECT_EQ(spec.scale, again.scale);
    EXPECT_EQ(spec.unit, again.unit);
  }
}

TEST_F(Grammar, CanonicalStringsOfHybridCopies) {
  use(hybrid);
  auto copies = events("cycles:u");
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(canonical(copies[0]), "cpu_atom/cycles/:u");
  EXPECT_EQ(canonical(copies[1]), "cpu_core/cycles/:u");
  auto again = one(canonical(copies[1]));
  EXPECT_EQ(again.attr, copies[1].attr);
  auto sampled = events("instructions/period=7/");
  EXPECT_EQ(canonical(sampled[0]), "cpu_atom/instructions,period=7/");
  EXPECT_EQ(one("cpu_atom/instructions,period=7/").attr, sampled[0].attr);
}
