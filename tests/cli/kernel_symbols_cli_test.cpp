// perf's kernel-symbol options (issue #44): -k/--vmlinux, perf's search for a vmlinux of the
// recording's kernel (and --ignore-vmlinux, which stops it) and --demangle-kernel, in report and
// top. The vmlinux images are made here from this kernel's /proc/kallsyms: its symbols, renamed
// "vmlinux_NAME" (the second of two static functions of one name "vmlinux_NAME__2", ...) so that
// a sample says which source named it, and placed 16 MiB below where the kernel has them, as
// another boot's KASLR would have; perfscope must move them back by the distance between the
// recording's _text and the image's. Every kernel sample must then be named as kallsyms names it.
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
constexpr std::uint64_t kaslr_shift = 0x1000000;

struct KallsymsLine {
  std::uint64_t address = 0;
  char type = 0;
  std::string name;
};

// The kernel's own symbols (no module's), as /proc/kallsyms lists them; empty when its
// addresses are hidden.
std::vector<KallsymsLine> kernel_text_symbols() {
  std::ifstream file("/proc/kallsyms");
  std::vector<KallsymsLine> symbols;
  static const std::regex plain_name("[A-Za-z_][A-Za-z0-9_.]*");
  for (std::string line; std::getline(file, line);) {
    std::istringstream fields(line);
    KallsymsLine symbol;
    std::string address, module;
    fields >> address >> symbol.type >> symbol.name >> module;
    if (!module.empty() || !std::regex_match(symbol.name, plain_name)) continue;
    symbol.address = std::stoull(address, nullptr, 16);
    bool text = std::string("tTwW").find(symbol.type) != std::string::npos;
    if (symbol.address == 0 && text) return {};  // kptr_restrict: every address reads 0
    // Absolute and per-CPU symbols (offsets, not addresses) are no image's.
    if (symbol.address < 0xffff800000000000ULL) continue;
    symbols.push_back(symbol);
  }
  return symbols;
}

// The running kernel's build id in hex, from its NT_GNU_BUILD_ID note; empty when none.
std::string hex_build_id_of_kernel() {
  std::string notes = pt::read_file("/sys/kernel/notes");
  // Each note: namesz, descsz, type (3: NT_GNU_BUILD_ID), "GNU\0", the id.
  std::size_t at = notes.find(std::string("GNU\0", 4));
  if (at == std::string::npos || at < 12 || at + 4 + 20 > notes.size() || notes[at - 4] != 3) {
    return "";
  }
  std::string hex;
  for (std::size_t i = at + 4; i < at + 24; ++i) {
    static const char digits[] = "0123456789abcdef";
    auto byte = static_cast<unsigned char>(notes[i]);
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return hex;
}

// An ELF whose symbol table holds `symbols` (renamed vmlinux_NAME, kaslr_shift lower), with the
// build id `build_id` (hex). Names that kallsyms lists more than once (static functions of several
// files) are local symbols of separate objects, as in the kernel's own link.
std::string make_vmlinux(const pt::TempDir& dir, const std::string& name,
                         const std::vector<KallsymsLine>& symbols, const std::string& build_id) {
  auto is_text = [](char type) { return std::string("tTwW").find(type) != std::string::npos; };
  // Of aliases (text symbols at one address), kallsyms names the function by the last listed;
  // a symbol table gives its aliases no order, so the image holds that one alone.
  std::map<std::uint64_t, std::size_t> named_text;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (is_text(symbols[i].type)) named_text[symbols[i].address] = i;
  }
  std::string source;
  std::map<std::string, std::size_t> copies;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    const KallsymsLine& symbol = symbols[i];
    // The reference symbols always, as a linker script's labels rather than functions.
    bool reference = symbol.name == "_text" || symbol.name == "_stext";
    bool text = is_text(symbol.type) && !reference;
    if (text && named_text[symbol.address] != i) continue;
    std::size_t copy = ++copies[symbol.name];
    std::string renamed = reference ? symbol.name : "vmlinux_" + symbol.name;
    if (copy > 1) renamed += "__" + std::to_string(copy);
    source += (symbol.type == 'W' || symbol.type == 'w' ? ".weak " : ".globl ") + renamed + "\n";
    // The data symbols too: like kallsyms' own, they end the function before them.
    source += ".type " + renamed + (text ? ",@function\n" : ",@object\n") + ".set " + renamed +
              ", " + std::to_string(symbol.address - kaslr_shift) + "\n";
  }
  std::string image = dir.path() + "/" + name;
  pt::CommandResult linked = pt::run_command({"/usr/bin/gcc", "-nostdlib", "-static", "-Wl,-e,0",
                                              "-Wl,--build-id=0x" + build_id, "-o", image,
                                              dir.write(name + ".s", source)});
  EXPECT_EQ(linked.exit_status, 0) << linked.err;
  return image;
}

// The kernel samples' "IP NAME" lines of `script -F ip,sym`, with the image's renaming undone
// ("vmlinux_NAME__2" is NAME) where `renamed`.
std::vector<std::string> kernel_samples(const std::string& script, bool renamed) {
  std::vector<std::string> samples;
  static const std::regex line(R"(^\s*(ffff[0-9a-f]{12})\s+(\S+))");
  static const std::regex copy_suffix("__[0-9]+$");
  std::istringstream text(script);
  std::smatch match;
  for (std::string each; std::getline(text, each);) {
    if (!std::regex_search(each, match, line)) continue;
    std::string name = match[2];
    if (renamed) {
      if (!name.starts_with("vmlinux_")) {
        samples.push_back(match[1].str() + " (not from the image) " + name);
        continue;
      }
      name = std::regex_replace(name.substr(8), copy_suffix, "");
    }
    samples.push_back(match[1].str() + " " + name);
  }
  return samples;
}

class KernelSymbolOptions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    symbols_ = new std::vector<KallsymsLine>(kernel_text_symbols());
    if (symbols_->empty()) return;
    dir_ = new pt::TempDir();
    recording_ = dir_->path() + "/getpid.data";
    pt::CommandResult recorded =
        pt::run_perfscope({"record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", recording_, "--",
                           work_helper, "getpid", "2000000"});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete symbols_;
  }
  void SetUp() override {
    if (symbols_->empty()) GTEST_SKIP() << "kptr_restrict hides /proc/kallsyms' addresses";
  }
  static pt::CommandResult script(std::vector<std::string> options) {
    std::vector<std::string> command{"script", "-F", "ip,sym", "-i", recording_};
    command.insert(command.end(), options.begin(), options.end());
    return pt::run_perfscope(command);
  }
  // The kernel samples as kallsyms names them.
  static const std::vector<std::string>& kallsyms_samples() {
    static const std::vector<std::string> samples = kernel_samples(script({}).out, false);
    return samples;
  }

  static inline std::vector<KallsymsLine>* symbols_ = nullptr;
  static inline pt::TempDir* dir_ = nullptr;
  static inline std::string recording_;
};

TEST_F(KernelSymbolOptions, VmlinuxNamesTheKernelSamplesMovedToTheRecordingsText) {
  std::string vmlinux = make_vmlinux(*dir_, "vmlinux", *symbols_, std::string(40, '1'));
  ASSERT_GE(kallsyms_samples().size(), 100u) << "too few kernel samples in the recording";
  for (const char* option : {"--vmlinux", "-k"}) {
    pt::CommandResult result = script({option, vmlinux});
    ASSERT_EQ(result.exit_status, 0) << result.err;
    EXPECT_EQ(kernel_samples(result.out, true), kallsyms_samples());
  }
  // report's rows come from the same names; the image is of another build than the recording's
  // kernel: the report's header says so (and uses it as asked).
  auto rows = pt::run_perfscope(
      {"report", "--stdio", "--sort", "sym", "-i", recording_, "--vmlinux", vmlinux});
  EXPECT_NE(rows.out.find("[k] vmlinux_"), std::string::npos) << rows.out;
  EXPECT_NE(rows.out.find("# warning: kernel symbols may be wrong: the vmlinux " + vmlinux +
                          " has build id 1111111111111111111111111111111111111111"),
            std::string::npos)
      << rows.out;
  // --ignore-vmlinux: kallsyms, as without the image.
  EXPECT_EQ(kernel_samples(script({"--vmlinux", vmlinux, "--ignore-vmlinux"}).out, false),
            kallsyms_samples());
  // An image without a symbol table is refused for what it is.
  std::string stripped = dir_->path() + "/stripped";
  ASSERT_EQ(pt::run_command({"/usr/bin/strip", "-o", stripped, vmlinux}).exit_status, 0);
  pt::CommandResult no_table =
      pt::run_perfscope({"report", "--stdio", "-i", recording_, "--vmlinux", stripped});
  EXPECT_NE(no_table.out.find("has no symbol table"), std::string::npos) << no_table.out;
}

TEST_F(KernelSymbolOptions, PerfsSearchFindsAVmlinuxOfTheRecordingsBuildOnly) {
  std::string build_id = hex_build_id_of_kernel();
  if (build_id.empty()) GTEST_SKIP() << "no build id in /sys/kernel/notes";
  struct utsname names {};
  ASSERT_EQ(::uname(&names), 0);
  // Under the symfs, where Debian's linux-image-*-dbg puts it.
  pt::TempDir symfs;
  std::string boot = symfs.path() + "/usr/lib/debug/boot";
  std::filesystem::create_directories(boot);
  pt::TempDir images;
  std::string other = make_vmlinux(images, "other", *symbols_, std::string(40, '2'));
  std::filesystem::copy_file(other, boot + "/vmlinux-" + names.release);
  // Of another build: passed over.
  EXPECT_EQ(kernel_samples(script({"--symfs", symfs.path()}).out, false), kallsyms_samples());
  std::string same = make_vmlinux(images, "same", *symbols_, build_id);
  std::filesystem::copy_file(same, boot + "/vmlinux-" + names.release,
                             std::filesystem::copy_options::overwrite_existing);
  pt::CommandResult found = script({"--symfs", symfs.path()});
  EXPECT_EQ(kernel_samples(found.out, true), kallsyms_samples());
  EXPECT_EQ(found.err.find("build id"), std::string::npos) << found.err;
  EXPECT_EQ(kernel_samples(script({"--symfs", symfs.path(), "--ignore-vmlinux"}).out, false),
            kallsyms_samples());
}

TEST_F(KernelSymbolOptions, DemangleKernelDemanglesKernelNames) {
  // A kallsyms whose kernel names are mangled C++ ("kern::NAME()").
  std::ifstream live("/proc/kallsyms");
  std::string mangled;
  // A C identifier; a test of each character (a std::regex per line of kallsyms' 200,000 took
  // 20 s of the sanitizer pass).
  auto identifier = [](const std::string& name) {
    return !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())) &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
           });
  };
  for (std::string line; std::getline(live, line);) {
    std::istringstream fields(line);
    std::string address, type, name, module;
    fields >> address >> type >> name >> module;
    if (module.empty() && (type == "t" || type == "T") && name != "_text" && name != "_stext" &&
        identifier(name)) {
      name = "_ZN4kern" + std::to_string(name.size()) + name + "Ev";
    }
    mangled += address + " " + type + " " + name + (module.empty() ? "" : "\t" + module) + "\n";
  }
  std::string file = dir_->write("kallsyms", mangled);
  const std::vector<std::string>& plain = kallsyms_samples();
  ASSERT_GE(plain.size(), 100u);
  // Names with a dot ("f.cold") were left unmangled above.
  auto has_plain_name = [](const std::string& sample) {
    return sample.find('.', sample.find(' ')) == std::string::npos;
  };
  std::vector<std::string> expected = plain;
  for (std::string& each : expected) {
    if (has_plain_name(each)) each.insert(each.find(' ') + 1, "kern::");
  }
  EXPECT_EQ(kernel_samples(script({"--kallsyms", file, "--demangle-kernel"}).out, false), expected);
  std::vector<std::string> kept = kernel_samples(script({"--kallsyms", file}).out, false);
  ASSERT_EQ(kept.size(), plain.size());
  for (const std::string& each : kept) {
    if (has_plain_name(each)) {
      EXPECT_NE(each.find(" _ZN4kern"), std::string::npos) << each;
    }
  }
}

TEST_F(KernelSymbolOptions, TopNamesTheLiveKernelFromAVmlinux) {
  std::string vmlinux = make_vmlinux(*dir_, "vmlinux_top", *symbols_, std::string(40, '3'));
  pid_t workload = ::fork();
  ASSERT_GE(workload, 0);
  if (workload == 0) {
    ::execl(work_helper.c_str(), work_helper.c_str(), "getpid", "100000000", nullptr);
    ::_exit(127);
  }
  pt::CommandResult top =
      pt::run_perfscope({"top", "--stdio", "-n", "1", "-d", "1", "-p", std::to_string(workload),
                         "--sort", "dso,sym", "--vmlinux", vmlinux});
  ::kill(workload, SIGKILL);
  ::waitpid(workload, nullptr, 0);
  ASSERT_EQ(top.exit_status, 0) << top.err;
  EXPECT_NE(top.out.find("[k] vmlinux_"), std::string::npos) << top.out;
}

}  // namespace
