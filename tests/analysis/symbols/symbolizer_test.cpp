// Symbolizer: names at addresses read from the unstripped program's own symbol table (nm), in
// the program as built, stripped with a debug file found by .gnu_debuglink or by build id, and
// with MiniDebugInfo; source lines and inline frames against addr2line; kallsyms (fake and
// real) and perf-PID.map files; the warnings and reasons a user gets when something is missing.
#include "perfscope/analysis/symbols/symbolizer.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/vdso_image.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

using perfscope::Symbolizer;
using perfscope::SymbolizerOptions;
using perfscope::testing::TempDir;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

namespace {

const std::string target_path = PERFSCOPE_SYMBOL_TARGET_PATH;
const std::string data_dir = PERFSCOPE_SYMBOL_DATA_DIR;
const std::string debuglink_path = data_dir + "/debuglink/symbol_target";
const std::string debug_file_path = data_dir + "/debuglink/symbol_target.debug";
const std::string bare_path = data_dir + "/bare/symbol_target";

struct NmSymbol {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

// The unstripped program's function symbols by mangled name, as binutils' nm reads them.
const std::map<std::string, NmSymbol>& nm_symbols() {
  static const std::map<std::string, NmSymbol> symbols = [] {
    std::map<std::string, NmSymbol> found;
    auto listing = perfscope::testing::run_command(
        {PERFSCOPE_NM, "--defined-only", "--print-size", target_path});
    std::istringstream lines(listing.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string address, size, type, name;
      if (!(fields >> address >> size >> type >> name)) continue;  // symbols without a size
      found[name] = {std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
    return found;
  }();
  return symbols;
}

NmSymbol symbol(const std::string& mangled) {
  auto found = nm_symbols().find(mangled);
  EXPECT_NE(found, nm_symbols().end()) << mangled << " missing from nm " << target_path;
  return found == nm_symbols().end() ? NmSymbol{} : found->second;
}

// The file offset that holds virtual address `address`, from the program headers read with the
// plain <elf.h> structures (independent of the libelf code under test).
std::uint64_t file_offset(const std::string& path, std::uint64_t address) {
  auto image = perfscope::sys::read_text_file(path);
  EXPECT_TRUE(image.has_value()) << path;
  if (!image || image->size() < sizeof(Elf64_Ehdr)) return 0;
  Elf64_Ehdr header;
  std::memcpy(&header, image->data(), sizeof header);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program;
    std::memcpy(&program, image->data() + header.e_phoff + i * header.e_phentsize, sizeof program);
    if (program.p_type == PT_LOAD && address >= program.p_vaddr &&
        address < program.p_vaddr + program.p_filesz) {
      return address - program.p_vaddr + program.p_offset;
    }
  }
  ADD_FAILURE() << fmt::format("no PT_LOAD of {} holds {:#x}", path, address);
  return 0;
}

// The line of symbol_target.cpp that carries "marker:NAME".
std::uint32_t marker_line(const std::string& name) {
  std::ifstream source(PERFSCOPE_SYMBOL_TARGET_SOURCE);
  std::string line;
  for (std::uint32_t number = 1; std::getline(source, line); ++number) {
    if (line.find("marker:" + name) != std::string::npos) return number;
  }
  ADD_FAILURE() << "no marker:" << name;
  return 0;
}

SymbolizerOptions options_with_root(const std::string& debug_root) {
  SymbolizerOptions options;
  options.debug_root = debug_root;
  return options;
}

std::size_t texts_with(const std::vector<std::string>& texts, const std::string& text) {
  return static_cast<std::size_t>(std::count_if(
      texts.begin(), texts.end(), [&](auto& t) { return t.find(text) != std::string::npos; }));
}
std::size_t warnings_with(const Symbolizer& symbolizer, const std::string& text) {
  return texts_with(symbolizer.warnings(), text);
}
// Where the symbols came from is a note, never a warning.
std::size_t notes_with(const Symbolizer& symbolizer, const std::string& text) {
  EXPECT_EQ(warnings_with(symbolizer, text), 0u) << text;
  return texts_with(symbolizer.notes(), text);
}

// The names every symbol table of symbol_target gives, demangled.
void expect_program_names(Symbolizer& symbolizer, const std::string& path) {
  struct Expected {
    const char* mangled;
    const char* name;
  };
  for (auto [mangled, name] : {Expected{"_ZN7symtest7computeEi", "symtest::compute(int)"},
                               Expected{"_ZN7symtest5outerEi", "symtest::outer(int)"},
                               Expected{"_ZN7symtest10first_lineEi", "symtest::first_line(int)"}}) {
    NmSymbol found = symbol(mangled);
    ASSERT_GT(found.size, 2u) << mangled;
    auto at = symbolizer.resolve_file(path, file_offset(target_path, found.address) + 2);
    EXPECT_EQ(at.symbol, name) << path << " " << at.unresolved_reason;
    EXPECT_EQ(at.offset, 2u);
    EXPECT_EQ(at.dso, path);
    EXPECT_TRUE(at.unresolved_reason.empty()) << at.unresolved_reason;
    EXPECT_FALSE(at.kernel);
  }
}

}  // namespace

TEST(Symbolizer, NamesFunctionsOfTheProgramAsBuilt) {
  Symbolizer symbolizer;
  expect_program_names(symbolizer, target_path);
  NmSymbol scaled = symbol("_ZN7symtest6scaledIlEET_S1_S1_");
  auto at = symbolizer.resolve_file(target_path, file_offset(target_path, scaled.address));
  EXPECT_EQ(at.symbol, "long symtest::scaled<long>(long, long)");
  EXPECT_EQ(at.offset, 0u);
  NmSymbol main_symbol = symbol("main");
  at = symbolizer.resolve_file(
      target_path, file_offset(target_path, main_symbol.address + main_symbol.size - 1));
  EXPECT_EQ(at.symbol, "main");
  EXPECT_EQ(at.offset, main_symbol.size - 1);
  EXPECT_TRUE(symbolizer.warnings().empty()) << symbolizer.warnings().front();
}

TEST(Symbolizer, ShortNamesLikePerfWhenParameterListsAreOff) {
  SymbolizerOptions options;
  options.parameter_lists = false;
  Symbolizer symbolizer(options);
  NmSymbol scaled = symbol("_ZN7symtest6scaledIlEET_S1_S1_");
  auto at = symbolizer.resolve_file(target_path, file_offset(target_path, scaled.address));
  EXPECT_EQ(at.symbol, "symtest::scaled<long>");
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  at = symbolizer.resolve_file(target_path, file_offset(target_path, compute.address));
  EXPECT_EQ(at.symbol, "symtest::compute");
}

struct PltListing {
  std::size_t stubs = 0, irelative = 0, plt_got = 0, headers = 0;
  std::string listing;
};

// Every stub objdump lists in `path`'s PLT sections against the symbolizer's name for an address
// inside it. objdump calls the stub of an IRELATIVE slot "*ABS*+0xADDR@plt": its name is the
// ifunc at ADDR (from objdump's own symbol lists, -T and -t) with the fewest leading
// underscores, the public name (mempcpy, not __mempcpy).
PltListing compare_plt_names(const std::string& objdump, const std::string& path) {
  PltListing result;
  auto listing = perfscope::testing::run_command(
      {objdump, "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", path});
  result.listing = listing.out + listing.err;
  std::map<std::uint64_t, std::vector<std::string>> ifuncs;  // the names with fewest '_'
  for (const char* table : {"-t", "-T"}) {
    auto symbols = perfscope::testing::run_command({objdump, table, path});
    std::istringstream lines(symbols.out);
    // objdump's seven flag characters: the fifth is 'i' for an ifunc.
    static const std::regex ifunc(R"(^([0-9a-f]+) [ lgu!][ w][ C][ W]i[ dD][ FfO] .*\s(\S+)$)");
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      if (!std::regex_match(line, match, ifunc)) continue;
      std::string name = match[2].str();
      if (std::size_t at = name.find('@'); at != std::string::npos) name.erase(at);
      auto& names = ifuncs[std::stoull(match[1].str(), nullptr, 16)];
      std::size_t underscores = name.find_first_not_of('_');
      if (!names.empty() && underscores > names.front().find_first_not_of('_')) continue;
      if (!names.empty() && underscores < names.front().find_first_not_of('_')) names.clear();
      names.push_back(name);
    }
  }
  std::istringstream lines(listing.out);
  static const std::regex stub(R"(^([0-9a-f]+) <(.+)@plt>:$)");
  SymbolizerOptions mangled;
  mangled.demangle = false;
  Symbolizer raw(mangled);
  static const std::regex any_label(R"(^([0-9a-f]+) <.+>:$)");
  bool header_next = false;
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (line == "Disassembly of section .plt:") header_next = true;
    if (header_next && std::regex_match(line, match, any_label)) {
      // The lazy-binding header opens .plt: ".plt", as perf 6.3 names it.
      header_next = false;
      auto header =
          raw.resolve_file(path, file_offset(path, std::stoull(match[1].str(), nullptr, 16)) + 2);
      EXPECT_EQ(header.symbol, ".plt") << path << ": " << line;
      EXPECT_EQ(header.offset, 2u) << line;
      ++result.headers;
      continue;
    }
    if (!std::regex_match(line, match, stub)) continue;
    std::uint64_t address = std::stoull(match[1].str(), nullptr, 16);
    auto at = raw.resolve_file(path, file_offset(path, address) + 2);
    std::string target = match[2].str();
    if (target.starts_with("*ABS*+0x")) {
      auto ifunc = ifuncs.find(std::stoull(target.substr(8), nullptr, 16));
      EXPECT_NE(ifunc, ifuncs.end()) << line;
      if (ifunc == ifuncs.end()) continue;
      // Public names of one ifunc (memcmp and bcmp): any of them.
      const auto& names = ifunc->second;
      std::string ours(at.symbol.substr(0, at.symbol.size() - 4));
      target = std::find(names.begin(), names.end(), ours) != names.end() ? ours : names.front();
      ++result.irelative;
    }
    if (target == "__cxa_finalize") ++result.plt_got;
    EXPECT_EQ(at.symbol, target + "@plt") << path << ": " << line;
    EXPECT_EQ(at.offset, 2u) << line;
    ++result.stubs;
  }
  return result;
}

// PLT stubs, named as perf names them: the target's name, then "@plt"; C++ targets demangled
// before the suffix. objdump lists the stubs (its own reading of .rela.plt and .plt.got); the
// stub of an IRELATIVE slot is named by its ifunc, as perf 6.3 and later name it.
TEST(Symbolizer, NamesPltStubsAsPerfDoes) {
  PltListing target = compare_plt_names(PERFSCOPE_GNU_OBJDUMP, target_path);
  // printf, strtol, the exception's three, the ifunc, __cxa_finalize.
  EXPECT_GE(target.stubs, 7u) << target.listing;
  EXPECT_EQ(target.irelative, 1u) << target.listing;
  EXPECT_EQ(target.plt_got, 1u) << target.listing;
  EXPECT_EQ(target.headers, 1u) << target.listing;

  std::uint64_t constructor_stub = 0;
  std::istringstream again(target.listing);
  for (std::string line; std::getline(again, line);) {
    if (line.ends_with(" <_ZNSt13runtime_errorC1EPKc@plt>:")) {
      constructor_stub = std::stoull(line, nullptr, 16);
    }
  }
  ASSERT_NE(constructor_stub, 0u) << target.listing;
  std::uint64_t offset = file_offset(target_path, constructor_stub);
  SymbolizerOptions brief;
  brief.parameter_lists = false;
  Symbolizer short_names(brief);
  EXPECT_EQ(short_names.resolve_file(target_path, offset).symbol,
            "std::runtime_error::runtime_error@plt");
  Symbolizer full_names{SymbolizerOptions{}};
  EXPECT_EQ(full_names.resolve_file(target_path, offset).symbol,
            "std::runtime_error::runtime_error(char const*)@plt");
}

// The C library calls its own ifuncs (memcpy, strlen...) through IRELATIVE slots, whose
// relocations come last in .rela.plt while their stubs are among the others.
TEST(Symbolizer, NamesTheCLibrarysPltStubsAsObjdumpDoes) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  if (::access(libc.c_str(), R_OK) != 0) GTEST_SKIP() << libc << " is not here (not x86-64?)";
  PltListing x86 = compare_plt_names(PERFSCOPE_GNU_OBJDUMP, libc);
  EXPECT_GE(x86.irelative, 10u) << x86.listing;
  EXPECT_EQ(x86.headers, 1u) << x86.listing;
  const std::string cross_objdump = "/usr/bin/aarch64-linux-gnu-objdump";
  const std::string cross_libc = "/usr/aarch64-linux-gnu/lib/libc.so.6";
  if (::access(cross_objdump.c_str(), X_OK) != 0 || ::access(cross_libc.c_str(), R_OK) != 0) {
    GTEST_SKIP() << "no AArch64 C library and objdump (apt-get install g++-aarch64-linux-gnu)";
  }
  PltListing aarch64 = compare_plt_names(cross_objdump, cross_libc);
  EXPECT_GE(aarch64.stubs, 10u) << aarch64.listing;
  EXPECT_EQ(aarch64.headers, 1u) << aarch64.listing;
}

TEST(Symbolizer, KeepsMangledNamesWhenAsked) {
  SymbolizerOptions options;
  options.demangle = false;
  Symbolizer symbolizer(options);
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  auto at = symbolizer.resolve_file(target_path, file_offset(target_path, compute.address));
  EXPECT_EQ(at.symbol, "_ZN7symtest7computeEi");
}

TEST(Symbolizer, OpensEachFileOnceAndAnswersRepeatsFromItsCache) {
  Symbolizer symbolizer;
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  std::uint64_t offset = file_offset(target_path, compute.address);
  auto first = symbolizer.resolve_file(target_path, offset);
  auto second = symbolizer.resolve_file(target_path, offset + 1);
  auto again = symbolizer.resolve_file(target_path, offset);
  EXPECT_EQ(first.symbol, "symtest::compute(int)");
  EXPECT_EQ(second.symbol, "symtest::compute(int)");
  EXPECT_EQ(again.symbol.data(), first.symbol.data());  // the same cached string
  const auto& statistics = symbolizer.statistics();
  EXPECT_EQ(statistics.files_opened, 1u);
  EXPECT_EQ(statistics.lookups, 3u);
  EXPECT_EQ(statistics.cache_hits, 1u);
  // At least the program's own five functions, and nothing loaded again.
  std::uint64_t loaded = statistics.symbols_loaded;
  EXPECT_GE(loaded, 5u);
  symbolizer.resolve_file(target_path, offset + 2);
  EXPECT_EQ(statistics.symbols_loaded, loaded);
  EXPECT_EQ(statistics.files_opened, 1u);
}

TEST(Symbolizer, SaysWhichFileIsMissing) {
  Symbolizer symbolizer;
  auto at = symbolizer.resolve_file("/nonexistent/libgone.so", 0x1000);
  auto again = symbolizer.resolve_file("/nonexistent/libgone.so", 0x2000);
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_EQ(at.unresolved_reason, "file not found: /nonexistent/libgone.so");
  EXPECT_EQ(again.unresolved_reason, at.unresolved_reason);
  EXPECT_EQ(at.dso, "/nonexistent/libgone.so");
  EXPECT_EQ(warnings_with(symbolizer, "/nonexistent/libgone.so"), 1u);
}

TEST(Symbolizer, StrippedFileWithoutDebugFileSaysHowToGetSymbols) {
  TempDir empty_root;
  Symbolizer symbolizer(options_with_root(empty_root.path()));
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  auto at = symbolizer.resolve_file(bare_path, file_offset(target_path, compute.address));
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_EQ(at.unresolved_reason,
            "no symbol table (stripped; install the -dbgsym package or point --debug-root at "
            "debug files)");
  auto id = perfscope::read_build_id(target_path);
  ASSERT_TRUE(id.has_value());
  std::string hex = perfscope::build_id_hex(*id);
  // The warning names the file and where its debug file would be looked for.
  EXPECT_EQ(warnings_with(symbolizer, bare_path + " has no symbol table (stripped)"), 1u);
  EXPECT_EQ(warnings_with(symbolizer, ".build-id/" + hex.substr(0, 2) + "/" + hex.substr(2)), 1u);
}

TEST(Symbolizer, FindsTheDebugFileOfAGnuDebuglink) {
  TempDir empty_root;
  Symbolizer symbolizer(options_with_root(empty_root.path()));
  expect_program_names(symbolizer, debuglink_path);
  EXPECT_EQ(symbolizer.statistics().debug_files, 1u);
  EXPECT_EQ(notes_with(symbolizer, "from its debug file " + debug_file_path), 1u);
}

TEST(Symbolizer, RejectsADebuglinkFileWithAnotherCrc) {
  TempDir directory;
  fs::copy_file(debuglink_path, directory.path() + "/symbol_target");
  directory.write("symbol_target.debug", "not the debug file of this build\n");
  Symbolizer symbolizer(options_with_root(directory.path() + "/no-root"));
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  auto at = symbolizer.resolve_file(directory.path() + "/symbol_target",
                                    file_offset(target_path, compute.address));
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_THAT(std::string(at.unresolved_reason), HasSubstr("stripped"));
  EXPECT_EQ(warnings_with(symbolizer, "ignoring " + directory.path() +
                                          "/symbol_target.debug: its "
                                          "CRC"),
            1u);
}

TEST(Symbolizer, FindsADebugFileByBuildIdUnderTheDebugRoot) {
  auto id = perfscope::read_build_id(target_path);
  ASSERT_TRUE(id.has_value()) << "symbol_target is linked with --build-id";
  std::string hex = perfscope::build_id_hex(*id);
  TempDir root;
  fs::path tree = fs::path(root.path()) / ".build-id" / hex.substr(0, 2);
  fs::create_directories(tree);
  fs::copy_file(debug_file_path, tree / (hex.substr(2) + ".debug"));
  Symbolizer symbolizer(options_with_root(root.path()));
  expect_program_names(symbolizer, bare_path);
  EXPECT_EQ(symbolizer.statistics().debug_files, 1u);
}

TEST(Symbolizer, ReadsMiniDebugInfo) {
  std::string mini_path = PERFSCOPE_SYMBOL_MINI_PATH;
  if (mini_path.empty())
    GTEST_SKIP() << "xz was not found at configure time: no MiniDebugInfo copy";
  TempDir empty_root;
  Symbolizer symbolizer(options_with_root(empty_root.path()));
  expect_program_names(symbolizer, mini_path);
  EXPECT_EQ(symbolizer.statistics().mini_debug_infos, 1u);
  EXPECT_EQ(notes_with(symbolizer, "MiniDebugInfo"), 1u);
}

TEST(Symbolizer, WarnsOnceWhenTheRecordedBuildIdDiffers) {
  auto id = perfscope::read_build_id(target_path);
  ASSERT_TRUE(id.has_value());
  NmSymbol compute = symbol("_ZN7symtest7computeEi");
  std::uint64_t offset = file_offset(target_path, compute.address);
  {
    Symbolizer symbolizer;
    auto at = symbolizer.resolve_file(target_path, offset, *id);
    EXPECT_EQ(at.symbol, "symtest::compute(int)");
    EXPECT_TRUE(symbolizer.warnings().empty());
  }
  std::vector<std::uint8_t> other = *id;
  other[0] ^= 0xff;
  Symbolizer symbolizer;
  auto at = symbolizer.resolve_file(target_path, offset, other);
  auto again = symbolizer.resolve_file(target_path, offset + 1, other);
  EXPECT_EQ(at.symbol, "symtest::compute(int)");  // still used
  EXPECT_EQ(again.symbol, "symtest::compute(int)");
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  const std::string& warning = symbolizer.warnings().front();
  EXPECT_THAT(warning, HasSubstr("build id mismatch for " + target_path));
  EXPECT_THAT(warning, HasSubstr("recorded " + perfscope::build_id_hex(other)));
  EXPECT_THAT(warning, HasSubstr("the file has " + perfscope::build_id_hex(*id)));
}

TEST(Symbolizer, SourceLineOfAFunction) {
  SymbolizerOptions options;
  options.source_lines = true;
  Symbolizer symbolizer(options);
  NmSymbol first = symbol("_ZN7symtest10first_lineEi");
  auto at = symbolizer.resolve_file(target_path, file_offset(target_path, first.address));
  EXPECT_EQ(at.symbol, "symtest::first_line(int)");
  EXPECT_EQ(at.source.file, PERFSCOPE_SYMBOL_TARGET_SOURCE);
  EXPECT_EQ(at.source.line, marker_line("first-line"));
  EXPECT_TRUE(at.inlined.empty());  // not asked for

  // The same from the separate debug file of the stripped copy.
  TempDir empty_root;
  options.debug_root = empty_root.path();
  Symbolizer stripped(options);
  auto from_debug = stripped.resolve_file(debuglink_path, file_offset(target_path, first.address));
  EXPECT_EQ(from_debug.source.file, at.source.file);
  EXPECT_EQ(from_debug.source.line, at.source.line);
}

namespace {

struct Addr2lineFrame {
  std::string function, file;
  std::uint32_t line = 0;
};

// addr2line -a -f -i -C for each address: its frames, innermost inlined call first.
std::map<std::uint64_t, std::vector<Addr2lineFrame>> addr2line(
    const std::string& path, const std::vector<std::uint64_t>& addresses) {
  std::vector<std::string> argv = {PERFSCOPE_ADDR2LINE, "-a", "-f", "-i", "-C", "-e", path};
  for (auto address : addresses) argv.push_back(fmt::format("{:#x}", address));
  auto result = perfscope::testing::run_command(argv);
  std::map<std::uint64_t, std::vector<Addr2lineFrame>> frames;
  std::istringstream lines(result.out);
  std::string line;
  std::vector<Addr2lineFrame>* current = nullptr;
  while (std::getline(lines, line)) {
    if (line.rfind("0x", 0) == 0) {
      current = &frames[std::stoull(line, nullptr, 16)];
      continue;
    }
    std::string location;
    if (!current || !std::getline(lines, location)) break;
    Addr2lineFrame frame;
    frame.function = line;
    auto discriminator = location.find(" (discriminator");
    if (discriminator != std::string::npos) location.resize(discriminator);
    auto colon = location.rfind(':');
    frame.file = location.substr(0, colon);
    std::string number = location.substr(colon + 1);
    frame.line =
        number.empty() || number[0] == '?' ? 0 : static_cast<std::uint32_t>(std::stoul(number));
    current->push_back(frame);
  }
  return frames;
}

// addr2line joins the compilation directory and a relative name as they are ("build/../x.cpp");
// the symbolizer prints the shorter, lexically normal path.
std::string normal(const std::string& path) { return fs::path(path).lexically_normal().string(); }

}  // namespace

TEST(Symbolizer, InlineFramesMatchAddr2line) {
  if (!fs::exists(PERFSCOPE_ADDR2LINE)) GTEST_SKIP() << "no addr2line to compare with";
  SymbolizerOptions options;
  options.source_lines = true;
  options.inline_frames = true;
  Symbolizer symbolizer(options);
  NmSymbol outer = symbol("_ZN7symtest5outerEi");
  std::vector<std::uint64_t> addresses;
  for (std::uint64_t at = outer.address; at < outer.address + outer.size; ++at) {
    addresses.push_back(at);
  }
  auto oracle = addr2line(target_path, addresses);
  ASSERT_EQ(oracle.size(), addresses.size());
  std::uint32_t body = marker_line("mix-body");
  std::uint32_t call = marker_line("outer-call");
  int inlined_body_addresses = 0;
  for (auto address : addresses) {
    auto at = symbolizer.resolve_file(target_path, file_offset(target_path, address));
    const auto& frames = oracle[address];
    ASSERT_FALSE(frames.empty());
    // addr2line: the inlined calls innermost first, then the real function.
    ASSERT_EQ(at.inlined.size() + 1, frames.size()) << fmt::format("{:#x}", address);
    for (std::size_t i = 0; i < at.inlined.size(); ++i) {
      EXPECT_EQ(at.inlined[i].function, frames[i].function);
      EXPECT_EQ(at.inlined[i].location.file, normal(frames[i].file));
      EXPECT_EQ(at.inlined[i].location.line, frames[i].line) << fmt::format("{:#x}", address);
    }
    EXPECT_EQ(at.symbol, "symtest::outer(int)");
    EXPECT_EQ(at.source.file, normal(frames.back().file));
    EXPECT_EQ(at.source.line, frames.back().line) << fmt::format("{:#x}", address);
    if (!at.inlined.empty() && at.inlined[0].function == "symtest::mix(int)" &&
        at.inlined[0].location.line == body && at.source.line == call) {
      ++inlined_body_addresses;
    }
  }
  // mix's loop body is inlined into outer at the call's line.
  EXPECT_GT(inlined_body_addresses, 0);
}

TEST(Symbolizer, KernelSymbolsFromAKallsymsFile) {
  TempDir directory;
  SymbolizerOptions options;
  options.kallsyms_path = directory.write("kallsyms",
                                          "ffffffff81000000 T _stext\n"
                                          "ffffffff81000000 T _text\n"
                                          "ffffffff81000100 t helper_function\n"
                                          "ffffffff81000180 T memcpy\n"
                                          "ffffffff81000180 T __pi_memcpy\n"
                                          "ffffffff810001a0 T clkdev_hw_create\n"
                                          "ffffffff810001a0 t __clk_register_clkdev\n"
                                          "ffffffff81000200 D some_data\n"
                                          "0000000000001000 A fixed_percpu_data\n"
                                          "ffffffffc0001000 t module_function\t[fakemod]\n"
                                          "ffffffffc0001080 T module_exported\t[fakemod]\n");
  Symbolizer symbolizer(options);
  auto at = symbolizer.resolve_kernel(0xffffffff81000150);
  EXPECT_EQ(at.symbol, "helper_function");
  EXPECT_EQ(at.offset, 0x50u);
  EXPECT_EQ(at.dso, "[kernel.kallsyms]");
  EXPECT_TRUE(at.kernel);
  // Of aliases at one address, the one listed last, as perf 6.1 shows them: neither the fewer
  // underscores nor the global binding wins.
  at = symbolizer.resolve_kernel(0xffffffff81000000);
  EXPECT_EQ(at.symbol, "_text");
  at = symbolizer.resolve_kernel(0xffffffff8100018a);
  EXPECT_EQ(at.symbol, "__pi_memcpy");
  EXPECT_EQ(at.offset, 0xau);
  at = symbolizer.resolve_kernel(0xffffffff810001a0);
  EXPECT_EQ(at.symbol, "__clk_register_clkdev");
  at = symbolizer.resolve_kernel(0xffffffff81000210);  // in data
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_EQ(at.unresolved_reason, "address outside every symbol");
  at = symbolizer.resolve_kernel(0xffffffffc0001010);
  EXPECT_EQ(at.symbol, "module_function");
  EXPECT_EQ(at.dso, "[fakemod]");
  EXPECT_EQ(at.offset, 0x10u);
  at = symbolizer.resolve_kernel(0xffffffffc0001090);
  EXPECT_EQ(at.symbol, "module_exported");
  EXPECT_EQ(at.dso, "[fakemod]");
  EXPECT_TRUE(symbolizer.warnings().empty());
}

TEST(Symbolizer, KernelAddressesHiddenByKptrRestrictSayHowToShowThem) {
  TempDir directory;
  SymbolizerOptions options;
  options.kallsyms_path = directory.write("kallsyms",
                                          "0000000000000000 T _stext\n"
                                          "0000000000000000 t helper_function\n"
                                          "0000000000000000 t module_function\t[fakemod]\n");
  Symbolizer symbolizer(options);
  auto at = symbolizer.resolve_kernel(0xffffffff81000150);
  auto again = symbolizer.resolve_kernel(0xffffffff81000160);
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_TRUE(at.kernel);
  EXPECT_EQ(at.dso, "[kernel.kallsyms]");
  EXPECT_THAT(std::string(at.unresolved_reason), HasSubstr("kptr_restrict hides kernel addresses"));
  EXPECT_THAT(std::string(at.unresolved_reason), HasSubstr("sysctl kernel.kptr_restrict=0"));
  EXPECT_THAT(std::string(at.unresolved_reason), HasSubstr("run as root"));
  EXPECT_EQ(again.unresolved_reason, at.unresolved_reason);
  EXPECT_EQ(warnings_with(symbolizer, "kptr_restrict"), 1u);
}

TEST(Symbolizer, KernelSymbolOfThisMachine) {
  auto text = perfscope::sys::read_text_file("/proc/kallsyms");
  if (!text) GTEST_SKIP() << "/proc/kallsyms is not readable here";
  // The address of `schedule` as this reader sees it (0 when kptr_restrict hides it).
  std::uint64_t schedule = 0;
  std::istringstream lines(*text);
  std::string address, type, name;
  while (lines >> address >> type >> name) {
    if (name == "schedule" && (type == "T" || type == "t")) {
      schedule = std::stoull(address, nullptr, 16);
      break;
    }
    std::getline(lines, name);  // a module name, if any
  }
  if (schedule == 0) {
    GTEST_SKIP() << "kptr_restrict hides kernel addresses from this user (run as root)";
  }
  Symbolizer symbolizer;
  auto at = symbolizer.resolve_kernel(schedule + 1);
  EXPECT_EQ(at.symbol, "schedule");
  EXPECT_EQ(at.offset, 1u);
  EXPECT_EQ(at.dso, "[kernel.kallsyms]");
  EXPECT_TRUE(at.unresolved_reason.empty()) << at.unresolved_reason;
}

TEST(Symbolizer, JitSymbolsFromAPerfMapFile) {
  TempDir directory;
  SymbolizerOptions options;
  options.jit_map_dir = directory.path();
  std::string map = directory.write("perf-4242.map",
                                    "7f0000002000 20 Builtin: ArgumentsAdaptorTrampoline\n"
                                    "0x7f0000001000 0x40 LazyCompile:*hot_loop /app/main.js:10:3\n"
                                    "7f0000003000 10 _ZN3jit6kernelEv\n");
  Symbolizer symbolizer(options);
  auto at = symbolizer.resolve_jit(4242, 0x7f0000001010);
  EXPECT_EQ(at.symbol, "LazyCompile:*hot_loop /app/main.js:10:3");
  EXPECT_EQ(at.offset, 0x10u);
  EXPECT_EQ(at.dso, map);
  at = symbolizer.resolve_jit(4242, 0x7f000000201f);
  EXPECT_EQ(at.symbol, "Builtin: ArgumentsAdaptorTrampoline");
  at = symbolizer.resolve_jit(4242, 0x7f0000003004);
  EXPECT_EQ(at.symbol, "jit::kernel()");
  at = symbolizer.resolve_jit(4242, 0x7f0000002020);  // just past the trampoline
  EXPECT_TRUE(at.symbol.empty());
  EXPECT_EQ(at.unresolved_reason, "address outside every symbol");
  EXPECT_EQ(symbolizer.statistics().files_opened, 1u);

  auto missing = symbolizer.resolve_jit(4243, 0x7f0000001010);
  EXPECT_TRUE(missing.symbol.empty());
  EXPECT_THAT(std::string(missing.unresolved_reason), HasSubstr("no perf-4243.map for pid 4243"));
  EXPECT_EQ(warnings_with(symbolizer, "perf-4243.map"), 1u);
}

TEST(Symbolizer, VdsoSymbolsFromThisProcessesImage) {
  Symbolizer symbolizer;
  // Walk the first pages of the vDSO: its clock_gettime is there on every architecture.
  bool found = false;
  for (std::uint64_t offset = 0; offset < 0x2000 && !found; offset += 4) {
    auto at = symbolizer.resolve_file("[vdso]", offset);
    found = at.symbol.find("clock_gettime") != std::string_view::npos;
  }
  EXPECT_TRUE(found) << (symbolizer.warnings().empty() ? "" : symbolizer.warnings().front());
}

// The vDSO of a recording: the image it carries names its addresses, whatever this process's
// vDSO is (a copy renamed here stands for another kernel's); without one, this process's vDSO
// stands in only for a recording of this kernel.
TEST(Symbolizer, VdsoSymbolsFromTheImageTheRecordingCarries) {
  auto own = perfscope::this_process_vdso_file();
  if (!own) GTEST_SKIP() << "this kernel maps no vDSO";
  std::string_view text(reinterpret_cast<const char*>(own->bytes.data()), own->bytes.size());
  std::size_t at = text.find("clock_gettime");
  ASSERT_NE(at, std::string_view::npos);
  perfscope::EmbeddedFile carried = *own;
  std::memcpy(carried.bytes.data() + at, "clock_gettimX", 13);
  perfscope::PerfDataFeatures features;
  features.embedded_files.push_back(carried);
  features.osrelease = "0.0.0-another-kernel";
  Symbolizer symbolizer;
  symbolizer.set_recording_files(features);
  std::string named;
  for (std::uint64_t offset = 0; offset < 0x2000 && named.empty(); offset += 4) {
    auto found = symbolizer.resolve_file("[vdso]", offset, carried.build_id);
    if (found.symbol.find("clock_gettim") != std::string_view::npos) named = found.symbol;
  }
  EXPECT_THAT(named, HasSubstr("clock_gettimX"));

  // No image carried, another kernel, no build id: no names, and a sentence that says why.
  features.embedded_files.clear();
  Symbolizer other;
  other.set_recording_files(features);
  for (std::uint64_t offset = 0; offset < 0x2000; offset += 4) {
    EXPECT_TRUE(other.resolve_file("[vdso]", offset).symbol.empty());
  }
  ASSERT_FALSE(other.warnings().empty());
  EXPECT_THAT(other.warnings().front(), HasSubstr("made on kernel 0.0.0-another-kernel"));
  // A recorded build id that is neither carried nor this kernel's.
  Symbolizer unknown;
  unknown.set_recording_files(perfscope::PerfDataFeatures{});
  std::vector<std::uint8_t> another_id(20, 0x5a);
  EXPECT_TRUE(unknown.resolve_file("[vdso]", 0x800, another_id).symbol.empty());
  ASSERT_FALSE(unknown.warnings().empty());
  EXPECT_THAT(unknown.warnings().front(), HasSubstr("build id 5a5a"));
}

// A size-0 label inside a sized function (a deoptimization point V8 marks inside one of its
// builtins) does not name the rest of the function: the sized function does, as in perf. A label
// outside every sized function still names what follows it.
TEST(Symbolizer, SizedFunctionWinsOverALabelInsideIt) {
  TempDir directory;
  std::string source = directory.write("labels.s",
                                       ".text\n"
                                       ".globl sized_function\n"
                                       ".type sized_function, @function\n"
                                       "sized_function:\n"
                                       ".fill 32, 1, 0x90\n"
                                       "inner_label:\n"
                                       ".fill 32, 1, 0x90\n"
                                       "ret\n"
                                       ".size sized_function, .-sized_function\n"
                                       "outer_label:\n"
                                       ".fill 16, 1, 0x90\n"
                                       "ret\n");
  std::string object = directory.path() + "/labels.o", library = directory.path() + "/labels.so";
  if (perfscope::testing::run_command({"as", source, "-o", object}).exit_status != 0 ||
      perfscope::testing::run_command({"ld", "-shared", object, "-o", library}).exit_status != 0) {
    GTEST_SKIP() << "no GNU as and ld to build the test library";
  }
  Symbolizer symbolizer;
  // .text's offset in the file is its address in a library ld lays out this way; find it from
  // the symbol itself.
  std::uint64_t start = 0;
  for (std::uint64_t offset = 0; offset < 0x4000 && start == 0; ++offset) {
    auto at = symbolizer.resolve_file(library, offset);
    if (at.symbol == "sized_function" && at.offset == 0) start = offset;
  }
  ASSERT_NE(start, 0u) << (symbolizer.warnings().empty() ? "" : symbolizer.warnings().front());
  auto inside = symbolizer.resolve_file(library, start + 40);
  EXPECT_EQ(inside.symbol, "sized_function");
  EXPECT_EQ(inside.offset, 40u);
  auto after = symbolizer.resolve_file(library, start + 65 + 4);
  EXPECT_EQ(after.symbol, "outer_label");
}

// Of the names of one address, a compatibility alias of an old version (a single '@') gives way
// to the global a program links against ("free" before "cfree@GLIBC_2.2.5"), but not to a local
// (libm's "__exp_finite@GLIBC_2.15" before "__ieee754_exp_ifunc", as perf picks it).
TEST(Symbolizer, ACompatibilityAliasGivesWayToTheLinkedGlobalNotToALocal) {
  TempDir directory;
  std::string source = directory.write("versions.s",
                                       ".text\n"
                                       ".globl legacy_body\n"
                                       ".hidden legacy_body\n"
                                       ".globl legacy_export\n"
                                       ".type legacy_body, @function\n"
                                       ".type legacy_export, @function\n"
                                       "legacy_body:\n"
                                       "legacy_export:\n"
                                       ".fill 16, 1, 0x90\n"
                                       "ret\n"
                                       ".size legacy_body, .-legacy_body\n"
                                       ".size legacy_export, .-legacy_export\n"
                                       ".symver legacy_export, legacy_entry@PS_1\n"
                                       ".globl current_entry\n"
                                       ".type current_entry, @function\n"
                                       "current_entry:\n"
                                       ".fill 16, 1, 0x90\n"
                                       "ret\n"
                                       ".size current_entry, .-current_entry\n"
                                       ".symver current_entry, old_current@PS_1\n");
  std::string script = directory.write("versions.map",
                                       "PS_1 { global: legacy_entry; old_current; };\n"
                                       "PS_2 { global: current_entry; local: *; } PS_1;\n");
  std::string object = directory.path() + "/versions.o";
  std::string library = directory.path() + "/versions.so";
  if (perfscope::testing::run_command({"as", source, "-o", object}).exit_status != 0 ||
      perfscope::testing::run_command(
          {"ld", "-shared", "--version-script", script, object, "-o", library})
              .exit_status != 0) {
    GTEST_SKIP() << "no GNU as and ld to build the test library";
  }
  Symbolizer symbolizer;
  std::uint64_t legacy = 0, current = 0;
  for (std::uint64_t offset = 0; offset < 0x4000 && (legacy == 0 || current == 0); ++offset) {
    auto at = symbolizer.resolve_file(library, offset);
    if (at.offset != 0) continue;
    if (at.symbol.starts_with("legacy_")) legacy = offset;
    if (at.symbol.starts_with("current_") || at.symbol.starts_with("old_")) current = offset;
  }
  ASSERT_NE(legacy, 0u) << (symbolizer.warnings().empty() ? "" : symbolizer.warnings().front());
  ASSERT_NE(current, 0u);
  // The full name (--full-names) keeps the version; the short one drops it ("legacy_entry").
  EXPECT_EQ(symbolizer.resolve_file(library, legacy + 4).symbol, "legacy_entry@PS_1");
  EXPECT_EQ(symbolizer.resolve_file(library, current + 4).symbol, "current_entry");
  EXPECT_EQ(symbolizer.resolve_file(library, legacy + 4).binding,
            1);  // STB_GLOBAL as perf keeps it
}

namespace kernel_copy {

// A build-id cache holding a kallsyms copy whose symbols differ from the kallsyms_path file's:
// which one the symbolizer read shows in the names.
const std::vector<std::uint8_t> build_id{0xab, 0xcd, 0xef, 0x01, 0x23};
constexpr std::uint64_t running_text = 0xffffffff81000000;
constexpr std::uint64_t copy_text = 0xffffffff9a000000;

struct Fixture {
  TempDir directory;
  SymbolizerOptions options;
  Fixture() {
    options.kallsyms_path = directory.write("kallsyms",
                                            "ffffffff81000000 T _text\n"
                                            "ffffffff81000100 t running_function\n"
                                            "ffffffff81000200 T running_end\n");
    options.build_id_cache_dir = directory.path() + "/debug";
    fs::create_directories(options.build_id_cache_dir + "/.build-id/ab/cdef0123");
    directory.write("debug/.build-id/ab/cdef0123/kallsyms",
                    "ffffffff9a000000 T _text\n"
                    "ffffffff9a000100 t recorded_function\n"
                    "ffffffff9a000200 T recorded_end\n");
    options.kernel_build_id = build_id;
  }
};

}  // namespace kernel_copy

TEST(Symbolizer, KernelSymbolsFromTheBuildIdCacheCopyWhenItsTextMatches) {
  kernel_copy::Fixture fixture;
  fixture.options.kernel_reference_address = kernel_copy::copy_text;
  Symbolizer symbolizer(fixture.options);
  auto at = symbolizer.resolve_kernel(kernel_copy::copy_text + 0x150);
  EXPECT_EQ(at.symbol, "recorded_function");
  EXPECT_EQ(at.offset, 0x50u);
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::running_text + 0x150).symbol, "");
  EXPECT_EQ(warnings_with(symbolizer, "may be wrong"), 0u);
}

TEST(Symbolizer, KernelCopyFoundThroughTheRecordsOnAPrefetchThread) {
  kernel_copy::Fixture fixture;
  fixture.options.kernel_build_id.clear();
  Symbolizer symbolizer(fixture.options);
  symbolizer.set_kernel_build_id(kernel_copy::build_id);
  symbolizer.set_kernel_reference_address(kernel_copy::copy_text);
  symbolizer.prefetch_kernel();
  // Too late once loading: the recording's kernel cannot change under the loader.
  symbolizer.set_kernel_reference_address(kernel_copy::running_text);
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::copy_text + 0x250).symbol, "recorded_end");
  EXPECT_EQ(warnings_with(symbolizer, "may be wrong"), 0u);
}

TEST(Symbolizer, KernelCopyOfAnotherBootIsIgnoredForTheRunningKernelWhenItMatches) {
  kernel_copy::Fixture fixture;
  fixture.options.kernel_reference_address = kernel_copy::running_text;
  Symbolizer symbolizer(fixture.options);
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::running_text + 0x150).symbol,
            "running_function");
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::copy_text + 0x150).symbol, "");
  EXPECT_EQ(warnings_with(symbolizer, "may be wrong"), 0u);
}

TEST(Symbolizer, KernelCopyOfAnotherBuildIdIsNotLookedFor) {
  kernel_copy::Fixture fixture;
  fixture.options.kernel_build_id = {0xab, 0xcd, 0xef, 0x01, 0x24};
  fixture.options.kernel_reference_address = kernel_copy::copy_text;
  Symbolizer symbolizer(fixture.options);
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::running_text + 0x150).symbol,
            "running_function");
  EXPECT_EQ(warnings_with(symbolizer, "kernel symbols may be wrong"), 1u);
  EXPECT_EQ(warnings_with(symbolizer, "recorded on another boot or machine"), 1u);
}

TEST(Symbolizer, KernelSymbolsOfNoMatchingSourceAreUsedWithAWarning) {
  kernel_copy::Fixture fixture;
  fixture.options.kernel_reference_address = 0xffffffffa0000000;
  Symbolizer symbolizer(fixture.options);
  EXPECT_EQ(symbolizer.resolve_kernel(kernel_copy::running_text + 0x150).symbol,
            "running_function");
  symbolizer.resolve_kernel(kernel_copy::running_text + 0x250);
  EXPECT_EQ(warnings_with(symbolizer, "had _text at 0xffffffffa0000000"), 1u);
  EXPECT_EQ(warnings_with(symbolizer, "has it at 0xffffffff81000000"), 1u);
}
