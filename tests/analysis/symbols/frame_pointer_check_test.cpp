#include "perfscope/analysis/symbols/frame_pointer_check.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "perfscope/core/error.hpp"
#include "support/test_support.hpp"

namespace perfscope {
namespace {

struct ProbeFunctions {
  std::size_t count = 0;
  std::size_t with_frame_pointer = 0;
  double fraction() const { return count ? static_cast<double>(with_frame_pointer) / count : 0; }
};

// Only the functions of tests/analysis/data/frame_pointer_probe.cpp: the C runtime's start-up
// code linked into the same binary was built with its own flags.
ProbeFunctions probe_functions(const FramePointerReport& report) {
  ProbeFunctions result;
  for (const auto& function : report.functions) {
    if (function.name.rfind("fp_probe_", 0) != 0) continue;
    ++result.count;
    if (function.sets_frame_pointer) ++result.with_frame_pointer;
  }
  return result;
}

TEST(FramePointerCheck, BinaryBuiltWithFramePointersHasThem) {
  auto report = check_frame_pointers(PERFSCOPE_FP_WITH_PATH);
  ASSERT_TRUE(report.architecture_supported) << report.machine;
  auto probes = probe_functions(report);
  EXPECT_GE(probes.count, 7u);
  EXPECT_GT(probes.fraction(), 0.8) << probes.with_frame_pointer << " of " << probes.count;
  EXPECT_EQ(report.symbol_table, ".symtab");
  EXPECT_FALSE(report.stripped);
  EXPECT_TRUE(report.has_debug_info);
  EXPECT_TRUE(report.has_eh_frame);
}

TEST(FramePointerCheck, BinaryBuiltWithoutFramePointersLacksThem) {
  auto report = check_frame_pointers(PERFSCOPE_FP_WITHOUT_PATH);
  ASSERT_TRUE(report.architecture_supported) << report.machine;
  auto probes = probe_functions(report);
  EXPECT_GE(probes.count, 7u);
  EXPECT_LT(probes.fraction(), 0.2) << probes.with_frame_pointer << " of " << probes.count;
  ASSERT_FALSE(report.advice.empty());
  EXPECT_NE(report.advice.front().find("-fno-omit-frame-pointer"), std::string::npos)
      << report.advice.front();
}

TEST(FramePointerCheck, FunctionsAreDistinctAndCounted) {
  auto report = check_frame_pointers(PERFSCOPE_FP_WITH_PATH);
  std::size_t with = 0;
  for (std::size_t i = 0; i < report.functions.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(report.functions[i - 1].address, report.functions[i].address);
    }
    EXPECT_GT(report.functions[i].size, 0u);
    with += report.functions[i].sets_frame_pointer;
  }
  EXPECT_EQ(with, report.functions_with_frame_pointer);
  EXPECT_DOUBLE_EQ(report.fraction(), static_cast<double>(with) / report.functions.size());
  EXPECT_EQ(report.frame_pointers_usable(), report.fraction() >= 0.5);
}

TEST(FramePointerCheck, BuildIdMatchesReadelf) {
  auto report = check_frame_pointers(PERFSCOPE_FP_WITH_PATH);
  ASSERT_FALSE(report.build_id.empty());
  auto readelf = testing::run_command({"readelf", "-n", PERFSCOPE_FP_WITH_PATH});
  if (readelf.exit_status == 127) GTEST_SKIP() << "readelf (binutils) is not installed";
  EXPECT_NE(readelf.out.find("Build ID: " + report.build_id), std::string::npos) << readelf.out;
}

TEST(FramePointerCheck, StrippedCopyFallsBackToDynamicSymbols) {
  std::string copy = ::testing::TempDir() + "frame_pointer_probe_stripped";
  auto strip = testing::run_command({"objcopy", "--strip-all", PERFSCOPE_FP_WITH_PATH, copy});
  if (strip.exit_status == 127) GTEST_SKIP() << "objcopy (binutils) is not installed";
  ASSERT_EQ(strip.exit_status, 0) << strip.err;
  auto report = check_frame_pointers(copy);
  ::unlink(copy.c_str());
  EXPECT_TRUE(report.stripped);
  EXPECT_FALSE(report.has_debug_info);
  EXPECT_NE(report.symbol_table, ".symtab");
  // The probe functions are not exported, so a stripped copy no longer names them.
  EXPECT_EQ(probe_functions(report).count, 0u);
  bool advises_symbols = false;
  for (const auto& line : report.advice) advises_symbols |= line.find("strip") != std::string::npos;
  EXPECT_TRUE(advises_symbols);
}

TEST(FramePointerCheck, MissingFileIsAnErrorNamingIt) {
  try {
    check_frame_pointers("/nonexistent/perfscope-binary");
    FAIL() << "no error for a missing file";
  } catch (const Error& error) {
    EXPECT_EQ(error.errnum(), ENOENT);
    EXPECT_NE(error.summary().find("/nonexistent/perfscope-binary"), std::string::npos);
  }
}

TEST(FramePointerCheck, NonElfFileIsAnError) {
  try {
    check_frame_pointers("/proc/self/status");
    FAIL() << "no error for a text file";
  } catch (const Error& error) {
    EXPECT_EQ(error.errnum(), ENOEXEC);
    EXPECT_NE(error.summary().find("not an ELF file"), std::string::npos) << error.summary();
  }
}

std::vector<std::uint8_t> little_endian(std::initializer_list<std::uint32_t> words) {
  std::vector<std::uint8_t> bytes;
  for (auto word : words) {
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back((word >> shift) & 0xff);
  }
  return bytes;
}

TEST(FramePointerPrologue, X86_64) {
  std::vector<std::uint8_t> plain = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
  std::vector<std::uint8_t> endbr = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5};
  std::vector<std::uint8_t> other_encoding = {0x55, 0x48, 0x8b, 0xec};
  // GCC's scheduling: push %rbp; mov %esi,%r9d; mov %rdx,%r8; mov %rsp,%rbp
  std::vector<std::uint8_t> interleaved = {0x55, 0x41, 0x89, 0xf1, 0x49,
                                           0x89, 0xd0, 0x48, 0x89, 0xe5};
  // mov %rsp,%rbp without the push is not a frame record.
  std::vector<std::uint8_t> no_push = {0x48, 0x89, 0xe5, 0xc3};
  // push %rbp as a callee-saved register, then mov %rdi,%rbp: no frame pointer.
  std::vector<std::uint8_t> rbp_as_register = {0x55, 0x53, 0x48, 0x89, 0xfd, 0xc3};
  std::vector<std::uint8_t> leaf = {0x48, 0x8d, 0x04, 0x37, 0xc3};  // lea (%rdi,%rsi),%rax; ret
  EXPECT_TRUE(x86_64_sets_frame_pointer(plain.data(), plain.size()));
  EXPECT_TRUE(x86_64_sets_frame_pointer(endbr.data(), endbr.size()));
  EXPECT_TRUE(x86_64_sets_frame_pointer(other_encoding.data(), other_encoding.size()));
  EXPECT_TRUE(x86_64_sets_frame_pointer(interleaved.data(), interleaved.size()));
  EXPECT_FALSE(x86_64_sets_frame_pointer(no_push.data(), no_push.size()));
  EXPECT_FALSE(x86_64_sets_frame_pointer(rbp_as_register.data(), rbp_as_register.size()));
  EXPECT_FALSE(x86_64_sets_frame_pointer(leaf.data(), leaf.size()));
  // A prologue cut off by the end of the function is not one.
  EXPECT_FALSE(x86_64_sets_frame_pointer(plain.data(), 3));
}

TEST(FramePointerPrologue, Aarch64) {
  // stp x29, x30, [sp, #-16]!; mov x29, sp; ...; ret
  auto pre_index = little_endian({0xa9bf7bfd, 0x910003fd, 0xd65f03c0});
  // paciasp; stp x29, x30, [sp, #-32]!; mov x29, sp
  auto with_pac = little_endian({0xd503233f, 0xa9be7bfd, 0x910003fd});
  // sub sp, sp, #64; stp x29, x30, [sp, #48]; add x29, sp, #48
  auto offset_form = little_endian({0xd10103ff, 0xa9037bfd, 0x9100c3fd});
  // stp x29, x30 saved but x29 never set: no frame record chain.
  auto saved_only = little_endian({0xa9bf7bfd, 0xd65f03c0});
  // sub sp, sp, #16; ret
  auto leaf = little_endian({0xd10043ff, 0xd65f03c0});
  EXPECT_TRUE(aarch64_sets_frame_pointer(pre_index.data(), pre_index.size()));
  EXPECT_TRUE(aarch64_sets_frame_pointer(with_pac.data(), with_pac.size()));
  EXPECT_TRUE(aarch64_sets_frame_pointer(offset_form.data(), offset_form.size()));
  EXPECT_FALSE(aarch64_sets_frame_pointer(saved_only.data(), saved_only.size()));
  EXPECT_FALSE(aarch64_sets_frame_pointer(leaf.data(), leaf.size()));
}

}  // namespace
}  // namespace perfscope
