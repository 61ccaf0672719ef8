// ProfileBuilder's interval mode (continuous profiling, `record --push-interval`): each interval's
// profile holds its own samples, what is known of tasks carries over, and a task that exited is
// forgotten one interval after its EXIT, so that memory follows the live tasks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"

namespace perfscope {
namespace {

namespace sf = abi::sample_format;
namespace misc = abi::record_misc;

constexpr std::uint32_t pid = 4242;
constexpr std::uint64_t code_start = 0x400000;

ParseConfig sample_config() {
  ParseConfig out;
  out.sample_type = sf::ip | sf::tid | sf::time | sf::period;
  return out;
}

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

void put_string(std::vector<std::byte>& bytes, const std::string& text) {
  std::size_t at = bytes.size();
  bytes.resize(at + (text.size() + 1 + 7) / 8 * 8);
  std::memcpy(bytes.data() + at, text.data(), text.size());
}

Encoded finished(std::vector<std::byte> bytes, abi::RecordType type, std::uint16_t misc_bits) {
  abi::RecordHeader header{static_cast<std::uint32_t>(type), misc_bits,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  return {std::move(bytes)};
}

Encoded comm_record(const std::string& comm) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{pid} << 32 | pid);
  put_string(bytes, comm);
  return finished(std::move(bytes), abi::RecordType::comm, 0);
}

Encoded mmap_record() {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{pid} << 32 | pid);
  put(bytes, code_start);  // addr
  put(bytes, 0x1000);      // len
  put(bytes, 0);           // pgoff
  put_string(bytes, "/nonexistent/short-lived-app");
  return finished(std::move(bytes), abi::RecordType::mmap, misc::user);
}

Encoded sample(std::uint64_t time) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, code_start + 0x10);
  put(bytes, std::uint64_t{pid} << 32 | pid);
  put(bytes, time);
  put(bytes, 1);  // period
  return finished(std::move(bytes), abi::RecordType::sample, misc::user);
}

Encoded exit_record() {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, std::uint64_t{pid} << 32 | pid);  // pid, ppid
  put(bytes, std::uint64_t{pid} << 32 | pid);  // tid, ptid
  put(bytes, 2000);                            // time
  return finished(std::move(bytes), abi::RecordType::exit, 0);
}

// The comm and DSO of the profile's only sample group.
struct Seen {
  std::string comm, dso;
};
Seen only_sample(const Profile& profile) {
  EXPECT_EQ(profile.sample_groups.size(), 1u);
  if (profile.sample_groups.empty()) return {};
  const ProfileSampleGroup& group = profile.sample_groups.front();
  Seen seen;
  seen.comm = profile.threads[group.thread].comm;
  if (group.stack == no_index) return seen;
  const ProfileFrame& frame = profile.frames[profile.stacks[group.stack].frame];
  std::uint32_t dso = profile.functions[frame.function].dso;
  if (dso != no_index) seen.dso = profile.dsos[dso].path;
  return seen;
}

TEST(ProfileIntervals, AnExitedTaskIsForgottenOneIntervalAfterItsExit) {
  ProfileOptions options;
  options.keep_samples = false;
  ProfileBuilder builder(options);
  builder.add_event("cpu-clock", sample_config());
  for (const Encoded& record : {comm_record("short-lived"), mmap_record(), sample(1000)}) {
    builder.observe(record.view(), 0);
  }
  Seen first = only_sample(builder.finish_interval());
  EXPECT_EQ(first.comm, "short-lived");
  EXPECT_EQ(first.dso, "/nonexistent/short-lived-app");

  // The EXIT comes; a sample read after it, in the same or the next interval, is still named.
  builder.observe(exit_record().view(), 0);
  builder.observe(sample(3000).view(), 0);
  Seen second = only_sample(builder.finish_interval());
  EXPECT_EQ(second.comm, "short-lived");
  EXPECT_EQ(second.dso, "/nonexistent/short-lived-app");
  builder.observe(sample(4000).view(), 0);
  Seen third = only_sample(builder.finish_interval());
  EXPECT_EQ(third.comm, "short-lived");
  EXPECT_EQ(third.dso, "/nonexistent/short-lived-app");

  // One interval later the task is gone: its name and mappings are forgotten.
  builder.observe(sample(5000).view(), 0);
  Seen fourth = only_sample(builder.finish_interval());
  EXPECT_NE(fourth.comm, "short-lived");
  EXPECT_NE(fourth.dso, "/nonexistent/short-lived-app");
}

TEST(ProfileIntervals, AReplayedFileForgetsNothing) {
  ProfileOptions options;
  options.keep_samples = false;
  ProfileBuilder builder(options);
  builder.add_event("cpu-clock", sample_config());
  for (const Encoded& record :
       {comm_record("short-lived"), mmap_record(), exit_record(), sample(3000)}) {
    builder.observe(record.view(), 0);
  }
  Seen seen = only_sample(builder.finish());
  EXPECT_EQ(seen.comm, "short-lived");
  EXPECT_EQ(seen.dso, "/nonexistent/short-lived-app");
}

// The kernel's map as perf synthesizes it (MMAP, pid -1, from _text), for kernel ips to be named
// through kallsyms.
Encoded kernel_mmap_record() {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, 0xffffffffULL << 32 | 0xffffffffULL);
  put(bytes, 0xffffffff81000000ULL);  // addr
  put(bytes, 0x7f000000);             // len
  put(bytes, 0xffffffff81000000ULL);  // pgoff: _text
  put_string(bytes, "[kernel.kallsyms]_text");
  return finished(std::move(bytes), abi::RecordType::mmap, misc::kernel);
}

// A kernel sample with a call chain: `ip`, then `caller` as a return address.
Encoded kernel_sample(std::uint32_t tid, std::uint64_t ip, std::uint64_t caller) {
  std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
  put(bytes, ip);
  put(bytes, std::uint64_t{tid} << 32 | pid);
  put(bytes, 1000 + tid);                        // time
  put(bytes, 1);                                 // period
  put(bytes, 3);                                 // callchain: the context marker, ip, caller
  put(bytes, static_cast<std::uint64_t>(-128));  // PERF_CONTEXT_KERNEL
  put(bytes, ip);
  put(bytes, caller);
  return finished(std::move(bytes), abi::RecordType::sample, misc::kernel);
}

// Kernel frames are named when an interval ends; two that name one function are made one then,
// and the groups remapped: only the interval's own groups (the last interval's numbers, gone
// with its profile, once read past the new group map).
TEST(ProfileIntervals, KernelFramesNamedAtAnIntervalsEndRemapOnlyItsOwnGroups) {
  char path[] = "/tmp/perfscope_kallsyms_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string kallsyms =
      "ffffffff81000000 T _text\nffffffff81000100 t kernel_work\nffffffff81000200 T kernel_top\n";
  ASSERT_EQ(::write(fd, kallsyms.data(), kallsyms.size()), static_cast<ssize_t>(kallsyms.size()));
  ::close(fd);
  ProfileOptions options;
  options.keep_samples = false;
  options.symbols.kallsyms_path = path;
  ProfileBuilder builder(options);
  ParseConfig config = sample_config();
  config.sample_type |= sf::callchain;
  builder.add_event("cpu-clock", config);
  builder.observe(kernel_mmap_record().view(), 0);
  // Interval one: eight threads, eight groups.
  for (std::uint32_t tid = pid; tid < pid + 8; ++tid) {
    builder.observe(kernel_sample(tid, 0xffffffff81000210, 0xffffffff81000110).view(), 0);
  }
  Profile first = builder.finish_interval();
  EXPECT_EQ(first.sample_groups.size(), 8u);
  // Interval two: two stacks, where one sample's ip is the other's return address, in one
  // function: two frames before naming, one after (the groups remapped then).
  builder.observe(kernel_sample(pid, 0xffffffff81000120, 0xffffffff81000210).view(), 0);
  builder.observe(kernel_sample(pid, 0xffffffff81000220, 0xffffffff81000120).view(), 0);
  Profile second = builder.finish_interval();
  ::unlink(path);
  ASSERT_EQ(second.sample_groups.size(), 2u);
  std::vector<std::string> leaves;
  for (const ProfileSampleGroup& group : second.sample_groups) {
    ASSERT_NE(group.stack, no_index);
    const ProfileFrame& leaf = second.frames[second.stacks[group.stack].frame];
    leaves.push_back(second.functions[leaf.function].name);
    EXPECT_EQ(group.samples, 1u);
  }
  std::sort(leaves.begin(), leaves.end());
  EXPECT_EQ(leaves, (std::vector<std::string>{"kernel_top", "kernel_work"}));
}

}  // namespace
}  // namespace perfscope
