// Security: perfscope run by an unprivileged user (created here with useradd; the test runs as
// root and skips otherwise) works on the user's own commands at perf_event_paranoid 2 (user space
// only, with a notice) and refuses another user's process with the diagnosis; recordings are
// 0600 whatever the umask; no kernel address reaches an unprivileged user where kptr_restrict
// hides them; and a recording with crafted file names in its MMAP records (shell syntax, path
// traversal, a FIFO) makes no tool execute, create or block on anything.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::testing::expect_no_crash;
namespace abi = perfscope::abi;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string user_name = "perfscope-unpriv";
const std::string setpriv = "/usr/bin/setpriv";

class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("perfscope_security_" + name + "_XXXXXX"))
            .string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// An unprivileged account to run perfscope as: created once (useradd), kept for later runs.
class UnprivilegedUser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pt::running_as_root()) GTEST_SKIP() << "creating and becoming another user needs root";
    if (::access(setpriv.c_str(), X_OK) != 0) GTEST_SKIP() << "util-linux setpriv is missing";
    if (::getpwnam(user_name.c_str()) == nullptr) {
      auto added = pt::run_command(
          {"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user_name});
      // Exit 9: another test process created it meanwhile.
      if (added.exit_status != 0 && added.exit_status != 9) {
        GTEST_SKIP() << "useradd failed: " << added.err;
      }
    }
    const passwd* entry = ::getpwnam(user_name.c_str());
    ASSERT_NE(entry, nullptr);
    uid_ = entry->pw_uid;
    gid_ = entry->pw_gid;
    // The user must be able to reach the binaries under test.
    auto probe = as_user({PERFSCOPE_CLI_PATH, "--version"});
    if (probe.exit_status != 0) {
      GTEST_SKIP() << "the user cannot run " << PERFSCOPE_CLI_PATH << ": " << probe.err;
    }
  }

  // argv as the user, with no capabilities, no supplementary groups and umask 000 (so that a
  // file's mode is the one its creator asked for).
  pt::CommandResult as_user(const std::vector<std::string>& argv) const {
    std::vector<std::string> full{setpriv,
                                  "--reuid=" + std::to_string(uid_),
                                  "--regid=" + std::to_string(gid_),
                                  "--clear-groups",
                                  "--inh-caps=-all",
                                  "/bin/sh",
                                  "-c",
                                  "umask 000; exec \"$@\"",
                                  "sh"};
    full.insert(full.end(), argv.begin(), argv.end());
    return pt::run_command(full);
  }

  // A directory the user may write.
  void give_to_user(const std::string& path) const {
    ASSERT_EQ(::chown(path.c_str(), uid_, gid_), 0) << std::strerror(errno);
  }

  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

std::optional<std::int64_t> paranoid() {
  return perfscope::sys::read_sysctl("perf_event_paranoid");
}

bool kernel_address(std::uint64_t address) { return address >= 0xffff800000000000ULL; }

// Kernel-half addresses printed as hex (ffff8..., ffffffff...), with or without 0x.
bool prints_kernel_address(std::string text) {
  // [vsyscall]'s fixed address is in every process's maps: no secret.
  for (std::size_t at; (at = text.find("ffffffffff600")) != std::string::npos;) {
    text.replace(at, 13, "vsyscall");
  }
  static const std::regex pattern("(^|[^0-9a-fA-F])(0x)?ffff[89a-f][0-9a-f]{11}([^0-9a-fA-F]|$)",
                                  std::regex::icase);
  return std::regex_search(text, pattern);
}

TEST_F(UnprivilegedUser, StatOfOwnCommandCountsUserSpaceWithANotice) {
  auto level = paranoid();
  if (!level || *level != 2) GTEST_SKIP() << "perf_event_paranoid is not 2 here";
  auto result = as_user({PERFSCOPE_CLI_PATH, "stat", "--csv", "-e", "task-clock,page-faults", "--",
                         work_helper, "faults", "200"});
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("note: kernel.perf_event_paranoid is 2"));
  EXPECT_THAT(result.err, HasSubstr("exclude_kernel"));
  // Page faults are counted in the context of the faulting user code: still at least 200.
  // Labelled as perf labels them: the ":u" says that only user space was counted.
  std::istringstream lines(result.err);
  long faults = -1;
  bool task_clock_user = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("page-faults:u,", 0) == 0) faults = std::atol(line.c_str() + 14);
    if (line.rfind("task-clock:u,", 0) == 0) task_clock_user = true;
  }
  EXPECT_GE(faults, 200) << result.err;
  EXPECT_TRUE(task_clock_user) << result.err;
}

TEST_F(UnprivilegedUser, RecordOfOwnCommandIsUserSpaceOnlyAnd0600) {
  auto level = paranoid();
  if (!level || *level != 2) GTEST_SKIP() << "perf_event_paranoid is not 2 here";
  TempDir dir("record");
  give_to_user(dir.path());
  std::string output = dir / "user.data";
  auto result = as_user({PERFSCOPE_CLI_PATH, "record", "-F", "2000", "-o", output, "--",
                         work_helper, "getpid", "3000000"});
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("note: kernel.perf_event_paranoid is 2"));
  if (pt::hardware_counters_available()) {
    // cycles opens for user space: it is the kernel alone that paranoid 2 refuses.
    EXPECT_THAT(result.err, Not(HasSubstr("no hardware PMU")));
  } else {
    EXPECT_THAT(result.err,
                HasSubstr("no hardware PMU can sample cycles here: sampling cpu-clock"));
  }

  struct stat info {};
  ASSERT_EQ(::stat(output.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u) << std::oct << (info.st_mode & 0777);
  EXPECT_EQ(info.st_uid, uid_);

  // Every event excludes the kernel; no sample is in it.
  auto reader = perfscope::PerfDataReader::open(output);
  ASSERT_FALSE(reader.events().empty());
  for (const auto& event : reader.events()) {
    EXPECT_TRUE(perfscope::EventAttr(event.attr).has(abi::attr_flag::exclude_kernel));
  }
  std::uint64_t samples = 0, kernel_samples = 0;
  perfscope::SampleRecord sample;
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& record) {
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
    perfscope::DecodeError decode_error;
    if (!perfscope::decode_sample(record.view, reader.events()[record.event].config, sample,
                                  decode_error)) {
      return;
    }
    ++samples;
    if (kernel_address(sample.ip)) ++kernel_samples;
  });
  EXPECT_FALSE(error);
  EXPECT_GT(samples, 10u) << result.err;
  EXPECT_EQ(kernel_samples, 0u);
}

TEST_F(UnprivilegedUser, AttachingToRootsProcessFailsWithTheDiagnosis) {
  pt::BackgroundCommand roots({work_helper, "delay-getpid", "20000", "0"});
  ASSERT_TRUE(roots.started());
  TempDir dir("attach");
  give_to_user(dir.path());
  std::string pid = std::to_string(roots.pid());
  auto stat = as_user({PERFSCOPE_CLI_PATH, "stat", "-e", "task-clock", "-p", pid});
  expect_no_crash(stat);
  EXPECT_EQ(stat.exit_status, 1) << stat.err;
  EXPECT_THAT(stat.err, HasSubstr("Permission denied"));
  EXPECT_THAT(stat.err, HasSubstr("Attaching to pid " + pid + " needs ptrace access"));

  std::string output = dir / "roots.data";
  auto record = as_user({PERFSCOPE_CLI_PATH, "record", "-p", pid, "-o", output});
  expect_no_crash(record);
  EXPECT_EQ(record.exit_status, 1) << record.err;
  EXPECT_THAT(record.err, HasSubstr("needs ptrace access"));
  EXPECT_FALSE(std::filesystem::exists(output));
}

// Where /proc/kallsyms shows the user zeros, nothing perfscope records or prints for that user
// carries a kernel address: no kernel map is synthesized from hidden addresses, no sample is in
// the kernel, and script, doctor and list print none.
TEST_F(UnprivilegedUser, NoKernelAddressWhereKptrRestrictHidesThem) {
  auto kallsyms = as_user({"/usr/bin/head", "-n", "1", "/proc/kallsyms"});
  if (kallsyms.exit_status != 0 || kallsyms.out.rfind("0000000000000000", 0) != 0) {
    GTEST_SKIP() << "kernel addresses are visible to unprivileged users here (kptr_restrict "
                 << perfscope::sys::read_sysctl("kptr_restrict").value_or(-1) << ")";
  }
  TempDir dir("kptr");
  give_to_user(dir.path());
  std::string output = dir / "user.data";
  auto record = as_user(
      {PERFSCOPE_CLI_PATH, "record", "-g", "-o", output, "--", work_helper, "getpid", "2000000"});
  expect_no_crash(record);
  ASSERT_EQ(record.exit_status, 0) << record.err;
  auto reader = perfscope::PerfDataReader::open(output);
  perfscope::Record decoded;
  int kernel_maps = 0, kernel_samples = 0;
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& item) {
    perfscope::DecodeError decode_error;
    if (!perfscope::decode_record(item.view, reader.events()[item.event].config, decoded,
                                  decode_error)) {
      return;
    }
    // [vsyscall] sits at the same fixed address in every process: no secret.
    if (auto* map = std::get_if<perfscope::MmapRecord>(&decoded)) {
      if (kernel_address(map->addr) && map->filename != "[vsyscall]") ++kernel_maps;
    } else if (auto* map2 = std::get_if<perfscope::Mmap2Record>(&decoded)) {
      if (kernel_address(map2->addr) && map2->filename != "[vsyscall]") ++kernel_maps;
    } else if (auto* sample = std::get_if<perfscope::SampleRecord>(&decoded)) {
      if (kernel_address(sample->ip)) ++kernel_samples;
    }
  });
  EXPECT_FALSE(error);
  EXPECT_EQ(kernel_maps, 0);
  EXPECT_EQ(kernel_samples, 0);
  for (const auto& args :
       std::vector<std::vector<std::string>>{{PERFSCOPE_CLI_PATH, "script", "-i", output},
                                             {PERFSCOPE_CLI_PATH, "doctor"},
                                             {PERFSCOPE_CLI_PATH, "list", "--no-probe"}}) {
    SCOPED_TRACE(args[1]);
    auto printed = as_user(args);
    expect_no_crash(printed);
    EXPECT_FALSE(prints_kernel_address(printed.out)) << printed.out.substr(0, 2000);
    EXPECT_FALSE(prints_kernel_address(printed.err)) << printed.err.substr(0, 2000);
  }
}

// A recording crafted with hostile file names in its MMAP and MMAP2 records, and samples in each
// mapping. Reading it must not run a shell, create the traversal target, or block on the FIFO.
class CraftedRecording : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_ = dir_ / "pwned";
    traversal_target_ = dir_ / "x";
    fifo_ = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    // Relative to any working directory a tool might use, the traversal points into dir_.
    names_ = {"; touch " + marker_,
              "$(touch " + marker_ + ")",
              "`touch " + marker_ + "`",
              "| touch " + marker_,
              "../../../../../../../../../.." + traversal_target_,
              dir_ / "sub/../../" + std::filesystem::path(dir_.path()).filename().string() + "/x",
              fifo_,
              "/proc/self/fd/0",
              "[kernel.kallsyms]; touch " + marker_,
              std::string(3000, 'A')};
    write_recording();
  }

  void write_recording() {
    namespace sf = abi::sample_format;
    perfscope::EventAttr attr = perfscope::EventAttr::software(abi::SoftwareEvent::cpu_clock);
    attr.set_sample_period(100000)
        .set_sample_type(sf::ip | sf::tid | sf::time | sf::period)
        .set_flag(abi::attr_flag::sample_id_all)
        .set_flag(abi::attr_flag::mmap);
    perfscope::PerfDataWriter writer(path_, {{attr.raw(), "cpu-clock", {7}}});
    const std::uint32_t pid = 4242;
    std::uint64_t time = 1000;
    auto push = [](std::vector<std::byte>& bytes, const void* data, std::size_t size) {
      const auto* at = static_cast<const std::byte*>(data);
      bytes.insert(bytes.end(), at, at + size);
    };
    auto finish = [&](std::vector<std::byte>& bytes, std::uint32_t type) {
      bytes.resize((bytes.size() + 7) & ~std::size_t{7});
      std::uint32_t ids[2] = {pid, pid};  // sample_id: TID (pid, tid), TIME
      push(bytes, ids, sizeof ids);
      push(bytes, &time, sizeof time);
      abi::RecordHeader header{type, abi::record_misc::user,
                               static_cast<std::uint16_t>(bytes.size())};
      std::memcpy(bytes.data(), &header, sizeof header);
      writer.append(bytes);
      ++time;
    };
    std::uint64_t address = 0x400000;
    for (std::size_t i = 0; i < names_.size(); ++i, address += 0x100000) {
      // MMAP: pid, tid, addr, len, pgoff, filename; MMAP2 adds maj, min, ino, ino_generation,
      // prot, flags before the filename.
      for (bool mmap2 : {false, true}) {
        std::vector<std::byte> bytes(sizeof(abi::RecordHeader));
        std::uint32_t ids[2] = {pid, pid};
        std::uint64_t range[3] = {address + (mmap2 ? 0x80000 : 0), 0x10000, 0};
        push(bytes, ids, sizeof ids);
        push(bytes, range, sizeof range);
        if (mmap2) {
          std::uint32_t device[2] = {8, 1};
          std::uint64_t inode[2] = {1234, 0};
          std::uint32_t protection[2] = {5, 2};
          push(bytes, device, sizeof device);
          push(bytes, inode, sizeof inode);
          push(bytes, protection, sizeof protection);
        }
        push(bytes, names_[i].c_str(), names_[i].size() + 1);
        if (bytes.size() > 0xff00) continue;
        finish(bytes,
               static_cast<std::uint32_t>(mmap2 ? abi::RecordType::mmap2 : abi::RecordType::mmap));
      }
      for (std::uint64_t offset : {0x10ULL, 0x80010ULL}) {
        std::vector<std::byte> sample(sizeof(abi::RecordHeader));
        std::uint64_t ip = address + offset;
        std::uint32_t ids[2] = {pid, pid};
        std::uint64_t period = 100000;
        push(sample, &ip, sizeof ip);
        push(sample, ids, sizeof ids);
        push(sample, &time, sizeof time);
        push(sample, &period, sizeof period);
        abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::sample),
                                 abi::record_misc::user, static_cast<std::uint16_t>(sample.size())};
        std::memcpy(sample.data(), &header, sizeof header);
        writer.append(sample);
        ++time;
      }
    }
    writer.end_round();
    writer.finish({});
  }

  // Runs a reading tool on the recording from inside dir_/a/b (so that relative traversal lands
  // in dir_), with a deadline: a tool that blocks on the FIFO fails.
  pt::CommandResult run_reader(std::vector<std::string> args) {
    std::string cwd = dir_ / "a/b";
    std::filesystem::create_directories(cwd);
    std::vector<std::string> argv{"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd,
                                  PERFSCOPE_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    // stdin is a pipe nobody writes: a tool that reads /proc/self/fd/0 as a mapped file blocks.
    pt::BackgroundCommand run(argv, /*stdin_pipe=*/true);
    auto result = run.wait(30000);
    EXPECT_FALSE(run.timed_out()) << "blocked reading the crafted file: " << result.err;
    return result;
  }

  void expect_nothing_happened() {
    EXPECT_FALSE(std::filesystem::exists(marker_)) << "a file name was run by a shell";
    EXPECT_FALSE(std::filesystem::exists(traversal_target_)) << "a path in the file was written";
    std::error_code ignored;
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      ++entries;
    }
    EXPECT_EQ(entries, 3u) << "only the recording, the FIFO and a/ belong here";
  }

  TempDir dir_{"crafted"};
  std::string path_ = dir_ / "crafted.data";
  std::string marker_, traversal_target_, fifo_;
  std::vector<std::string> names_;
};

TEST_F(CraftedRecording, ScriptPrintsNamesAndTouchesNothing) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"script", "-i", path_}, {"script", "-i", path_, "--json"}}) {
    auto result = run_reader(args);
    expect_no_crash(result);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_THAT(result.out + result.err, Not(HasSubstr("pwned\n")));
  }
  expect_nothing_happened();
}

TEST_F(CraftedRecording, ReportTouchesNothing) {
  auto help = pt::run_perfscope({"report", "--help"});
  if (help.exit_status != 0) GTEST_SKIP() << "this build has no report command";
  TempDir exports("crafted_exports");
  std::vector<std::vector<std::string>> runs{{"report", "-i", path_, "--stdio"}};
  for (const std::string format : {"folded", "speedscope", "gecko", "pprof", "json", "svg"}) {
    runs.push_back({"report", "-i", path_, "--format", format, "-o", exports / format});
  }
  for (const auto& args : runs) {
    SCOPED_TRACE(args.back());
    auto result = run_reader(args);
    expect_no_crash(result);
    EXPECT_EQ(result.exit_status, 0) << result.err;
  }
  expect_nothing_happened();
}

}  // namespace
