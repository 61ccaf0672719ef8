// Outputs given as a device (-o /dev/null, as perf users write to time a run without a file):
// written in place. The device is never renamed to .old, replaced by a file through a rename, or
// given mode 0600 (as root, each would break /dev/null for the whole machine). The test writes
// through a symbolic link to /dev/null, so that a regression replaces the link, not the device.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

TEST(DeviceOutput, DevNullStaysADevice) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  pt::TempDir dir;
  std::string recording = dir.path() + "/whole.data";
  ASSERT_EQ(pt::run_perfscope({"record", "-o", recording, "--", "true"}).exit_status, 0);
  std::string link = dir.path() + "/null";
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  const std::vector<std::vector<std::string>> writers{
      {"record", "-o", link, "--", "true"},
      {"stat", "-o", link, "--", "true"},
      {"report", "--stdio", "-o", link, "-i", recording},
      {"report", "--format", "pprof", "-o", link, "-i", recording},
      {"archive", "-o", link, "-i", recording},
      {"diff", "--output", link, recording, recording}};
  for (const auto& writer : writers) {
    SCOPED_TRACE(writer.front());
    auto result = pt::run_perfscope(writer);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    struct stat info {};
    ASSERT_EQ(::lstat(link.c_str(), &info), 0);
    EXPECT_TRUE(S_ISLNK(info.st_mode)) << "the link was replaced by a file";
    EXPECT_NE(::access((link + ".old").c_str(), F_OK), 0) << "the device was renamed";
    ASSERT_EQ(::stat("/dev/null", &info), 0);
    EXPECT_TRUE(S_ISCHR(info.st_mode));
    EXPECT_EQ(info.st_mode & 07777, before.st_mode & 07777) << "the device's mode changed";
    if ((info.st_mode & 07777) != (before.st_mode & 07777)) {
      ::chmod("/dev/null", before.st_mode & 07777);  // give the machine its /dev/null back
    }
    if (!S_ISLNK(info.st_mode)) {
      ::unlink(link.c_str());
      ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
    }
  }
}

}  // namespace
