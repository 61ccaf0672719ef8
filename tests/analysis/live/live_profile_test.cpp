// LiveProfile (the model of `perfscope top`) on encoded kernel samples named through a fake
// kallsyms: exact shares, the 7/8 decay and the fading out of old rows, -z, caller trees and the
// call-graph view, filters, sort keys, and no allocation per sample once addresses are known.
#include "perfscope/analysis/live/live_profile.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "support/test_support.hpp"

// Every allocation of this test program is counted: the hot path must make none. (GCC sees
// free() meet a pointer from `operator new` once both are inlined: they are this pair.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
std::atomic<std::uint64_t> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace perfscope {
namespace {

namespace sf = abi::sample_format;
namespace cc = abi::callchain_context;
namespace misc = abi::record_misc;

constexpr std::uint64_t leaf_a = 0xffffffff81000110;
constexpr std::uint64_t leaf_b = 0xffffffff81000210;
constexpr std::uint64_t leaf_c = 0xffffffff81000310;
constexpr std::uint64_t caller_x = 0xffffffff81000420;  // return addresses inside the callers
constexpr std::uint64_t caller_y = 0xffffffff81000520;

ParseConfig sample_config() {
  ParseConfig out;
  out.sample_type = sf::ip | sf::tid | sf::time | sf::period | sf::callchain;
  return out;
}
const ParseConfig config = sample_config();

struct Encoded {
  std::vector<std::byte> bytes;
  RecordView view() const {
    RecordView out;
    std::memcpy(&out.header, bytes.data(), sizeof out.header);
    out.bytes = bytes;
    return out;
  }
};

void put(std::vector<std::byte>& bytes, std::uint64_t value) {
  auto at = bytes.size();
  bytes.resize(at + 8);
  std::memcpy(bytes.data() + at, &value, 8);
}

// A kernel sample at `ip` of thread `tid`, its call chain `ip, callers...`.
Encoded sample(std::uint64_t ip, std::vector<std::uint64_t> callers = {}, std::uint32_t tid = 100) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, ip);
  put(bytes, std::uint64_t{tid} << 32 | tid);
  put(bytes, 1000);  // time
  put(bytes, 1);     // period
  put(bytes, 2 + callers.size());
  put(bytes, cc::kernel);
  put(bytes, ip);
  for (std::uint64_t caller : callers) put(bytes, caller);
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::sample), misc::kernel,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  return {bytes};
}

// The kernel's map, as the recording session synthesizes it before any sample: a kernel ip
// outside every recorded kernel map is [unknown] (StackResolver, as perf).
Encoded kernel_map_record() {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{0} << 32 | 0xffffffffu);  // pid -1, tid 0
  put(bytes, 0xffffffff81000000);                    // addr
  put(bytes, 0x1000000);                             // len
  put(bytes, 0xffffffff81000000);                    // pgoff
  const std::string name = "[kernel.kallsyms]_text";
  std::size_t at = bytes.size();
  bytes.resize(at + (name.size() + 1 + 7) / 8 * 8);
  std::memcpy(bytes.data() + at, name.data(), name.size());
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::mmap), misc::kernel,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  return {bytes};
}

Encoded comm_record(std::uint32_t pid, const std::string& comm) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{pid} << 32 | pid);
  std::size_t at = bytes.size();
  bytes.resize(at + (comm.size() + 1 + 7) / 8 * 8);
  std::memcpy(bytes.data() + at, comm.data(), comm.size());
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::comm), 0,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  return {bytes};
}

Encoded exit_record(std::uint32_t pid, std::uint32_t tid) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{pid} << 32 | pid);  // pid, ppid
  put(bytes, std::uint64_t{tid} << 32 | tid);  // tid, ptid
  put(bytes, 2000);                            // time
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::exit), 0,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  return {bytes};
}

struct Fixture {
  testing::TempDir directory;
  LiveProfileOptions options;

  explicit Fixture(bool callchains = false, double decay = 7.0 / 8.0) {
    options.resolver.symbols.kallsyms_path = directory.write("kallsyms",
                                                             "ffffffff81000000 T _text\n"
                                                             "ffffffff81000100 t leaf_a\n"
                                                             "ffffffff81000200 t leaf_b\n"
                                                             "ffffffff81000300 t leaf_c\n"
                                                             "ffffffff81000400 T caller_x\n"
                                                             "ffffffff81000500 T caller_y\n"
                                                             "ffffffff81000600 T _etext\n");
    options.callchains = callchains;
    options.decay = decay;
  }
};

void feed(LiveProfile& profile, const Encoded& record, int times = 1) {
  RecordView view = record.view();
  for (int i = 0; i < times; ++i) profile.record(view, 0, config);
}

const LiveRow* row_named(const LiveSnapshot& snapshot, const std::string& symbol) {
  for (const auto& row : snapshot.rows) {
    if (row.symbol == symbol) return &row;
  }
  return nullptr;
}

TEST(LiveProfileTest, SharesAreTheSamplesOfEachFunctionLargestFirst) {
  Fixture fixture;
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a), 6);
  feed(profile, sample(leaf_b), 3);
  feed(profile, sample(leaf_c), 1);
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 3u);
  EXPECT_EQ(snapshot.rows[0].symbol, "leaf_a");
  EXPECT_EQ(snapshot.rows[1].symbol, "leaf_b");
  EXPECT_EQ(snapshot.rows[2].symbol, "leaf_c");
  EXPECT_DOUBLE_EQ(snapshot.rows[0].self, 60.0);
  EXPECT_DOUBLE_EQ(snapshot.rows[1].self, 30.0);
  EXPECT_DOUBLE_EQ(snapshot.rows[2].self, 10.0);
  EXPECT_EQ(snapshot.rows[0].dso, "[kernel.kallsyms]");
  EXPECT_TRUE(snapshot.rows[0].kernel);
  EXPECT_DOUBLE_EQ(snapshot.total_weight, 10.0);
  LiveTotals totals = profile.totals();
  EXPECT_EQ(totals.samples, 10u);
  EXPECT_EQ(totals.kernel_samples, 10u);
  EXPECT_EQ(totals.interval_samples, 10u);
  EXPECT_EQ(totals.functions, 3u);
}

TEST(LiveProfileTest, OldSamplesDecayBySevenEighthsAtEachRefresh) {
  Fixture fixture;
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a), 6);
  feed(profile, sample(leaf_b), 3);
  feed(profile, sample(leaf_c), 1);
  profile.end_interval();
  EXPECT_EQ(profile.totals().interval_samples, 0u);
  EXPECT_EQ(profile.totals().samples, 10u);
  feed(profile, sample(leaf_c), 10);
  LiveSnapshot snapshot = profile.snapshot();
  // a: 6·7/8 = 5.25, b: 2.625, c: 0.875 + 10 = 10.875 of 18.75.
  ASSERT_EQ(snapshot.rows.size(), 3u);
  EXPECT_EQ(snapshot.rows[0].symbol, "leaf_c");
  EXPECT_DOUBLE_EQ(snapshot.total_weight, 18.75);
  EXPECT_NEAR(snapshot.rows[0].self, 10.875 / 18.75 * 100, 1e-9);
  EXPECT_NEAR(row_named(snapshot, "leaf_a")->self, 5.25 / 18.75 * 100, 1e-9);
  EXPECT_EQ(profile.totals().interval_samples, 10u);
}

TEST(LiveProfileTest, RowsThatStopGettingSamplesFadeOutAndAreDropped) {
  Fixture fixture(false, 0.5);
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a), 1);
  for (int i = 0; i < 3; ++i) {
    feed(profile, sample(leaf_b), 1);
    profile.end_interval();
  }
  // leaf_a: 1/8 (still shown), leaf_b: 1/8 + 1/4 + 1/2.
  EXPECT_EQ(profile.snapshot().rows.size(), 2u);
  profile.end_interval();  // leaf_a 1/16: below a tenth of a sample
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 1u);
  EXPECT_EQ(snapshot.rows[0].symbol, "leaf_b");
  EXPECT_EQ(profile.totals().cells, 1u);
  // A name once seen stays known (a process that exits keeps its names): only weights go.
  EXPECT_EQ(profile.totals().functions, 2u);
}

TEST(LiveProfileTest, ZeroForgetsEverythingAtEachRefresh) {
  Fixture fixture(true, 0.0);
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a, {caller_x}), 5);
  profile.end_interval();
  EXPECT_TRUE(profile.snapshot().rows.empty());
  EXPECT_EQ(profile.totals().tree_nodes, 0u);
  feed(profile, sample(leaf_b), 2);
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(snapshot.rows[0].self, 100.0);
}

TEST(LiveProfileTest, CallersFormATreeAndTheCallGraphListsCallersAndCallees) {
  Fixture fixture(true);
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a, {caller_x}), 3);
  feed(profile, sample(leaf_a, {caller_y}), 1);
  feed(profile, sample(leaf_b, {caller_x}), 4);
  LiveSnapshot snapshot = profile.snapshot();
  const LiveRow* a = row_named(snapshot, "leaf_a");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->self, 50.0);
  auto tree = profile.caller_tree(a->function);
  ASSERT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree[0].symbol, "caller_x");
  EXPECT_DOUBLE_EQ(tree[0].percent, 75.0);
  EXPECT_EQ(tree[1].symbol, "caller_y");
  EXPECT_DOUBLE_EQ(tree[1].percent, 25.0);
  // Callers have no self time (no row when ordered by self) but children: caller_x is in 7 of
  // 8 stacks.
  EXPECT_EQ(row_named(snapshot, "caller_x"), nullptr);
  LiveSnapshotOptions by_children;
  by_children.sort_by_children = true;
  LiveSnapshot inclusive = profile.snapshot(by_children);
  EXPECT_EQ(inclusive.rows[0].symbol, "caller_x");  // perf top -g's order
  const LiveRow* x = row_named(inclusive, "caller_x");
  ASSERT_NE(x, nullptr);
  EXPECT_DOUBLE_EQ(x->self, 0.0);
  EXPECT_DOUBLE_EQ(x->children, 87.5);
  LiveCallGraph graph = profile.call_graph(x->function);
  EXPECT_DOUBLE_EQ(graph.children, 87.5);
  ASSERT_EQ(graph.callees.size(), 2u);
  EXPECT_EQ(graph.callees[0].symbol, "leaf_b");
  EXPECT_NEAR(graph.callees[0].percent, 4.0 / 7.0 * 100, 1e-9);
  EXPECT_EQ(graph.callees[1].symbol, "leaf_a");
  EXPECT_TRUE(graph.callers.empty());
  LiveCallGraph of_a = profile.call_graph(a->function);
  ASSERT_EQ(of_a.callers.size(), 2u);
  EXPECT_EQ(of_a.callers[0].symbol, "caller_x");
  EXPECT_DOUBLE_EQ(of_a.callers[0].percent, 75.0);
}

TEST(LiveProfileTest, FiltersKeepSharesOfTheWholeAndLimitsCountRows) {
  Fixture fixture;
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a), 6);
  feed(profile, sample(leaf_b), 3);
  feed(profile, sample(leaf_c), 1);
  LiveSnapshotOptions options;
  options.symbol_filter = "_b";
  LiveSnapshot filtered = profile.snapshot(options);
  ASSERT_EQ(filtered.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(filtered.rows[0].self, 30.0);
  options = {};
  options.dso_filter = "no-such-dso";
  EXPECT_TRUE(profile.snapshot(options).rows.empty());
  options = {};
  options.max_rows = 2;
  LiveSnapshot limited = profile.snapshot(options);
  EXPECT_EQ(limited.rows.size(), 2u);
  EXPECT_EQ(limited.rows_before_limit, 3u);
  options = {};
  options.percent_limit = 20;
  EXPECT_EQ(profile.snapshot(options).rows.size(), 2u);
}

TEST(LiveProfileTest, SortKeysChooseTheRows) {
  Fixture fixture;
  fixture.options.sort = parse_live_sort_keys("comm,sym");
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, comm_record(100, "first"));
  feed(profile, comm_record(200, "second"));
  feed(profile, sample(leaf_a, {}, 100), 2);
  feed(profile, sample(leaf_a, {}, 200), 2);
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 2u);
  EXPECT_EQ(snapshot.rows[0].comm, "first");
  EXPECT_EQ(snapshot.rows[1].comm, "second");
  EXPECT_DOUBLE_EQ(snapshot.rows[1].self, 50.0);

  Fixture by_dso;
  by_dso.options.sort = parse_live_sort_keys("dso");
  LiveProfile dsos(by_dso.options);
  feed(dsos, kernel_map_record());
  feed(dsos, sample(leaf_a), 2);
  feed(dsos, sample(leaf_b), 2);
  LiveSnapshot one = dsos.snapshot();
  ASSERT_EQ(one.rows.size(), 1u);
  EXPECT_EQ(one.rows[0].dso, "[kernel.kallsyms]");
  EXPECT_EQ(one.rows[0].function, LiveRow::no_function);
  EXPECT_DOUBLE_EQ(one.rows[0].self, 100.0);
}

TEST(LiveProfileTest, ExitedTasksAreForgottenAfterTheNextRefreshAndKeepTheirRows) {
  Fixture fixture;
  fixture.options.sort = parse_live_sort_keys("comm,sym");
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, comm_record(100, "short-lived"));
  feed(profile, sample(leaf_a, {}, 100), 4);
  feed(profile, exit_record(100, 100));
  profile.end_interval();
  // Samples read in the next interval may still be of the task: it is known until then.
  EXPECT_EQ(profile.resolver().maps().comm_of(100), "short-lived");
  EXPECT_EQ(profile.totals().exited_tasks, 0u);
  profile.end_interval();
  EXPECT_EQ(profile.resolver().maps().comm_of(100), "");
  EXPECT_EQ(profile.totals().exited_tasks, 1u);
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 1u);
  EXPECT_EQ(snapshot.rows[0].comm, "short-lived");
  EXPECT_EQ(snapshot.rows[0].symbol, "leaf_a");
}

TEST(LiveProfileTest, AddressCacheIsDroppedPastItsLimitAndNamesStay) {
  Fixture fixture;
  fixture.options.address_cache_limit = 2;
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  feed(profile, sample(leaf_a), 2);
  feed(profile, sample(leaf_b), 1);
  feed(profile, sample(leaf_c), 1);
  EXPECT_EQ(profile.resolver().cached_addresses(), 3u);
  profile.end_interval();
  EXPECT_EQ(profile.resolver().cached_addresses(), 0u);
  EXPECT_EQ(profile.totals().cache_resets, 1u);
  feed(profile, sample(leaf_c), 3);  // named again: the same function, the same row
  EXPECT_EQ(profile.totals().functions, 3u);
  LiveSnapshot snapshot = profile.snapshot();
  ASSERT_EQ(snapshot.rows.size(), 3u);
  EXPECT_EQ(snapshot.rows[0].symbol, "leaf_c");
  EXPECT_DOUBLE_EQ(snapshot.rows[0].weight, 0.875 + 3);
}

TEST(LiveProfileTest, SortKeyErrorsNameTheKey) {
  EXPECT_EQ(parse_live_sort_keys("pid,dso,sym").size(), 3u);
  try {
    parse_live_sort_keys("dso,cycles");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("unknown key 'cycles'"), std::string::npos);
  }
  EXPECT_THROW(parse_live_sort_keys("sym,sym"), std::invalid_argument);
  EXPECT_THROW(parse_live_sort_keys(""), std::invalid_argument);
}

TEST(LiveProfileTest, UndecodableSamplesAreCounted) {
  Fixture fixture;
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  Encoded broken = sample(leaf_a);
  broken.bytes.resize(sizeof(abi::RecordHeader) + 8);  // cut after the ip
  RecordView view = broken.view();
  view.header.size = static_cast<std::uint16_t>(broken.bytes.size());
  profile.record(view, 0, config);
  EXPECT_EQ(profile.totals().undecodable, 1u);
  EXPECT_EQ(profile.totals().samples, 0u);
}

TEST(LiveProfileTest, SamplesOfKnownAddressesAllocateNothing) {
  Fixture fixture(true);
  fixture.options.sort = parse_live_sort_keys("pid,dso,sym");
  LiveProfile profile(fixture.options);
  feed(profile, kernel_map_record());
  Encoded first = sample(leaf_a, {caller_x});
  Encoded second = sample(leaf_b, {caller_y, caller_x});
  feed(profile, first);
  feed(profile, second);
  std::uint64_t before = allocations.load();
  EXPECT_GT(before, 0u);  // the counter sees the allocations of the first samples
  feed(profile, first, 500);
  feed(profile, second, 500);
  EXPECT_EQ(allocations.load() - before, 0u);
  EXPECT_EQ(profile.totals().samples, 1002u);
}

}  // namespace
}  // namespace perfscope
