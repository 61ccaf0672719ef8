// Symbol archives through libarchive: what write_symbol_archive packs comes back byte for byte
// from ExtractedSymbolArchive in every compression, links are counted and never made, the
// unpacked directory goes with the object, and unsafe or oversized archives are refused.
#include "perfscope/analysis/archive/symbol_archive.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using perfscope::ExtractedSymbolArchive;
using perfscope::SymbolArchiveError;
using perfscope::SymbolArchiveFile;
using perfscope::SymbolArchivePlan;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

SymbolArchivePlan plan_of(const perfscope::testing::TempDir& dir) {
  SymbolArchivePlan plan;
  std::string elf = dir.write("source-elf", std::string(100000, 'x') + "end");
  plan.files.push_back(SymbolArchiveFile{"opt/app/abcdef/elf", elf, "/opt/app", 100003, {}});
  plan.files.push_back(SymbolArchiveFile{"[kernel.kallsyms]/123456/kallsyms", "/proc/kallsyms",
                                         "[kernel.kallsyms]", 18,
                                         std::string("ffffffff81000000 T _text\n")});
  plan.links.emplace_back(".build-id/ab/cdef", "../../opt/app/abcdef");
  return plan;
}

TEST(SymbolArchive, RoundTripInEveryCompression) {
  perfscope::testing::TempDir dir;
  SymbolArchivePlan plan = plan_of(dir);
  for (std::string suffix : {".tar.zst", ".tar.bz2", ".tar.gz", ".tar.xz", ".tar"}) {
    std::string path = dir.path() + "/out" + suffix;
    auto summary = perfscope::write_symbol_archive(plan, path);
    EXPECT_EQ(summary.files, 2u);
    EXPECT_EQ(summary.links, 1u);
    EXPECT_EQ(summary.bytes_in, 100003u + 25u);
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(summary.bytes_out, static_cast<std::uint64_t>(st.st_size));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    if (suffix != ".tar") {
      EXPECT_LT(summary.bytes_out, 20000u) << suffix << ": not compressed";
    }
    std::string directory;
    {
      auto extracted = ExtractedSymbolArchive::extract(path);
      directory = extracted.directory();
      EXPECT_EQ(extracted.summary().files, 2u) << suffix;
      EXPECT_EQ(extracted.summary().links, 1u);
      EXPECT_EQ(extracted.summary().bytes, 100003u + 25u);
      EXPECT_EQ(read_file(directory + "/opt/app/abcdef/elf"), std::string(100000, 'x') + "end");
      EXPECT_EQ(read_file(directory + "/[kernel.kallsyms]/123456/kallsyms"),
                "ffffffff81000000 T _text\n");
      EXPECT_FALSE(fs::exists(fs::symlink_status(directory + "/.build-id/ab/cdef")))
          << "links are never made on disk";
      struct stat dir_stat;
      ASSERT_EQ(::stat(directory.c_str(), &dir_stat), 0);
      EXPECT_EQ(dir_stat.st_mode & 0777, 0700u);
    }
    EXPECT_FALSE(fs::exists(directory)) << "the unpacked directory outlived its object";
  }
}

TEST(SymbolArchive, RefusesMembersOutsideTheDirectory) {
  perfscope::testing::TempDir dir;
  std::string source = dir.write("payload", "gotcha");
  for (std::string name : {"../escaped", "a/../../escaped", "/tmp/escaped-absolute"}) {
    SymbolArchivePlan plan;
    plan.files.push_back(SymbolArchiveFile{"fine/file", source, "/fine", 6, {}});
    plan.files.push_back(SymbolArchiveFile{name, source, "/x", 6, {}});
    std::string path = dir.path() + "/evil.tar.zst";
    perfscope::write_symbol_archive(plan, path);
    try {
      ExtractedSymbolArchive::extract(path);
      ADD_FAILURE() << name << " was accepted";
    } catch (const SymbolArchiveError& error) {
      std::string text = error.what();
      EXPECT_NE(text.find("member '" + name + "'"), std::string::npos) << text;
      EXPECT_NE(text.find("refusing the archive"), std::string::npos) << text;
    }
  }
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "escaped-absolute"));
}

TEST(SymbolArchive, BoundsTheUnpackedSizeAndMemberCount) {
  perfscope::testing::TempDir dir;
  SymbolArchivePlan plan = plan_of(dir);
  std::string path = dir.path() + "/out.tar.zst";
  perfscope::write_symbol_archive(plan, path);
  perfscope::SymbolArchiveLimits small;
  small.max_bytes = 50000;
  EXPECT_THROW(ExtractedSymbolArchive::extract(path, small), SymbolArchiveError);
  perfscope::SymbolArchiveLimits few;
  few.max_members = 2;  // three members: the link counts
  try {
    ExtractedSymbolArchive::extract(path, few);
    ADD_FAILURE() << "more members than the limit were accepted";
  } catch (const SymbolArchiveError& error) {
    EXPECT_NE(std::string(error.what()).find("more than 2 members"), std::string::npos)
        << error.what();
  }
  auto fine = ExtractedSymbolArchive::extract(path);
  EXPECT_EQ(fine.summary().files, 2u);
}

TEST(SymbolArchive, ClearErrorsForWhatIsNotAnArchive) {
  perfscope::testing::TempDir dir;
  std::string text = dir.write("notes.txt", "not an archive\n");
  EXPECT_THROW(ExtractedSymbolArchive::extract(text), SymbolArchiveError);
  EXPECT_THROW(ExtractedSymbolArchive::extract(dir.path() + "/absent"), SymbolArchiveError);
  SymbolArchivePlan plan;
  plan.files.push_back(SymbolArchiveFile{"a/elf", dir.path() + "/absent", "/a", 1, {}});
  EXPECT_THROW(perfscope::write_symbol_archive(plan, dir.path() + "/out.tar.zst"),
               SymbolArchiveError);
  EXPECT_FALSE(fs::exists(dir.path() + "/out.tar.zst")) << "a failed archive was left behind";
}

}  // namespace
