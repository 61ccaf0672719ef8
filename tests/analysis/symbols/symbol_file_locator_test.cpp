// SymbolFileLocator: where a recorded file is read from build-id directories (perf's ~/.debug
// layout, old and new), a symfs and the recorded path, and that other builds are refused.
#include "perfscope/analysis/symbols/symbol_file_locator.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using perfscope::LocatedFile;
using perfscope::path_under_root;
using perfscope::SymbolFileLocator;
using perfscope::SymbolLookupRoots;

const std::string this_test = "/proc/self/exe";

std::string copy_of_this_test(const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy_file(fs::read_symlink(this_test), to);
  return to;
}

std::vector<std::uint8_t> own_build_id() {
  auto id = perfscope::read_build_id(fs::read_symlink(this_test).string());
  return id ? *id : std::vector<std::uint8_t>{};
}

TEST(PathUnderRoot, KeepsPathsInsideTheRoot) {
  EXPECT_EQ(path_under_root("/usr/lib/libc.so.6"), "usr/lib/libc.so.6");
  EXPECT_EQ(path_under_root("//usr/./lib//x"), "usr/lib/x");
  EXPECT_EQ(path_under_root("[kernel.kallsyms]"), "[kernel.kallsyms]");
  EXPECT_EQ(path_under_root("/usr/../../etc/passwd"), "");
  EXPECT_EQ(path_under_root("relative/path"), "");
  EXPECT_EQ(path_under_root("[x/../y]"), "");
  EXPECT_EQ(path_under_root(""), "");
}

TEST(SymbolFileLocator, WithoutRootsTheRecordedPath) {
  SymbolFileLocator locator;
  LocatedFile where = locator.locate("/no/such/file", std::vector<std::uint8_t>{1, 2, 3});
  EXPECT_EQ(where.path, "/no/such/file");
  EXPECT_FALSE(where.from_root);
  EXPECT_TRUE(where.rejected.empty());
}

TEST(SymbolFileLocator, FindsBothPerfLayoutsByBuildId) {
  auto id = own_build_id();
  if (id.empty()) GTEST_SKIP() << "this test binary has no build id";
  std::string hex = perfscope::build_id_hex(id);
  perfscope::testing::TempDir root;
  // perf since 4.x: <root>/<path>/<build id>/elf, and `debug` beside it.
  std::string elf = copy_of_this_test(root.path() + "/opt/app/bin/tool/" + hex + "/elf");
  root.write("opt/app/bin/tool/" + hex + "/debug", "not really a debug file");
  SymbolFileLocator locator(SymbolLookupRoots{{root.path()}, ""});
  // Padding zeros (perf.data's 20-byte slots) do not matter.
  std::vector<std::uint8_t> padded = id;
  padded.resize(24, 0);
  LocatedFile where = locator.locate("/opt/app/bin/tool", padded);
  EXPECT_EQ(where.path, elf);
  EXPECT_TRUE(where.from_root);
  EXPECT_EQ(locator.locate_debug("/opt/app/bin/tool", id),
            root.path() + "/opt/app/bin/tool/" + hex + "/debug");
  // Without a build id, the one build archived under the path stands in for it.
  EXPECT_EQ(locator.locate("/opt/app/bin/tool", {}).path, elf);

  // perf before 4.x: <root>/<path>/<build id> is the file itself.
  perfscope::testing::TempDir old_root;
  std::string old_file = copy_of_this_test(old_root.path() + "/opt/old/" + hex);
  SymbolFileLocator old_locator(SymbolLookupRoots{{old_root.path()}, ""});
  EXPECT_EQ(old_locator.locate("/opt/old", id).path, old_file);
}

TEST(SymbolFileLocator, RefusesAnotherBuildAndSaysWhy) {
  auto id = own_build_id();
  if (id.empty()) GTEST_SKIP() << "this test binary has no build id";
  perfscope::testing::TempDir root;
  std::vector<std::uint8_t> other = id;
  other[0] ^= 0xff;  // the recording's build id: not this file's
  std::string hex = perfscope::build_id_hex(other);
  std::string elf = copy_of_this_test(root.path() + "/opt/app/tool/" + hex + "/elf");
  SymbolFileLocator locator(SymbolLookupRoots{{root.path()}, ""});
  LocatedFile where = locator.locate("/opt/app/tool", other);
  EXPECT_EQ(where.path, "/opt/app/tool");
  EXPECT_FALSE(where.from_root);
  ASSERT_EQ(where.rejected.size(), 1u);
  EXPECT_NE(where.rejected[0].find("not using " + elf), std::string::npos) << where.rejected[0];
  EXPECT_NE(where.rejected[0].find(perfscope::build_id_hex(id)), std::string::npos);
  EXPECT_NE(where.rejected[0].find(hex), std::string::npos);
}

TEST(SymbolFileLocator, SymfsIsCheckedWhenTheBuildIdIsKnown) {
  auto id = own_build_id();
  if (id.empty()) GTEST_SKIP() << "this test binary has no build id";
  perfscope::testing::TempDir symfs;
  std::string file = copy_of_this_test(symfs.path() + "/usr/bin/tool");
  SymbolFileLocator locator(SymbolLookupRoots{{}, symfs.path()});
  EXPECT_EQ(locator.locate("/usr/bin/tool", id).path, file);
  EXPECT_EQ(locator.locate("/usr/bin/tool", {}).path, file);  // unchecked, as perf
  std::vector<std::uint8_t> other = id;
  other[1] ^= 0x01;
  LocatedFile where = locator.locate("/usr/bin/tool", other);
  EXPECT_EQ(where.path, "/usr/bin/tool");
  EXPECT_EQ(where.rejected.size(), 1u);
  EXPECT_EQ(locator.debug_roots("/usr/lib/debug"),
            (std::vector<std::string>{"/usr/lib/debug", symfs.path() + "/usr/lib/debug"}));
}

TEST(SymbolFileLocator, KallsymsAndJitMapsOfArchives) {
  perfscope::testing::TempDir root;
  std::vector<std::uint8_t> id{0xab, 0xcd, 0xef};
  auto candidates = SymbolFileLocator(SymbolLookupRoots{{root.path()}, ""}).kallsyms_candidates(id);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0], root.path() + "/[kernel.kallsyms]/abcdef/kallsyms");
  EXPECT_EQ(candidates[1], root.path() + "/.build-id/ab/cdef/kallsyms");

  SymbolFileLocator locator(SymbolLookupRoots{{root.path()}, ""});
  EXPECT_EQ(locator.jit_map_path(4242, "/tmp"), "/tmp/perf-4242.map");
  fs::create_directory(root.path() + "/tmp");
  std::string archived = root.write("tmp/perf-4242.map", "1000 10 jitted\n");
  EXPECT_EQ(locator.jit_map_path(4242, "/tmp"), archived);
}

// A build id whose last byte is 0 (one SHA-1 id in 256 ends so; a CI build of this very test
// did): perf keys it with all 20 bytes, so the 00 is not taken for padding. A 16-byte id in a
// 20-byte slot is still found under its own 16 bytes.
TEST(SymbolFileLocator, BuildIdsEndingInZeroAreNotPadding) {
  std::vector<std::uint8_t> id(20, 0x5a);
  id.back() = 0x00;
  std::string hex = perfscope::build_id_hex(id);
  ASSERT_EQ(hex.size(), 40u);
  EXPECT_EQ(perfscope::build_id_hex_spellings(id),
            (std::vector<std::string>{hex, hex.substr(0, 38)}));
  std::vector<std::uint8_t> padded = id;
  padded.resize(24, 0);  // a perf.data slot
  EXPECT_EQ(perfscope::build_id_hex_spellings(padded),
            (std::vector<std::string>{hex, hex.substr(0, 38)}));
  EXPECT_EQ(perfscope::build_id_hex_spellings(std::vector<std::uint8_t>{0xab, 0xcd}),
            (std::vector<std::string>{"abcd"}));
  EXPECT_TRUE(perfscope::build_id_hex_spellings(std::vector<std::uint8_t>(24, 0)).empty());

  perfscope::testing::TempDir root;
  fs::create_directories(root.path() + "/opt/tool/" + hex);
  std::string debug = root.write("opt/tool/" + hex + "/debug", "a debug file");
  SymbolFileLocator locator(SymbolLookupRoots{{root.path()}, ""});
  EXPECT_EQ(locator.locate_debug("/opt/tool", padded), debug);
  EXPECT_EQ(locator.kallsyms_candidates(padded).front(),
            root.path() + "/[kernel.kallsyms]/" + hex + "/kallsyms");

  std::vector<std::uint8_t> md5(16, 0x33);
  std::vector<std::uint8_t> md5_in_slot = md5;
  md5_in_slot.resize(20, 0);
  std::string md5_hex = perfscope::build_id_hex(md5);
  fs::create_directories(root.path() + "/opt/md5/" + md5_hex);
  std::string md5_debug = root.write("opt/md5/" + md5_hex + "/debug", "a debug file");
  EXPECT_EQ(locator.locate_debug("/opt/md5", md5_in_slot), md5_debug);
}

}  // namespace

namespace {

// The Symbolizer reads through the lookup roots: the kernel's kallsyms and a JIT map from an
// archive, names kept as recorded; and what it could not find is listed.
TEST(SymbolizerLookupRoots, KallsymsAndJitMapsFromAnArchive) {
  perfscope::testing::TempDir root;
  std::vector<std::uint8_t> kernel_id{0x12, 0x34, 0x56, 0x78};
  fs::create_directories(root.path() + "/[kernel.kallsyms]/12345678");
  root.write("[kernel.kallsyms]/12345678/kallsyms",
             "ffffffff81000000 T _text\nffffffff81000100 T archived_kernel_function\n"
             "ffffffff81000200 T next_function\n");
  fs::create_directories(root.path() + "/tmp");
  root.write("tmp/perf-4242.map", "7f0000001000 100 archived_jit_function\n");

  perfscope::SymbolizerOptions options;
  options.kallsyms_path = root.path() + "/no-such-kallsyms";
  options.build_id_cache_dir = root.path() + "/no-cache";
  options.kernel_build_id = kernel_id;
  options.kernel_reference_address = 0xffffffff81000000;
  options.lookup.build_id_dirs = {root.path()};
  perfscope::Symbolizer symbolizer(options);
  auto kernel = symbolizer.resolve_kernel(0xffffffff81000110);
  EXPECT_EQ(kernel.symbol, "archived_kernel_function");
  EXPECT_EQ(kernel.offset, 0x10u);
  auto jit = symbolizer.resolve_jit(4242, 0x7f0000001010);
  EXPECT_EQ(jit.symbol, "archived_jit_function");
  EXPECT_EQ(jit.dso, "/tmp/perf-4242.map");  // the recorded name, not the archive's path

  auto absent = symbolizer.resolve_file("/opt/gone/tool", 0x1000, kernel_id);
  EXPECT_TRUE(absent.symbol.empty());
  auto missing = symbolizer.missing_files();
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].path, "/opt/gone/tool");
  EXPECT_EQ(missing[0].build_id, "12345678");
  EXPECT_EQ(missing[0].reason, "not found");
}

}  // namespace
