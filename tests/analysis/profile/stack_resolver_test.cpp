// StackResolver on synthesized call chains: every context marker (user, kernel, hv, guest,
// guest kernel, guest user) and the modes of the ips after it, return addresses, DWARF samples
// taking their user part from the unwinder, and the naming of ips through a fake kallsyms, a
// perf-PID.map, the test program's own symbol table, the vDSO, [vsyscall] and unmapped memory.
#include "perfscope/analysis/profile/stack_resolver.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "support/test_support.hpp"

// A function of this program to name through its own symbol table.
extern "C" __attribute__((noinline)) int stack_resolver_test_marker(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace perfscope {
namespace {

namespace sf = abi::sample_format;
namespace cc = abi::callchain_context;
namespace misc = abi::record_misc;
using testing::TempDir;

constexpr std::uint32_t pid = 4242;

// A PERF_RECORD_MMAP2 (no sample_id trailer) as the kernel lays it out.
std::vector<std::byte> mmap2_record(std::uint32_t process, std::uint64_t start,
                                    std::uint64_t length, std::uint64_t pgoff,
                                    const std::string& filename,
                                    std::uint16_t cpumode = misc::user) {
  struct Body {
    std::uint32_t pid, tid;
    std::uint64_t addr, len, pgoff;
    std::uint32_t maj, min;
    std::uint64_t ino, ino_generation;
    std::uint32_t prot, flags;
  } body{process, process, start, length, pgoff, 0, 0, 0, 0, 5, 2};
  std::size_t name_size = (filename.size() + 1 + 7) / 8 * 8;
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader) + sizeof body + name_size);
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::mmap2), cpumode,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  std::memcpy(bytes.data() + sizeof header, &body, sizeof body);
  std::memcpy(bytes.data() + sizeof header + sizeof body, filename.data(), filename.size());
  return bytes;
}

void feed(StackResolver& resolver, const std::vector<std::byte>& bytes) {
  RecordView view;
  std::memcpy(&view.header, bytes.data(), sizeof view.header);
  view.bytes = bytes;
  resolver.observe(view, ParseConfig{});
}

SampleRecord chain_sample(std::uint64_t ip, const std::vector<std::uint64_t>& chain) {
  SampleRecord sample;
  sample.fields = sf::ip | sf::tid | sf::callchain;
  sample.ip = ip;
  sample.pid = sample.tid = pid;
  sample.callchain = chain;
  return sample;
}

std::vector<StackAddress> walk(StackResolver& resolver, const SampleRecord& sample,
                               std::uint16_t cpumode) {
  std::vector<StackAddress> out;
  resolver.walk(sample, cpumode, out);
  return out;
}

void expect_address(const StackAddress& address, std::uint64_t ip, std::uint16_t cpumode,
                    bool return_address) {
  EXPECT_EQ(address.ip, ip);
  EXPECT_EQ(address.cpumode, cpumode) << std::hex << ip;
  EXPECT_EQ(address.return_address, return_address) << std::hex << ip;
}

TEST(StackResolverTest, KernelAndUserMarkersSwitchModesAndStartNewContexts) {
  StackResolver resolver;
  std::vector<std::uint64_t> chain = {cc::kernel, 0xffffffff81000150, 0xffffffff81000230,
                                      cc::user,   0x401010,           0x402020};
  auto ips = walk(resolver, chain_sample(0xffffffff81000150, chain), misc::kernel);
  ASSERT_EQ(ips.size(), 4u);
  expect_address(ips[0], 0xffffffff81000150, misc::kernel, false);
  expect_address(ips[1], 0xffffffff81000230, misc::kernel, true);
  expect_address(ips[2], 0x401010, misc::user, false);  // the first of its context: the user pc
  expect_address(ips[3], 0x402020, misc::user, true);
  EXPECT_EQ(ips[3].lookup(), 0x40201fu);
  EXPECT_EQ(ips[2].lookup(), 0x401010u);
}

TEST(StackResolverTest, HypervisorAndGuestMarkers) {
  StackResolver resolver;
  std::vector<std::uint64_t> chain = {cc::hv,         0x1000,           0x1100,
                                      cc::guest,      cc::guest_kernel, 0xffff8000,
                                      cc::guest_user, 0x7000,           0x7100};
  auto ips = walk(resolver, chain_sample(0x1000, chain), misc::hypervisor);
  ASSERT_EQ(ips.size(), 5u);
  expect_address(ips[0], 0x1000, misc::hypervisor, false);
  expect_address(ips[1], 0x1100, misc::hypervisor, true);
  // PERF_CONTEXT_GUEST names no mode: the GUEST_KERNEL after it does.
  expect_address(ips[2], 0xffff8000, misc::guest_kernel, false);
  expect_address(ips[3], 0x7000, misc::guest_user, false);
  expect_address(ips[4], 0x7100, misc::guest_user, true);
  EXPECT_TRUE(is_kernel_cpumode(misc::guest_kernel));
  EXPECT_FALSE(is_kernel_cpumode(misc::guest_user));
  EXPECT_FALSE(is_kernel_cpumode(misc::hypervisor));
}

TEST(StackResolverTest, EntriesBeforeTheFirstMarkerTakeTheSamplesMode) {
  StackResolver resolver;
  std::vector<std::uint64_t> chain = {0x401010, 0x402020, cc::kernel, 0xffffffff81000150};
  auto ips = walk(resolver, chain_sample(0x401010, chain), misc::user);
  ASSERT_EQ(ips.size(), 3u);
  expect_address(ips[0], 0x401010, misc::user, false);
  expect_address(ips[1], 0x402020, misc::user, true);
  expect_address(ips[2], 0xffffffff81000150, misc::kernel, false);
}

TEST(StackResolverTest, SamplesWithoutChainsAreTheirIp) {
  StackResolver resolver;
  SampleRecord sample = chain_sample(0x401010, {});
  sample.fields &= ~sf::callchain;
  auto ips = walk(resolver, sample, misc::user);
  ASSERT_EQ(ips.size(), 1u);
  expect_address(ips[0], 0x401010, misc::user, false);

  // An empty chain (only markers) is the ip too.
  std::vector<std::uint64_t> markers = {cc::kernel, cc::user};
  ips = walk(resolver, chain_sample(0xffffffff81000150, markers), misc::kernel);
  ASSERT_EQ(ips.size(), 1u);
  expect_address(ips[0], 0xffffffff81000150, misc::kernel, false);

  // Call chains off: the leaf alone.
  StackResolverOptions options;
  options.callchains = false;
  StackResolver leaf_only(options);
  std::vector<std::uint64_t> chain = {cc::user, 0x401010, 0x402020};
  ips = walk(leaf_only, chain_sample(0x401010, chain), misc::user);
  ASSERT_EQ(ips.size(), 1u);
  expect_address(ips[0], 0x401010, misc::user, false);
}

TEST(StackResolverTest, DwarfSamplesWithoutRegistersUseTheRecordedUserFrames) {
  StackResolver resolver;
  std::vector<std::uint64_t> chain = {cc::kernel, 0xffffffff81000150, 0xffffffff81000230,
                                      cc::user,   0x401010,           0x402020};
  SampleRecord sample = chain_sample(0xffffffff81000150, chain);
  // Registers not captured (a kernel thread; simpleperf, which unwinds at record time): the
  // unwinder gives nothing, and the chain's user entries are what the recorder left, as perf
  // uses them (issue #21).
  sample.fields |= sf::regs_user | sf::stack_user;
  auto ips = walk(resolver, sample, misc::kernel);
  ASSERT_EQ(ips.size(), 4u);
  expect_address(ips[0], 0xffffffff81000150, misc::kernel, false);
  expect_address(ips[1], 0xffffffff81000230, misc::kernel, true);
  expect_address(ips[2], 0x401010, misc::user, false);
  // Callers a recorder unwound by DWARF (perfscope's, simpleperf's) are return addresses minus
  // one already, as perf's libunwind gives them: named and shown as they are, as perf does.
  expect_address(ips[3], 0x402020, misc::user, false);
  EXPECT_TRUE(ips[3].adjusted_caller);
  EXPECT_EQ(ips[3].lookup(), 0x402020u);
  ASSERT_NE(resolver.unwind_statistics(), nullptr);
  EXPECT_EQ(resolver.unwind_statistics()->no_user_regs, 1u);
}

TEST(StackResolverTest, LbrCallStackBuildsTheUserPartFromTheBranches) {
  StackResolver resolver;
  std::vector<std::uint64_t> chain = {cc::user, 0x401014, 0x402020};
  SampleRecord sample = chain_sample(0x401014, chain);
  std::vector<abi::PerfBranchEntry> entries = {{0x402010, 0x401000, 0}, {0x403030, 0x402000, 0}};
  sample.fields |= sf::branch_stack;
  sample.branch_stack.entries = entries;
  std::vector<StackAddress> ips;
  resolver.walk(sample, misc::user, ips, abi::branch_sample::call_stack);
  // The latest branch's target, then each branch's source (perf, callee order).
  ASSERT_EQ(ips.size(), 3u);
  expect_address(ips[0], 0x401000, misc::user, false);
  expect_address(ips[1], 0x402010, misc::user, false);
  expect_address(ips[2], 0x403030, misc::user, false);
  // A profile charges the sample's own cost to its ip.
  resolver.walk_from_sample_ip(sample, misc::user, ips, abi::branch_sample::call_stack);
  expect_address(ips[0], 0x401014, misc::user, false);
  expect_address(ips[1], 0x402010, misc::user, false);
}

// The test program's own mapping of `function`, as /proc/self/maps gives it.
using perfscope::testing::OwnMapping;

OwnMapping own_mapping_of(std::uint64_t address) {
  for (const OwnMapping& mapping : perfscope::testing::own_mappings()) {
    if (address >= mapping.start && address < mapping.end) return mapping;
  }
  return {};
}

struct Fixture {
  TempDir directory;
  StackResolverOptions options;
  OwnMapping own;
  std::unique_ptr<StackResolver> resolver;

  Fixture() {
    options.symbols.kallsyms_path =
        directory.write("kallsyms",
                        "ffffffff81000000 T _text\n"
                        "ffffffff81000100 t helper_function\n"
                        "ffffffff81000200 T caller_function\n"
                        "ffffffff81000300 T __pfx_padded_function\n"
                        "ffffffff81000310 T padded_function\n"
                        "ffffffffc0001000 t module_function\t[fakemod]\n");
    options.symbols.jit_map_dir = directory.path();
    directory.write(fmt_map_name(), "7f0000001000 40 jitted_loop\n");
    resolver = std::make_unique<StackResolver>(options);
    // The kernel's map, from _text to the top, as perf synthesizes it: kernel ips are named
    // through kallsyms only inside a recorded kernel map.
    feed(*resolver, mmap2_record(0xffffffff, 0xffffffff81000000, 0x7f000000, 0xffffffff81000000,
                                 "[kernel.kallsyms]_text", misc::kernel));
    own = own_mapping_of(reinterpret_cast<std::uint64_t>(&stack_resolver_test_marker));
    feed(*resolver, mmap2_record(pid, own.start, own.end - own.start, own.pgoff, own.path));
    feed(*resolver, mmap2_record(pid, 0x7f0000000000, 0x10000, 0, "//anon"));
    feed(*resolver, mmap2_record(pid, 0x7fff00000000, 0x2000, 0, "[vdso]"));
    feed(*resolver, mmap2_record(pid, 0xffffffffff600000, 0x1000, 0, "[vsyscall]"));
  }
  static std::string fmt_map_name() { return "perf-" + std::to_string(pid) + ".map"; }
};

TEST(StackResolverTest, IpsAreNamedByKallsymsTheProgramsSymbolsAndThePerfMap) {
  Fixture fixture;
  ASSERT_FALSE(fixture.own.path.empty());
  StackResolver& resolver = *fixture.resolver;

  const ResolvedAddress& kernel = resolver.resolve(pid, {0xffffffff81000150, misc::kernel, false});
  EXPECT_TRUE(kernel.kernel);
  EXPECT_EQ(kernel.symbol.symbol, "helper_function");
  EXPECT_EQ(kernel.function_offset(), 0x50u);
  EXPECT_EQ(kernel.dso, "[kernel.kallsyms]");
  EXPECT_EQ(kernel.dso_address, 0xffffffff81000150u);
  // A return address at a function's first byte is named one back: the call in the function
  // before it; its offset stays the recorded address's.
  const ResolvedAddress& back = resolver.resolve(pid, {0xffffffff81000200, misc::kernel, true});
  EXPECT_EQ(back.symbol.symbol, "helper_function");
  EXPECT_EQ(back.function_offset(), 0x100u);
  // Unless one back is the padding before a function, where nothing calls: then the entry is an
  // exact ip (an interrupted frame's) and names the function it starts, as perf names it.
  const ResolvedAddress& padded = resolver.resolve(pid, {0xffffffff81000310, misc::kernel, true});
  EXPECT_EQ(padded.symbol.symbol, "padded_function");
  EXPECT_EQ(padded.function_offset(), 0u);
  // Guest kernel ips are named by kallsyms too; modules name their module.
  const ResolvedAddress& module =
      resolver.resolve(pid, {0xffffffffc0001010, misc::guest_kernel, false});
  EXPECT_EQ(module.symbol.symbol, "module_function");
  EXPECT_EQ(module.dso, "[fakemod]");

  auto marker = reinterpret_cast<std::uint64_t>(&stack_resolver_test_marker);
  const ResolvedAddress& own = resolver.resolve(pid, {marker + 1, misc::user, false});
  EXPECT_FALSE(own.kernel);
  EXPECT_EQ(own.symbol.symbol, "stack_resolver_test_marker");
  EXPECT_EQ(own.function_offset(), 1u);
  EXPECT_EQ(own.dso, fixture.own.path);
  EXPECT_EQ(own.dso_address, marker + 1 - fixture.own.start + fixture.own.pgoff);
  ASSERT_TRUE(own.mapping.has_value());
  EXPECT_EQ(*own.mapping->filename, fixture.own.path);

  const ResolvedAddress& jit = resolver.resolve(pid, {0x7f0000001010, misc::user, false});
  EXPECT_EQ(jit.symbol.symbol, "jitted_loop");
  EXPECT_EQ(jit.dso, fixture.directory.path() + "/" + Fixture::fmt_map_name());
  EXPECT_EQ(jit.dso_address, 0x7f0000001010u);  // JIT code is no file: the ip as it is

  const ResolvedAddress& vdso = resolver.resolve(pid, {0x7fff00000123, misc::user, false});
  EXPECT_EQ(vdso.dso, "[vdso]");
  EXPECT_EQ(vdso.dso_address, 0x123u);  // an image: its offset, as perf shows it
  const ResolvedAddress& vsyscall = resolver.resolve(pid, {0xffffffffff600400, misc::user, false});
  EXPECT_EQ(vsyscall.dso, "[vsyscall]");
  EXPECT_EQ(vsyscall.dso_address, 0xffffffffff600400u);

  const ResolvedAddress& nowhere = resolver.resolve(pid, {0x10, misc::user, false});
  EXPECT_TRUE(nowhere.dso.empty());
  EXPECT_TRUE(nowhere.symbol.symbol.empty());
  EXPECT_FALSE(nowhere.mapping.has_value());
  // Hypervisor and guest-user ips are no process's: not looked up in its mappings.
  const ResolvedAddress& hv = resolver.resolve(pid, {marker, misc::hypervisor, false});
  EXPECT_TRUE(hv.dso.empty());
  EXPECT_FALSE(hv.mapping.has_value());
  const ResolvedAddress& guest = resolver.resolve(pid, {marker, misc::guest_user, false});
  EXPECT_TRUE(guest.dso.empty());
}

TEST(StackResolverTest, RepeatedIpsComeFromTheCacheUntilTheMappingsChange) {
  Fixture fixture;
  StackResolver& resolver = *fixture.resolver;
  auto marker = reinterpret_cast<std::uint64_t>(&stack_resolver_test_marker);
  std::uint32_t first = resolver.resolve(pid, {marker, misc::user, false}).id;
  EXPECT_NE(first, ResolvedAddress::no_id);
  EXPECT_EQ(resolver.resolve(pid, {marker, misc::user, false}).id, first);
  // The same ip as a return address is another answer (named one byte back).
  EXPECT_NE(resolver.resolve(pid, {marker, misc::user, true}).id, first);
  // A new mapping of the process: the ip may name something else now.
  feed(resolver, mmap2_record(pid, 0x500000000, 0x1000, 0, "/nonexistent/lib.so"));
  std::uint32_t after = resolver.resolve(pid, {marker, misc::user, false}).id;
  EXPECT_NE(after, first);
  EXPECT_EQ(resolver.resolve(pid, {marker, misc::user, false}).symbol.symbol,
            "stack_resolver_test_marker");
  const ResolvedAddress& missing = resolver.resolve(pid, {0x500000010, misc::user, false});
  EXPECT_EQ(missing.dso, "/nonexistent/lib.so");
  EXPECT_TRUE(missing.symbol.symbol.empty());
  EXPECT_FALSE(missing.symbol.unresolved_reason.empty());
}

// A return address right past a function's last byte is the next function's first: perf names
// it there (ld.so's _start calls _dl_start and returns into _dl_start_user), and so does
// perfscope.
TEST(StackResolverTest, AReturnAddressAtAFunctionsStartIsNamedThere) {
  Fixture fixture;
  StackResolver& resolver = *fixture.resolver;
  auto marker = reinterpret_cast<std::uint64_t>(&stack_resolver_test_marker);
  const ResolvedAddress& own = resolver.resolve(pid, {marker, misc::user, false});
  ASSERT_EQ(own.symbol.symbol, "stack_resolver_test_marker");
  const std::uint64_t next = marker + own.symbol.size;
  std::string next_name(resolver.resolve(pid, {next, misc::user, false}).symbol.symbol);
  if (next_name.empty() || resolver.resolve(pid, {next, misc::user, false}).symbol.offset != 0) {
    GTEST_SKIP() << "no symbol starts right after the marker in this build";
  }
  const ResolvedAddress& returned = resolver.resolve(pid, {next, misc::user, true});
  EXPECT_EQ(returned.symbol.symbol, next_name);
  EXPECT_EQ(returned.function_offset(), 0u);
  // One byte further in, the call's own function still names it (one byte back).
  EXPECT_EQ(resolver.resolve(pid, {marker + 2, misc::user, true}).symbol.symbol,
            "stack_resolver_test_marker");
}

TEST(StackResolverTest, KernelIpsCanBeNamedLater) {
  Fixture fixture;
  StackResolver& resolver = *fixture.resolver;
  ResolvedAddress later = resolver.resolve(pid, {0xffffffff81000150, misc::kernel, false}, false);
  EXPECT_FALSE(later.named);
  EXPECT_TRUE(later.kernel);
  EXPECT_EQ(later.id, ResolvedAddress::no_id);
  resolver.name_kernel(later);
  EXPECT_TRUE(later.named);
  EXPECT_EQ(later.symbol.symbol, "helper_function");
  EXPECT_EQ(later.dso, "[kernel.kallsyms]");
}

TEST(StackResolverTest, ResolvedSamplesAreFramesLeafFirst) {
  Fixture fixture;
  StackResolver& resolver = *fixture.resolver;
  auto marker = reinterpret_cast<std::uint64_t>(&stack_resolver_test_marker);
  // A return address inside the marker (its last byte would be the next function's first, which
  // perf names by that function).
  std::uint64_t size = resolver.resolve(pid, {marker, misc::user, false}).symbol.size;
  ASSERT_GT(size, 2u);
  const std::uint64_t offset = std::min<std::uint64_t>(5, size - 1);
  std::vector<std::uint64_t> chain = {cc::kernel, 0xffffffff81000150, 0xffffffff81000200,
                                      cc::user,   0x7f0000001010,     marker + offset};
  std::vector<StackFrame> frames;
  resolver.resolve_sample(chain_sample(0xffffffff81000150, chain), misc::kernel, frames);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].function, "helper_function");
  EXPECT_EQ(frames[1].function, "helper_function");  // 0x...200 - 1: helper's call
  EXPECT_TRUE(frames[1].where->address.return_address);
  EXPECT_EQ(frames[2].function, "jitted_loop");
  EXPECT_EQ(frames[3].function, "stack_resolver_test_marker");
  EXPECT_EQ(frames[3].where->function_offset(), offset);
  for (const StackFrame& frame : frames) EXPECT_FALSE(frame.inlined);
  // The vector is reused: a second sample replaces the first's frames.
  resolver.resolve_sample(chain_sample(marker, {}), misc::user, frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "stack_resolver_test_marker");
}

// A kernel-mode ip in no recorded kernel map is [unknown] and unnamed, as perf shows it, also in
// a recording without any kernel map (perf 6.1 on autofdo's ro_sample.perf, quipper's piped
// 6.8/6.12 files). A kernel map at 0 of length 0 (simpleperf) covers every address.
TEST(StackResolverTest, KernelIpsOutsideEveryKernelMapAreUnknown) {
  TempDir directory;
  StackResolverOptions options;
  options.symbols.kallsyms_path =
      directory.write("kallsyms", "ffffffff81000000 T _text\nffffffff81000100 t helper_function\n");
  StackResolver none(options);
  const ResolvedAddress& unmapped = none.resolve(pid, {0xffffffff81000150, misc::kernel, false});
  EXPECT_TRUE(unmapped.kernel);
  EXPECT_TRUE(unmapped.dso.empty());
  EXPECT_TRUE(unmapped.symbol.symbol.empty());

  StackResolver everywhere(options);
  feed(everywhere, mmap2_record(0xffffffff, 0, 0, 0, "[kernel.kallsyms]_text", misc::kernel));
  EXPECT_TRUE(everywhere.maps().has_kernel_maps());
  const ResolvedAddress& named = everywhere.resolve(pid, {0xffffffff81000150, misc::kernel, false});
  EXPECT_EQ(named.dso, "[kernel.kallsyms]");
  EXPECT_EQ(named.symbol.symbol, "helper_function");

  StackResolver bounded(options);
  feed(bounded, mmap2_record(0xffffffff, 0xffffffff81000000, 0x1000, 0xffffffff81000000,
                             "[kernel.kallsyms]_text", misc::kernel));
  EXPECT_EQ(bounded.resolve(pid, {0xffffffff81000150, misc::kernel, false}).dso,
            "[kernel.kallsyms]");
  // Past the map's end (_etext: .init.text and the like) the kernel's map still names it, up to
  // the first module, as in perf; past a module's end nothing does.
  EXPECT_EQ(bounded.resolve(pid, {0xffffffff81001000, misc::kernel, false}).dso,
            "[kernel.kallsyms]");
  StackResolver with_module(options);
  feed(with_module, mmap2_record(0xffffffff, 0xffffffff81000000, 0x1000, 0xffffffff81000000,
                                 "[kernel.kallsyms]_text", misc::kernel));
  feed(with_module, mmap2_record(0xffffffff, 0xffffffffc0000000, 0x1000, 0,
                                 "/lib/modules/6.1/kernel/fs/ext4/ext4.ko", misc::kernel));
  EXPECT_EQ(with_module.resolve(pid, {0xffffffff81001000, misc::kernel, false}).dso,
            "[kernel.kallsyms]");
  EXPECT_EQ(with_module.resolve(pid, {0xffffffffc0000010, misc::kernel, false}).dso, "[ext4]");
  EXPECT_TRUE(with_module.resolve(pid, {0xffffffffc0002000, misc::kernel, false}).dso.empty());
}

// A --call-graph dwarf sample whose registers hold the pc 0x401010, with 64 bytes of stack.
struct DwarfSample {
  std::vector<std::uint64_t> registers;
  std::vector<std::byte> stack = std::vector<std::byte>(64);
  SampleRecord sample;
  DwarfSample() {
    std::uint64_t mask = abi::dwarf_unwind_register_mask();
    // Every register holds the pc: whichever of them the architecture reads as its pc.
    registers.assign(static_cast<std::size_t>(__builtin_popcountll(mask)), 0x401010);
    sample = chain_sample(0x401010, {});
    sample.fields = sf::ip | sf::tid | sf::regs_user | sf::stack_user;
    sample.regs_user.abi = static_cast<std::uint64_t>(abi::SampleRegsAbi::abi64);
    sample.regs_user.mask = mask;
    sample.regs_user.values = registers;
    sample.stack_user = stack;
    sample.stack_user_dyn_size = stack.size();
  }
};

// perf unwinds a process only once one of its files can be opened here, the vDSO counting as
// this machine's own unless the recording gave it a build id; before that it shows no user
// frame, not even the pc (hotspot's cpp-recursion.perf.data, perf.data.true.v2).
TEST(StackResolverTest, DwarfSamplesOfProcessesWithNoReadableFileHaveNoUserFrame) {
  DwarfSample dwarf;
  std::vector<StackAddress> ips;
  StackResolver unreadable;
  feed(unreadable, mmap2_record(pid, 0x400000, 0x1000, 0, "/nonexistent/a.out"));
  unreadable.walk(dwarf.sample, misc::user, ips);
  EXPECT_TRUE(ips.empty());
  // What a profile charges the sample to is still its ip.
  unreadable.walk_from_sample_ip(dwarf.sample, misc::user, ips);
  ASSERT_EQ(ips.size(), 1u);
  expect_address(ips[0], 0x401010, misc::user, false);

  // A vDSO without a recorded build id: perf reads this machine's, starts unwinding, and shows
  // the pc it could not step beyond.
  StackResolver with_vdso;
  feed(with_vdso, mmap2_record(pid, 0x400000, 0x1000, 0, "/nonexistent/a.out"));
  feed(with_vdso, mmap2_record(pid, 0x7fff00000000, 0x2000, 0, "[vdso]"));
  with_vdso.walk(dwarf.sample, misc::user, ips);
  ASSERT_EQ(ips.size(), 1u);
  expect_address(ips[0], 0x401010, misc::user, false);

  // The recording named the vDSO by build id: perf looks for that one, finds none, and shows
  // nothing again.
  StackResolver recorded_vdso;
  feed(recorded_vdso, mmap2_record(pid, 0x400000, 0x1000, 0, "/nonexistent/a.out"));
  feed(recorded_vdso, mmap2_record(pid, 0x7fff00000000, 0x2000, 0, "[vdso]"));
  std::vector<std::uint8_t> build_id(20, 0xad);
  recorded_vdso.add_recorded_build_id("[vdso]", build_id);
  recorded_vdso.walk(dwarf.sample, misc::user, ips);
  EXPECT_TRUE(ips.empty());
}

}  // namespace
}  // namespace perfscope
