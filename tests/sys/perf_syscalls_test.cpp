// The syscall layer: raw perf_event_open over attr buffers of any size (the kernel's E2BIG size
// renegotiation), the size-policy wrapper, ioctl/read/close wrappers and the prctl switches.
#include "perfscope/sys/perf_syscalls.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "perfscope/abi/ioctl_request.hpp"
#include "perfscope/abi/perf_event_attr.hpp"

namespace pabi = perfscope::abi;
namespace sys = perfscope::sys;

namespace {

pabi::PerfEventAttr task_clock() {
  pabi::PerfEventAttr attr;
  attr.type = static_cast<std::uint32_t>(pabi::EventType::software);
  attr.config = static_cast<std::uint64_t>(pabi::SoftwareEvent::task_clock);
  attr.flags = pabi::attr_flag::disabled;
  return attr;
}

// Our attr followed by `extra` zero bytes, with size set to the whole buffer.
template <std::size_t N>
std::array<std::byte, N> attr_buffer(const pabi::PerfEventAttr& attr) {
  static_assert(N >= sizeof(pabi::PerfEventAttr));
  std::array<std::byte, N> buffer{};
  std::memcpy(buffer.data(), &attr, sizeof attr);
  std::uint32_t size = N;
  std::memcpy(buffer.data() + offsetof(pabi::PerfEventAttr, size), &size, sizeof size);
  return buffer;
}

std::uint32_t size_field(std::span<const std::byte> buffer) {
  std::uint32_t size = 0;
  std::memcpy(&size, buffer.data() + offsetof(pabi::PerfEventAttr, size), sizeof size);
  return size;
}

}  // namespace

TEST(PerfEventOpenBytes, LargerAttrWithNonzeroTailIsE2bigAndTheKernelSaysItsSize) {
  auto buffer = attr_buffer<144>(task_clock());
  buffer[140] = std::byte{1};
  int result = sys::perf_event_open_bytes(buffer, 0, -1, -1, pabi::open_flag::fd_cloexec);
  if (result >= 0) {
    sys::close_fd(result);
    GTEST_SKIP() << "this kernel knows an attr of at least 144 bytes";
  }
  EXPECT_EQ(result, -E2BIG);
  std::uint32_t kernel_size = size_field(buffer);
  EXPECT_GE(kernel_size, pabi::attr_size::ver7);
  EXPECT_LT(kernel_size, 144u);
  EXPECT_LE(kernel_size, 140u);  // it stopped at the byte we set
}

TEST(PerfEventOpenBytes, LargerAttrWithZeroTailOpens) {
  auto buffer = attr_buffer<144>(task_clock());
  int fd = sys::perf_event_open_bytes(buffer, 0, -1, -1, pabi::open_flag::fd_cloexec);
  ASSERT_GE(fd, 0) << "errno " << -fd;
  EXPECT_EQ(size_field(buffer), 144u);  // untouched on success
  sys::close_fd(fd);
}

TEST(PerfEventOpenBytes, SizeBelowVersion0IsE2big) {
  auto buffer = attr_buffer<sizeof(pabi::PerfEventAttr)>(task_clock());
  std::uint32_t small = 32;
  std::memcpy(buffer.data() + offsetof(pabi::PerfEventAttr, size), &small, sizeof small);
  EXPECT_EQ(sys::perf_event_open_bytes(buffer, 0, -1, -1, pabi::open_flag::fd_cloexec), -E2BIG);
  EXPECT_GE(size_field(buffer), pabi::attr_size::ver7);
}

TEST(PerfEventOpenBytes, SizeZeroMeansVersion0) {
  auto buffer = attr_buffer<sizeof(pabi::PerfEventAttr)>(task_clock());
  std::uint32_t zero = 0;
  std::memcpy(buffer.data() + offsetof(pabi::PerfEventAttr, size), &zero, sizeof zero);
  int fd = sys::perf_event_open_bytes(buffer, 0, -1, -1, pabi::open_flag::fd_cloexec);
  ASSERT_GE(fd, 0) << "errno " << -fd;
  sys::close_fd(fd);
}

TEST(PerfEventOpen, OpensAndReportsNoRenegotiation) {
  auto outcome = sys::perf_event_open(task_clock(), 0, -1, -1, pabi::open_flag::fd_cloexec);
  ASSERT_GE(outcome.fd, 0) << "errno " << outcome.error;
  EXPECT_EQ(outcome.error, 0);
  EXPECT_EQ(outcome.kernel_size, 0u);
  EXPECT_FALSE(outcome.truncated);
  EXPECT_EQ(::fcntl(outcome.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  sys::close_fd(outcome.fd);
}

TEST(PerfEventOpen, ErrorsComeBackAsErrno) {
  auto outcome = sys::perf_event_open(task_clock(), -1, -1, -1, 0);
  EXPECT_EQ(outcome.fd, -1);
  EXPECT_EQ(outcome.error, EINVAL);
  auto strict = sys::perf_event_open(task_clock(), -1, -1, -1, 0, sys::SizePolicy::truncate);
  EXPECT_EQ(strict.error, EINVAL);
  EXPECT_FALSE(strict.truncated);
}

TEST(FirstNonzeroByteBeyond, FindsTheLowestSetByteAtOrAfterTheSize) {
  std::array<std::byte, 16> bytes{};
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 0), 16u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 8), 16u);
  bytes[3] = std::byte{0xff};
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 0), 3u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 3), 3u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 4), 16u);
  bytes[12] = std::byte{1};
  bytes[15] = std::byte{1};
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 4), 12u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 13), 15u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 16), 16u);
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, 100), 16u);
}

TEST(FirstNonzeroByteBeyond, OnARealAttr) {
  pabi::PerfEventAttr attr = task_clock();
  auto bytes = std::as_bytes(std::span{&attr, 1});
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, pabi::attr_size::ver7), bytes.size());
  attr.config3 = 0x100;  // second byte of config3
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, pabi::attr_size::ver7),
            offsetof(pabi::PerfEventAttr, config3) + 1);
  attr.sig_data = 1;
  EXPECT_EQ(sys::first_nonzero_byte_beyond(bytes, pabi::attr_size::ver6),
            offsetof(pabi::PerfEventAttr, sig_data));
}

TEST(SyscallWrappers, IoctlReadAndCloseOnAPerfFd) {
  auto outcome = sys::perf_event_open(task_clock(), 0, -1, -1, pabi::open_flag::fd_cloexec);
  ASSERT_GE(outcome.fd, 0);
  int fd = outcome.fd;
  std::uint64_t id = 0;
  EXPECT_EQ(sys::perf_ioctl(fd, pabi::ioctl_request::id, &id), 0);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(sys::perf_ioctl(fd, pabi::ioctl_request::enable, 0UL), 0);
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 1000000; ++i) sink = sink + 1;
  EXPECT_EQ(sys::perf_ioctl(fd, pabi::ioctl_request::disable, 0UL), 0);
  std::uint64_t value = 0;
  EXPECT_EQ(sys::read_fd(fd, &value, sizeof value), 8);
  EXPECT_GT(value, 0u);
  // A buffer smaller than the read_format needs is ENOSPC.
  std::uint32_t too_small = 0;
  EXPECT_EQ(sys::read_fd(fd, &too_small, sizeof too_small), -ENOSPC);
  // An ioctl perf does not know.
  EXPECT_EQ(sys::perf_ioctl(fd, 0x24ffUL, 0UL), -ENOTTY);
  sys::close_fd(fd);
  EXPECT_EQ(sys::perf_ioctl(fd, pabi::ioctl_request::enable, 0UL), -EBADF);
  EXPECT_EQ(sys::read_fd(fd, &value, sizeof value), -EBADF);
  sys::close_fd(-1);  // a no-op, not an error
}

TEST(SyscallWrappers, PrctlSwitchesSucceed) {
  EXPECT_EQ(sys::task_perf_events_disable(), 0);
  EXPECT_EQ(sys::task_perf_events_enable(), 0);
}
