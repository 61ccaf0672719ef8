// The ABI structs must match the kernel's byte layout; the headers static_assert most of it, and
// these tests check what the kernel itself says about sizes and ioctl numbers.
#include <gtest/gtest.h>

#include "perfscope/abi/branch_entry.hpp"
#include "perfscope/abi/ioctl_request.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"

namespace pabi = perfscope::abi;  // plain `abi` is the C++ runtime's namespace

TEST(AbiLayout, AttrIsVersion8) { EXPECT_EQ(sizeof(pabi::PerfEventAttr), 136u); }

TEST(AbiLayout, IoctlNumbersMatchTheKernelEncoding) {
  // Values of the uapi macros on x86-64 and arm64 (asm-generic ioctl encoding).
  EXPECT_EQ(pabi::ioctl_request::enable, 0x2400u);
  EXPECT_EQ(pabi::ioctl_request::disable, 0x2401u);
  EXPECT_EQ(pabi::ioctl_request::refresh, 0x2402u);
  EXPECT_EQ(pabi::ioctl_request::reset, 0x2403u);
  EXPECT_EQ(pabi::ioctl_request::period, 0x40082404u);
  EXPECT_EQ(pabi::ioctl_request::set_output, 0x2405u);
  EXPECT_EQ(pabi::ioctl_request::set_filter, 0x40082406u);
  EXPECT_EQ(pabi::ioctl_request::id, 0x80082407u);
  EXPECT_EQ(pabi::ioctl_request::set_bpf, 0x40042408u);
  EXPECT_EQ(pabi::ioctl_request::pause_output, 0x40042409u);
  EXPECT_EQ(pabi::ioctl_request::query_bpf, 0xc008240au);
  EXPECT_EQ(pabi::ioctl_request::modify_attributes, 0x4008240bu);
}

TEST(AbiLayout, FlagBitsFollowTheKernelOrder) {
  EXPECT_EQ(pabi::attr_flag::disabled, 1ULL << 0);
  EXPECT_EQ(pabi::attr_flag::precise_ip_mask, 3ULL << 15);
  EXPECT_EQ(pabi::attr_flag::mmap2, 1ULL << 23);
  EXPECT_EQ(pabi::attr_flag::sigtrap, 1ULL << 37);
  EXPECT_EQ(pabi::sample_format::weight_struct, 1ULL << 24);
  EXPECT_EQ(static_cast<unsigned>(pabi::RecordType::aux_output_hw_id), 21u);
}

TEST(AbiLayout, MmapPageControlWordsSitAtOneKilobyte) {
  EXPECT_EQ(offsetof(pabi::PerfEventMmapPage, data_head), 1024u);
  EXPECT_EQ(offsetof(pabi::PerfEventMmapPage, data_tail), 1032u);
  EXPECT_EQ(offsetof(pabi::PerfEventMmapPage, aux_head), 1056u);
}

TEST(AbiLayout, BranchFlagsDecode) {
  // mispred=1, cycles=0x1234, type=ind_call(5), priv=2
  std::uint64_t flags = 1 | (0x1234ULL << 4) | (5ULL << 20) | (2ULL << 30);
  EXPECT_EQ(pabi::branch_flags::mispred.get(flags), 1u);
  EXPECT_EQ(pabi::branch_flags::predicted.get(flags), 0u);
  EXPECT_EQ(pabi::branch_flags::cycles.get(flags), 0x1234u);
  EXPECT_EQ(pabi::branch_flags::type.get(flags), 5u);
  EXPECT_EQ(pabi::branch_flags::priv.get(flags), 2u);
}
