// `perfscope archive` end to end: a recording of a program copied into a temporary directory is
// archived, the program is renamed away, and report/script/annotate --archive name the same
// functions as before; perf archive's tarballs are read; perf report resolves our archive
// unpacked in a HOME's ~/.debug; build-id mismatches are reported and not used; archives whose
// members would leave the directory are refused; exports list the files that were missing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
namespace fs = std::filesystem;
using nlohmann::json;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string known_answer_rebuilt = PERFSCOPE_KNOWN_ANSWER_REBUILT_PATH;
const std::string known_answer_nofp = PERFSCOPE_KNOWN_ANSWER_NOFP_PATH;
const std::string jit_workload = PERFSCOPE_JIT_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";

bool perf_available() { return ::access(perf_path.c_str(), X_OK) == 0; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The report's table without its header (the header names the debug files used, which lie in
// the unpacked archive's temporary directory).
std::string table_of(const std::string& report) {
  std::istringstream in(report);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() != '#') out += line + '\n';
  }
  return out;
}

std::string hex_build_id(const std::string& path) {
  auto id = perfscope::read_build_id(path);
  return id ? perfscope::build_id_hex(*id) : std::string();
}

// A recording of the known-answer workload copied to DIR/known_answer (the path the recording
// names), ready to be archived and renamed away.
class ArchiveCli : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = dir_.path() + "/known_answer";
    fs::copy_file(known_answer_fp, binary_);
    data_ = dir_.path() + "/perf.data";
    // The unpacked archives go under the test's own TMPDIR: the test sees that they are removed.
    unpack_dir_ = dir_.path() + "/tmp";
    fs::create_directory(unpack_dir_);
    ::setenv("TMPDIR", unpack_dir_.c_str(), 1);
    // A build-id cache of the test's own: perf's and perfscope's recordings elsewhere in the
    // suite cache copies of the known-answer binary in ~/.debug, which report would name the
    // renamed-away binary's functions from.
    if (const char* home = std::getenv("HOME")) saved_home_ = home;
    std::string home = dir_.path() + "/home";
    fs::create_directory(home);
    ::setenv("HOME", home.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("TMPDIR");
    if (saved_home_) ::setenv("HOME", saved_home_->c_str(), 1);
  }

  void record() {
    auto result = pt::run_perfscope(
        {"record", "-F", "2000", "-e", "cpu-clock", "-g", "-o", data_, "--", binary_, "80"});
    ASSERT_EQ(result.exit_status, 0) << result.err;
  }

  pt::CommandResult report(std::vector<std::string> extra = {}) {
    std::vector<std::string> arguments{"report", "-i",   data_, "--stdio", "--no-children",
                                       "-g",     "none", "-s",  "dso,sym"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return pt::run_perfscope(arguments);
  }

  json export_json(const std::string& format, std::vector<std::string> extra = {}) {
    std::string out = dir_.path() + "/export." + format;
    std::vector<std::string> arguments{"report", "-i", data_, "--format", format, "-o", out};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    auto result = pt::run_perfscope(arguments);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return json::parse(read_file(out));
  }

  void rename_binary_away() { fs::rename(binary_, binary_ + ".gone"); }

  bool unpacked_dirs_left() const { return !fs::is_empty(unpack_dir_); }

  pt::TempDir dir_;
  std::string binary_, data_, unpack_dir_;
  std::optional<std::string> saved_home_;
};

TEST_F(ArchiveCli, RoundTripNamesEverythingWithoutTheBinaries) {
  record();
  auto before = report();
  ASSERT_EQ(before.exit_status, 0) << before.err;
  ASSERT_NE(before.out.find("leaf_60"), std::string::npos) << before.out;

  std::string archive = dir_.path() + "/perf.data.tar.zst";
  auto packed = pt::run_perfscope({"archive", "-i", data_, "-o", archive});
  ASSERT_EQ(packed.exit_status, 0) << packed.err;
  EXPECT_NE(packed.out.find("wrote " + archive), std::string::npos) << packed.out;
  EXPECT_NE(packed.out.find("packed into"), std::string::npos) << packed.out;
  struct stat st;
  ASSERT_EQ(::stat(archive.c_str(), &st), 0);
  EXPECT_GT(st.st_size, 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  rename_binary_away();
  auto without = report();
  ASSERT_EQ(without.exit_status, 0) << without.err;
  EXPECT_EQ(without.out.find("leaf_60"), std::string::npos)
      << "the binary is gone: nothing should name its functions\n"
      << without.out;

  auto with = report({"--archive", archive});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_EQ(table_of(with.out), table_of(before.out));
  EXPECT_FALSE(unpacked_dirs_left()) << "the unpacked archive was not removed";

  // Exports carry the names themselves: nothing is left for a viewer to symbolize.
  json speedscope = export_json("speedscope", {"--archive", archive});
  bool named = false;
  for (const auto& frame : speedscope.at("shared").at("frames")) {
    named = named || frame.at("name") == "leaf_60";
  }
  EXPECT_TRUE(named) << speedscope.at("shared").dump();
  for (const auto& missing : speedscope.value("missingFiles", json::array())) {
    EXPECT_NE(missing.at("path"), binary_);
  }

  auto script = pt::run_perfscope({"script", "-i", data_, "-F", "comm,sym", "--archive", archive});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_NE(script.out.find("leaf_60"), std::string::npos);
  EXPECT_NE(script.out.find("work_60"), std::string::npos);

  auto annotate =
      pt::run_perfscope({"annotate", "-i", data_, "leaf_60", "--stdio", "--archive", archive});
  ASSERT_EQ(annotate.exit_status, 0) << annotate.err;
  EXPECT_NE(annotate.out.find("leaf_60 in " + binary_), std::string::npos) << annotate.out;
  EXPECT_NE(annotate.out.find("imul"), std::string::npos) << "no disassembly\n" << annotate.out;

  // An archive unpacked by hand (tar xf) is a lookup root as it is.
  std::string unpacked = dir_.path() + "/unpacked";
  fs::create_directory(unpacked);
  auto tar = pt::run_command({"tar", "xf", archive, "-C", unpacked});
  if (tar.exit_status == 0) {
    auto from_directory = report({"--archive", unpacked});
    ASSERT_EQ(from_directory.exit_status, 0) << from_directory.err;
    EXPECT_EQ(table_of(from_directory.out), table_of(before.out));
  }
}

// Without frame pointers the callers come from DWARF unwinding, which reads the binary's CFI:
// from the archive too.
TEST_F(ArchiveCli, DwarfStacksUnwindFromTheArchive) {
  fs::remove(binary_);
  fs::copy_file(known_answer_nofp, binary_);
  auto recorded = pt::run_perfscope(
      {"record", "-F", "1000", "--call-graph", "dwarf", "-o", data_, "--", binary_, "40"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto callers = [&](std::vector<std::string> extra) {
    std::vector<std::string> arguments{"script", "-i", data_, "-F", "sym"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    auto result = pt::run_perfscope(arguments);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    std::size_t count = 0;
    for (std::size_t at = result.out.find("work_60"); at != std::string::npos;
         at = result.out.find("work_60", at + 1)) {
      ++count;
    }
    return count;
  };
  std::size_t before = callers({});
  ASSERT_GT(before, 0u);
  std::string archive = dir_.path() + "/perf.data.tar.zst";
  ASSERT_EQ(pt::run_perfscope({"archive", "-i", data_, "-o", archive}).exit_status, 0);
  rename_binary_away();
  EXPECT_EQ(callers({}), 0u);
  EXPECT_EQ(callers({"--archive", archive}), before);
}

// JIT code is named by /tmp/perf-PID.map, which is gone after a reboot or on another machine.
// perfscope record carries the map in its file; a file perf recorded does not, and the archive
// keeps the map at its path.
TEST_F(ArchiveCli, JitMapsTravelInTheArchive) {
  if (jit_workload.empty()) GTEST_SKIP() << "the JIT workload is x86-64 code";
  auto recorded = pt::run_perfscope(
      {"record", "-F", "2000", "-e", "cpu-clock", "-o", data_, "--", jit_workload, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::smatch pid;
  ASSERT_TRUE(std::regex_search(recorded.out, pid, std::regex("jit pid ([0-9]+)"))) << recorded.out;
  fs::remove(fmt::format("/tmp/perf-{}.map", pid[1].str()));
  auto carried = report();
  EXPECT_NE(carried.out.find("jit_spin_loop"), std::string::npos) << carried.out;

  if (!perf_available()) GTEST_SKIP() << "perf is not installed: no recording without the map";
  auto by_perf = pt::run_command({perf_path, "record", "-q", "-F", "2000", "-e", "cpu-clock", "-o",
                                  data_, "--", jit_workload, "20"});
  ASSERT_EQ(by_perf.exit_status, 0) << by_perf.err;
  ASSERT_TRUE(std::regex_search(by_perf.out, pid, std::regex("jit pid ([0-9]+)"))) << by_perf.out;
  std::string map = fmt::format("/tmp/perf-{}.map", pid[1].str());
  ASSERT_NE(report().out.find("jit_spin_loop"), std::string::npos);
  std::string archive = dir_.path() + "/perf.data.tar.zst";
  auto packed = pt::run_perfscope({"archive", "-i", data_, "-o", archive});
  fs::remove(map);
  ASSERT_EQ(packed.exit_status, 0) << packed.err;
  EXPECT_EQ(report().out.find("jit_spin_loop"), std::string::npos);
  bool listed = false;
  json missing_files = export_json("gecko").at("meta").at("missingFiles");
  for (const auto& missing : missing_files) {
    listed = listed || (missing.at("path") == map && missing.at("reason") == "not found");
  }
  EXPECT_TRUE(listed) << map << " is not listed as missing: " << missing_files.dump();
  auto with = report({"--archive", archive});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_NE(with.out.find("jit_spin_loop"), std::string::npos) << with.out;
  // The map keeps its recorded name: its pid, shown as perf shows JIT code ("[JIT] tid PID").
  EXPECT_NE(with.out.find("[JIT] tid " + pid[1].str()), std::string::npos) << with.out;
}

// `script --archive X | head` ends perfscope by SIGPIPE (its output outgrows the pipe), with no
// destructor run: the unpacked directory is removed all the same.
TEST_F(ArchiveCli, UnpackedDirectoryGoesEvenWhenKilled) {
  record();
  std::string archive = dir_.path() + "/perf.data.tar.zst";
  ASSERT_EQ(pt::run_perfscope({"archive", "-i", data_, "-o", archive}).exit_status, 0);
  // bash for PIPESTATUS: the test is only meaningful when perfscope did die of SIGPIPE.
  auto cut =
      pt::run_command({"bash", "-c",
                       fmt::format("'{}' script -i '{}' --archive '{}' | head -c 10 >/dev/null; "
                                   "echo ${{PIPESTATUS[0]}}",
                                   PERFSCOPE_CLI_PATH, data_, archive)});
  ASSERT_EQ(cut.exit_status, 0) << cut.err;
  if (cut.out != "141\n") GTEST_SKIP() << "perfscope was not ended by SIGPIPE: " << cut.out;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !unpacked_dirs_left();
    if (!gone) ::usleep(20000);
  }
  EXPECT_TRUE(gone) << "the unpacked archive outlived perfscope";
}

TEST_F(ArchiveCli, SymfsStandsInForTheRecordingMachine) {
  record();
  auto before = report();
  ASSERT_EQ(before.exit_status, 0) << before.err;
  std::string symfs = dir_.path() + "/symfs";
  fs::create_directories(symfs + fs::path(binary_).parent_path().string());
  fs::copy_file(binary_, symfs + binary_);
  rename_binary_away();
  auto with = report({"--symfs", symfs});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_EQ(table_of(with.out), table_of(before.out));
  // Another build under the symfs is refused, not used.
  fs::remove(symfs + binary_);
  fs::copy_file(known_answer_rebuilt, symfs + binary_);
  auto other = report({"--symfs", symfs});
  EXPECT_NE(other.out.find("not using " + symfs + binary_), std::string::npos) << other.out;
  EXPECT_EQ(other.out.find("leaf_60"), std::string::npos) << other.out;
}

TEST_F(ArchiveCli, MissingFilesAreListedInGeckoAndSpeedscope) {
  record();
  std::string id = hex_build_id(binary_);
  ASSERT_FALSE(id.empty());
  json present = export_json("gecko");
  for (const auto& missing : present.at("meta").at("missingFiles")) {
    EXPECT_NE(missing.at("path"), binary_);
  }
  rename_binary_away();
  auto find = [&](const json& list) -> json {
    for (const auto& missing : list) {
      if (missing.at("path") == binary_) return missing;
    }
    return json();
  };
  json gecko = find(export_json("gecko").at("meta").at("missingFiles"));
  ASSERT_TRUE(gecko.is_object()) << "gecko meta.missingFiles does not list " << binary_;
  EXPECT_EQ(gecko.at("reason"), "not found");
  EXPECT_EQ(gecko.at("buildId"), id);
  json speedscope = find(export_json("speedscope").at("missingFiles"));
  ASSERT_TRUE(speedscope.is_object()) << "speedscope missingFiles does not list " << binary_;
  EXPECT_EQ(speedscope.at("reason"), "not found");
  EXPECT_EQ(speedscope.at("buildId"), id);
}

TEST_F(ArchiveCli, BuildIdMismatchIsReportedNeverUsed) {
  record();
  std::string recorded = hex_build_id(binary_);
  // The program is rebuilt at the same path after the recording.
  fs::remove(binary_);
  fs::copy_file(known_answer_rebuilt, binary_);
  ASSERT_NE(hex_build_id(binary_), recorded);

  std::string archive = dir_.path() + "/perf.data.tar.zst";
  auto packed = pt::run_perfscope({"archive", "-i", data_, "-o", archive});
  EXPECT_NE(packed.err.find(fmt::format("not archived: {}: build id mismatch", binary_)),
            std::string::npos)
      << packed.err;

  json gecko = export_json("gecko");
  bool listed = false;
  for (const auto& missing : gecko.at("meta").at("missingFiles")) {
    if (missing.at("path") == binary_) {
      listed = true;
      EXPECT_EQ(missing.at("reason"), "build id mismatch");
      EXPECT_EQ(missing.at("buildId"), recorded);
    }
  }
  EXPECT_TRUE(listed) << gecko.at("meta").at("missingFiles").dump();

  // An archive whose member for that build id is another build: refused with the reason.
  std::string tampered = dir_.path() + "/tampered";
  std::string member = tampered + binary_ + "/" + recorded;
  fs::create_directories(member);
  fs::copy_file(known_answer_rebuilt, member + "/elf");
  fs::remove(binary_);
  auto with = report({"--archive", tampered});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_NE(with.out.find("not using " + member + "/elf"), std::string::npos) << with.out;
  EXPECT_EQ(with.out.find("leaf_60"), std::string::npos) << with.out;
}

TEST_F(ArchiveCli, ReadsPerfArchiveTarballs) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed";
  std::string home = dir_.path() + "/home";
  fs::create_directory(home);
  std::string env_home = "HOME=" + home;
  auto recorded = pt::run_command({"env", env_home, perf_path, "record", "-q", "-e", "cpu-clock",
                                   "-g", "-o", data_, binary_, "80"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto archived = pt::run_command({"env", env_home, perf_path, "archive", data_});
  std::string tarball = data_ + ".tar.bz2";
  if (archived.exit_status != 0 || !fs::exists(tarball)) {
    GTEST_SKIP() << "perf archive failed here: " << archived.out << archived.err;
  }
  rename_binary_away();
  fs::remove_all(home);
  EXPECT_EQ(report().out.find("leaf_60"), std::string::npos);
  auto with = report({"--archive", tarball});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_NE(with.out.find("leaf_60"), std::string::npos) << with.out;
  EXPECT_NE(with.out.find("leaf_30"), std::string::npos) << with.out;
}

TEST_F(ArchiveCli, PerfReportResolvesOurArchiveUnpackedInHomeDebug) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed";
  record();
  std::string archive = dir_.path() + "/perf.data.tar.bz2";  // perf archive's own compression
  auto packed = pt::run_perfscope({"archive", "-i", data_, "-o", archive});
  ASSERT_EQ(packed.exit_status, 0) << packed.err;
  rename_binary_away();
  std::string home = dir_.path() + "/home";
  fs::create_directories(home + "/.debug");
  std::string env_home = "HOME=" + home;
  auto perf_report = [&] {
    return pt::run_command({"env", env_home, perf_path, "report", "-i", data_, "--stdio",
                            "--no-children", "-g", "none", "--sort", "dso,sym"});
  };
  auto before = perf_report();
  EXPECT_EQ(before.out.find("leaf_60"), std::string::npos)
      << "perf found the binary without the archive\n"
      << before.out;
  auto unpacked = pt::run_command({"tar", "xf", archive, "-C", home + "/.debug"});
  if (unpacked.exit_status != 0 &&
      pt::run_command({"sh", "-c", "command -v bzip2"}).exit_status != 0) {
    GTEST_SKIP() << "tar cannot unpack .tar.bz2 without bzip2 (apt-get install bzip2)";
  }
  ASSERT_EQ(unpacked.exit_status, 0) << unpacked.err;
  auto after = perf_report();
  ASSERT_EQ(after.exit_status, 0) << after.err;
  EXPECT_NE(after.out.find("leaf_60"), std::string::npos) << after.out << after.err;
  EXPECT_NE(after.out.find("leaf_30"), std::string::npos) << after.out;
}

TEST_F(ArchiveCli, RefusesMembersThatLeaveTheDirectory) {
  if (pt::run_command({"python3", "-c", "import tarfile"}).exit_status != 0) {
    GTEST_SKIP() << "python3 (to write the malicious tarballs) is not installed";
  }
  record();
  std::string escape = dir_.path() + "/escaped";
  for (const auto& [name, why] :
       std::vector<std::pair<std::string, std::string>>{{"../escaped", "climbs out with '..'"},
                                                        {"x/../../escaped", "climbs out"},
                                                        {escape, "has an absolute path"}}) {
    std::string tarball = dir_.path() + "/evil.tar";
    auto made = pt::run_command({"python3", "-c",
                                 "import io, sys, tarfile\n"
                                 "t = tarfile.open(sys.argv[1], 'w')\n"
                                 "data = b'gotcha'\n"
                                 "i = tarfile.TarInfo(sys.argv[2]); i.size = len(data)\n"
                                 "t.addfile(i, io.BytesIO(data)); t.close()\n",
                                 tarball, name});
    ASSERT_EQ(made.exit_status, 0) << made.err;
    auto result = report({"--archive", tarball});
    EXPECT_NE(result.exit_status, 0) << name;
    EXPECT_NE(result.err.find("refusing the archive"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(why), std::string::npos) << result.err;
    EXPECT_FALSE(fs::exists(escape)) << name << " was written outside the directory";
    EXPECT_FALSE(fs::exists(dir_.path() + "/escaped"));
    EXPECT_FALSE(unpacked_dirs_left()) << "the refused archive's directory was left behind";
  }
}

TEST_F(ArchiveCli, ClearErrors) {
  record();
  auto no_archive = report({"--archive", dir_.path() + "/nothing.tar.zst"});
  EXPECT_EQ(no_archive.exit_status, 1);
  EXPECT_NE(no_archive.err.find("cannot open " + dir_.path() + "/nothing.tar.zst"),
            std::string::npos)
      << no_archive.err;
  std::string not_tar = dir_.path() + "/not-a.tar.zst";
  std::ofstream(not_tar) << "plain text, not a tar archive\n";
  auto garbage = report({"--archive", not_tar});
  EXPECT_EQ(garbage.exit_status, 1);
  EXPECT_NE(garbage.err.find("not a tar archive"), std::string::npos) << garbage.err;
  auto symfs = report({"--symfs", dir_.path() + "/nowhere"});
  EXPECT_EQ(symfs.exit_status, 1);
  EXPECT_NE(symfs.err.find("not a directory"), std::string::npos) << symfs.err;
  auto input = pt::run_perfscope({"archive", "-i", dir_.path() + "/missing.data"});
  EXPECT_NE(input.exit_status, 0);
  EXPECT_NE(input.err.find("missing.data"), std::string::npos) << input.err;
  auto help = pt::run_perfscope({"archive", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  std::size_t examples = 0;
  for (std::size_t at = help.out.find("\n  perfscope archive "); at != std::string::npos;
       at = help.out.find("\n  perfscope archive ", at + 1)) {
    ++examples;
  }
  EXPECT_EQ(examples, 2u) << help.out;
  auto unknown = pt::run_perfscope({"archive", "--bogus-option"});
  EXPECT_EQ(unknown.exit_status, 129);
  EXPECT_EQ(unknown.err,
            "perfscope archive: unknown option --bogus-option; run 'perfscope archive --help' "
            "for the options\n");
}

}  // namespace
