// Programs nobody here wrote, recorded by perf: xz (xz-utils), python3 and g++ from Debian's
// packages, with frame-pointer call chains (-g) and with DWARF stacks (--call-graph dwarf).
// perfscope's report of perf's file gives every row of perf report's of 0.3 % or more (self and
// children, one by one, in both directions) within half a point, and its script gives perf
// script's frames for every sample. Where the two differ
// on purpose, the difference is named below, counted, and bounded; docs/FOREIGN_FILES.md says why
// perfscope's answer stands in each case:
//   - deeper_dwarf_stack: with DWARF stacks perfscope unwinds further than perf (to _start in
//     more samples): its stacks have frames after perf's last one, and its children shares of
//     the outer functions are higher, never lower.
//   - perf_trailing_unknown: perf ends some DWARF stacks with an [unknown] frame at
//     0xffffffffffffffff, an address that is no frame.
//   - perf_dwarf_name_inlined: where a function's DWARF name differs from its ELF symbol
//     (__libc_start_main_impl is exported as __libc_start_main, malloc is __GI___libc_malloc, a
//     clone foo.isra.0 is foo), perf shows the DWARF name marked "(inlined)" although nothing was
//     inlined; perfscope shows the ELF symbol, the name users search for.
//   - perf_linkage_name_inlined: a call inlined at the address, named by perf with its linkage
//     name (glibc's asm alias __GI___mmap64) and by perfscope with its source name (__mmap64,
//     the name the program calls).
//   - return_at_symbol_boundary: a call that is its function's last instruction returns to the
//     next symbol's first byte; perf names the return address by that next symbol (+0x0),
//     perfscope by the function that made the call, or by the address where that code has no
//     symbol (a stripped .cold part). In the report the two functions' rows differ by those
//     samples.
//   - unresolved address rows: perf names an unresolved sampled ip by its offset in the file and
//     the same address met in a call chain by its raw address, so in the children view each
//     unresolved leaf is two rows (its self row, and a chain row that counts the sample again);
//     perfscope names both by the offset, one row. The children rows are compared one by one
//     with perf's raw addresses turned into file offsets through perf's own MMAP events, and
//     perf's two rows of one address taken as the larger (the chain row holds the self row's
//     samples too).
//   - the [k]/[.] mark of an [unknown] address 0: perf marks it [k]; rows are compared without
//     the mark.
//   - symbol versions: perf shows a symbol's default version ("clock_gettime@@GLIBC_2.17"),
//     perfscope the name alone (compared without the version); where several symbols name one
//     address, perf may pick a compatibility alias of an old version (cfree@GLIBC_2.2.5:
//     perf_compat_alias), perfscope the default symbol a program links against (free); where
//     only locals share the address, both pick the alias.
//   - dwarf_walks_diverge: below some frame the two DWARF unwinders (perf's libunwind, perfscope's
//     elfutils) walk apart. In these runs perf's frame there was mostly string bytes read as an
//     address (0x2b2b632f6564756b is "kude/c++"), perfscope's a real function; allowed in at most
//     5 % of the DWARF samples (5 of 152 in one run under AddressSanitizer). A children row of a
//     function either walk reached below the parting may differ by those samples (make_ssa_name_fn
//     in g++: perf 2 samples of 151, ours 1, in a clean-clone CI run).
//   - perf_drops_invalid_chain: a frame-pointer chain that holds an invalid context marker
//     (0xffffffffffffffff after the ip) makes perf reset the whole stack and print no frame, not
//     even the sampled ip; perfscope keeps the frames before the marker.
//   - perf_unnamed_plt_got: perf 6.1 has no symbols for .plt.got stubs (libc's own malloc@plt,
//     free@plt) and prints [unknown]; perfscope names them NAME@plt, as perf 6.3 and later do.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string perf_path = "/usr/bin/perf";

struct Program {
  std::string name;
  std::vector<std::string> command;   // run in the test's directory
  std::vector<std::string> binaries;  // must exist, else the program is skipped
};

struct Row {
  double share = 0;
  double self = 0;  // the Self column with --children, else share
  std::string key;  // "comm dso symbol", without the [k]/[.] mark
  bool address = false;
};

// perf report --stdio rows (either tool): the first percentage column (Children with
// --children, else Self), then comm, dso and symbol.
std::vector<Row> report_rows(const std::string& text) {
  std::vector<Row> rows;
  static const std::regex row(
      R"(^\s*([0-9.]+)%\s+(?:([0-9.]+)%\s+)?(?:[0-9]+\s+)?(\S+)\s+(\S+)\s+\[[.kgHu]\]\s+(.*?)\s*$)");
  std::istringstream stream(text);
  std::smatch match;
  for (std::string line; std::getline(stream, line);) {
    if (line.starts_with('#') || !std::regex_match(line, match, row)) continue;
    std::string symbol = match[5];
    // The default version perf shows ("clock_gettime@@GLIBC_2.17"): perfscope shows the name.
    if (std::size_t at = symbol.find("@@"); at != std::string::npos) symbol.erase(at);
    bool address = std::regex_match(symbol, std::regex("(0x)?[0-9a-f]{16}"));
    double share = std::stod(match[1]);
    rows.push_back({share, match[2].matched ? std::stod(match[2]) : share,
                    match[3].str() + " " + match[4].str() + " " + symbol, address});
  }
  return rows;
}

struct ReportComparison {
  std::vector<std::string> problems;
  std::size_t compared = 0;
  std::map<std::string, std::size_t> named;
};

struct Mapping {
  std::uint64_t start = 0, end = 0, pgoff = 0;
};

// Executable mappings by the file's short name, from perf script --show-mmap-events.
std::map<std::string, std::vector<Mapping>> perf_mappings(const std::string& file) {
  std::map<std::string, std::vector<Mapping>> mappings;
  auto events = pt::run_command({perf_path, "script", "-i", file, "--show-mmap-events"});
  static const std::regex mmap(
      R"(PERF_RECORD_MMAP2? \S+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (?:0x)?([0-9a-f]+)[^\]]*\]: \S*x\S* (\S+)$)");
  std::istringstream lines(events.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, mmap)) continue;
    std::string path = match[4].str();
    std::uint64_t start = std::stoull(match[1].str(), nullptr, 16);
    mappings[path.substr(path.rfind('/') + 1)].push_back(
        {start, start + std::stoull(match[2].str(), nullptr, 16),
         std::stoull(match[3].str(), nullptr, 16)});
  }
  return mappings;
}

// perf's children rows keyed as perfscope keys them: the raw address of a chain row (no self
// share) in a file's mapping becomes its offset in the file, and two rows of one address become
// the larger.
std::vector<Row> children_rows_as_offsets(const std::vector<Row>& perf,
                                          const std::map<std::string, std::vector<Mapping>>& maps) {
  std::map<std::string, std::size_t> index;
  std::vector<Row> out;
  static const std::regex address_key(R"(^(\S+) (\S+) (?:0x)?([0-9a-f]{16})$)");
  for (Row row : perf) {
    std::smatch match;
    if (row.address && row.self == 0 && std::regex_match(row.key, match, address_key) &&
        match[2] != "[unknown]") {
      std::uint64_t address = std::stoull(match[3].str(), nullptr, 16);
      auto found = maps.find(match[2].str());
      if (found != maps.end()) {
        for (const Mapping& mapping : found->second) {
          if (address < mapping.start || address >= mapping.end) continue;
          row.key = fmt::format("{} {} 0x{:016x}", match[1].str(), match[2].str(),
                                address - mapping.start + mapping.pgoff);
          break;
        }
      }
    }
    auto [it, added] = index.emplace(row.key, out.size());
    if (added) {
      out.push_back(row);
    } else {
      out[it->second].share = std::max(out[it->second].share, row.share);
    }
  }
  return out;
}

// Rows at or above `threshold` in either report, one by one: each in the other within half a
// point, or its difference named.
ReportComparison compare_reports(const std::vector<Row>& perf, const std::vector<Row>& ours,
                                 bool children, bool dwarf, double threshold,
                                 const std::set<std::string>& boundary,
                                 const std::map<std::string, std::size_t>& diverged,
                                 std::size_t samples) {
  ReportComparison result;
  // return_at_symbol_boundary: the rows of a function perf names some return addresses by, and
  // of the function that made those calls.
  std::map<std::string, double> perf_shares, our_shares;
  for (const Row& row : perf) perf_shares[row.key] += row.share;
  for (const Row& row : ours) our_shares[row.key] += row.share;
  // Where the calling code has no symbol, ours is that address's row: the row of ours in the
  // same file with the share of perf's boundary row that ours lacks.
  auto file_of = [](const std::string& key) {
    return key.substr(0, key.find(' ', key.find(' ') + 1));
  };
  auto at_boundary = [&](const std::string& key) {
    std::string file = file_of(key);
    return boundary.count(key.substr(std::min(key.size(), file.size() + 1))) != 0;
  };
  std::vector<std::pair<std::string, double>> unmatched_boundary_rows;
  for (const auto& [key, share] : perf_shares) {
    if (!at_boundary(key)) continue;
    // The share of perf's row that is not in ours: the whole row, or (where the function has
    // samples of its own) what perf's row has more.
    double our_share = our_shares.count(key) ? our_shares[key] : 0;
    if (share - our_share > 0.05)
      unmatched_boundary_rows.emplace_back(file_of(key), share - our_share);
  }
  auto unnamed_caller = [&](const std::string& key, double share) {
    return std::any_of(unmatched_boundary_rows.begin(), unmatched_boundary_rows.end(),
                       [&](const auto& row) {
                         return row.first == file_of(key) && std::fabs(row.second - share) < 0.05;
                       });
  };
  // perf_unnamed_plt_got: perf 6.1's unresolved address row of a .plt.got stub, and ours of the
  // same file named NAME@plt, with the same share (a sample or two lands there now and then).
  static const std::regex address_row(R"(.* (0x)?[0-9a-f]{16}$)");
  auto plt_counterpart = [&](const std::string& key, double share, bool of_perf) {
    std::string file = key.substr(0, key.rfind(' ') + 1);
    const auto& others = of_perf ? our_shares : perf_shares;
    const auto& own = of_perf ? perf_shares : our_shares;
    return std::any_of(others.begin(), others.end(), [&](const auto& row) {
      bool shape = of_perf ? row.first.ends_with("@plt") : std::regex_match(row.first, address_row);
      return shape && row.first.starts_with(file) && !own.count(row.first) &&
             std::fabs(row.second - share) <= 0.05;
    });
  };
  std::map<std::string, std::pair<double, double>> keys;  // key -> (perf, ours)
  for (const auto& [key, share] : perf_shares) {
    if (share >= threshold) keys[key] = {share, our_shares.count(key) ? our_shares[key] : -1};
  }
  for (const auto& [key, share] : our_shares) {
    if (share >= threshold) keys[key] = {perf_shares.count(key) ? perf_shares[key] : -1, share};
  }
  for (const auto& [key, shares] : keys) {
    auto [theirs, mine] = shares;
    if ((theirs < 0 || mine < 0 || std::fabs(mine - theirs) > 0.5) &&
        (at_boundary(key) || (theirs < 0 && unnamed_caller(key, mine)))) {
      ++result.named["return_at_symbol_boundary"];
      continue;
    }
    if (mine < 0) {
      // perf_dwarf_name_inlined: the DWARF name perf marks inlined is not a row of ours.
      if (dwarf && key.ends_with(" (inlined)")) {
        ++result.named["perf_dwarf_name_inlined"];
        continue;
      }
      // perf_compat_alias: perfscope names the address by its default symbol.
      if (key.find('@') != std::string::npos) {
        ++result.named["perf_compat_alias"];
        continue;
      }
      if (std::regex_match(key, address_row) && plt_counterpart(key, theirs, true)) {
        ++result.named["perf_unnamed_plt_got"];
        continue;
      }
      // perf_trailing_unknown: the frame perf adds after the last of some DWARF stacks.
      if (dwarf && key.ends_with(" [unknown] 0xffffffffffffffff")) {
        ++result.named["perf_trailing_unknown"];
        continue;
      }
      // dwarf_walks_diverge: the addresses perf's walk read below the frame where the two walks
      // parted (string bytes, stack slots), in at most 5 % of the samples.
      if (dwarf && children && std::regex_match(key, address_row) && theirs <= 5.0) {
        ++result.named["dwarf_walks_diverge"];
        continue;
      }
      result.problems.push_back(fmt::format("perf's row {:.2f}% {} is not ours", theirs, key));
      continue;
    }
    if (theirs < 0) {
      // perf_compat_alias: ours is the default symbol of an address perf names by an alias
      // ("free" for "cfree@GLIBC_2.2.5": same comm, file and share).
      std::string file = key.substr(0, key.rfind(' ') + 1);
      const double our_share = mine;  // a structured binding: not captured by clang 14
      bool alias = std::any_of(perf_shares.begin(), perf_shares.end(), [&](const auto& row) {
        return row.first.starts_with(file) &&
               row.first.find('@', file.size()) != std::string::npos &&
               !our_shares.count(row.first) && std::fabs(row.second - our_share) <= 0.5;
      });
      if (alias) continue;
      if (key.ends_with("@plt") && plt_counterpart(key, mine, false)) {
        ++result.named["perf_unnamed_plt_got"];
        continue;
      }
      // deeper_dwarf_stack: a function only our longer walks reach, or the ELF symbol of one
      // perf shows by its DWARF name (perf_dwarf_name_inlined).
      if (dwarf && children) {
        ++result.named["deeper_dwarf_stack"];
        continue;
      }
      result.problems.push_back(fmt::format("our row {:.2f}% {} is not perf's", mine, key));
      continue;
    }
    ++result.compared;
    double difference = mine - theirs;
    if (std::fabs(difference) <= 0.5) continue;
    // deeper_dwarf_stack: more samples reach the outer functions.
    if (children && dwarf && difference > 0) {
      ++result.named["deeper_dwarf_stack"];
      continue;
    }
    // dwarf_walks_diverge: a function below the frame where the walks of some samples parted
    // (one sample of 151 is 0.66 points); the row differs by those samples at most.
    if (children && dwarf) {
      auto below = diverged.find(key.substr(std::min(key.size(), file_of(key).size() + 1)));
      if (below != diverged.end() &&
          std::fabs(difference) <=
              0.5 + 100.0 * below->second / std::max<std::size_t>(samples, 1)) {
        ++result.named["dwarf_walks_diverge"];
        continue;
      }
    }
    result.problems.push_back(fmt::format("{}: perf {:.2f}%, ours {:.2f}%", key, theirs, mine));
  }
  return result;
}

struct Frame {
  std::string ip, text;
};
struct Sample {
  std::string header;
  std::vector<Frame> frames;
};

// "realpath@@GLIBC_2.3+0x133" as perfscope writes it: the name without its default version.
std::string without_default_version(std::string text) {
  if (std::size_t at = text.find("@@"); at != std::string::npos) {
    std::size_t end = text.find_first_of("+ ", at);
    text.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return text;
}

// perf script -F comm,tid,time,ip,sym,symoff,dso (either tool).
std::vector<Sample> script_samples(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream stream(text);
  static const std::regex frame(R"(^\s+([0-9a-f]+) (.*)$)");
  std::smatch match;
  for (std::string line; std::getline(stream, line);) {
    if (line.empty()) continue;
    if (std::regex_match(line, match, frame) && !samples.empty()) {
      samples.back().frames.push_back({match[1], without_default_version(match[2])});
    } else {
      samples.push_back({line, {}});
    }
  }
  return samples;
}

// The function of a script frame's text ("name+0x1f (/usr/lib/x)").
std::string frame_function(const std::string& text) {
  std::size_t end = text.rfind("+0x");
  if (end == std::string::npos) end = text.rfind(" (");
  return text.substr(0, end);
}

// `boundary` gets both names of every return_at_symbol_boundary frame: the report rows of those
// functions differ by the same samples.
std::map<std::string, std::size_t> compare_scripts(const std::vector<Sample>& perf,
                                                   const std::vector<Sample>& ours, bool dwarf,
                                                   std::vector<std::string>& unexplained,
                                                   std::set<std::string>& boundary,
                                                   std::map<std::string, std::size_t>& diverged) {
  std::map<std::string, std::size_t> named;
  if (perf.size() != ours.size()) {
    unexplained.push_back(fmt::format("perf has {} samples, ours {}", perf.size(), ours.size()));
    return named;
  }
  for (std::size_t s = 0; s < perf.size(); ++s) {
    const Sample& theirs = perf[s];
    const Sample& mine = ours[s];
    if (theirs.header != mine.header) {
      unexplained.push_back(fmt::format("sample {}: '{}' vs '{}'", s, theirs.header, mine.header));
      continue;
    }
    std::size_t i = 0, j = 0;
    while (i < theirs.frames.size() || j < mine.frames.size()) {
      const Frame* a = i < theirs.frames.size() ? &theirs.frames[i] : nullptr;
      const Frame* b = j < mine.frames.size() ? &mine.frames[j] : nullptr;
      if (a && b && a->ip == b->ip && a->text == b->text) {
        ++i, ++j;
        continue;
      }
      if (a && a->ip == "ffffffffffffffff" && i + 1 == theirs.frames.size()) {
        ++named["perf_trailing_unknown"];
        ++i;
        continue;
      }
      if (!a && dwarf) {
        ++named["deeper_dwarf_stack"];
        break;
      }
      if (a && b && a->ip == b->ip && a->text.ends_with(" (inlined)") &&
          !b->text.ends_with(" (inlined)")) {
        ++named["perf_dwarf_name_inlined"];
        ++i, ++j;
        continue;
      }
      if (a && b && a->ip == b->ip && a->text.ends_with(" (inlined)") &&
          b->text.ends_with(" (inlined)")) {
        std::string perf_name = frame_function(a->text), our_name = frame_function(b->text);
        if (perf_name.size() > our_name.size() && perf_name.ends_with(our_name) &&
            a->text.substr(perf_name.size()) == b->text.substr(our_name.size())) {
          ++named["perf_linkage_name_inlined"];
          ++i, ++j;
          continue;
        }
      }
      if (a && b && a->ip == b->ip && a->text.find('@') != std::string::npos &&
          a->text.find("@@") == std::string::npos) {
        ++named["perf_compat_alias"];
        ++i, ++j;
        continue;
      }
      if (a && b && a->ip == b->ip && a->text.starts_with("[unknown] (") &&
          frame_function(b->text).ends_with("@plt")) {
        ++named["perf_unnamed_plt_got"];
        ++i, ++j;
        continue;
      }
      if (!a && i == 0 && theirs.frames.empty()) {
        ++named["perf_drops_invalid_chain"];
        break;
      }
      if (a && b && a->ip == b->ip && a->text.find("+0x0 (") != std::string::npos) {
        ++named["return_at_symbol_boundary"];
        boundary.insert(frame_function(a->text));
        boundary.insert(frame_function(b->text));
        ++i, ++j;
        continue;
      }
      // (Or perf's walk went on where ours ended, to an address that names nothing: a stack slot
      // read as a return address.)
      if (dwarf && a && i == j && i > 0 && (b || a->text.starts_with("[unknown] ("))) {
        ++named["dwarf_walks_diverge"];
        // Every function either walk reached below the parting: its children rows may differ
        // by this sample.
        std::set<std::string> functions;
        for (std::size_t k = i; k < theirs.frames.size(); ++k)
          functions.insert(frame_function(theirs.frames[k].text));
        for (std::size_t k = j; k < mine.frames.size(); ++k)
          functions.insert(frame_function(mine.frames[k].text));
        for (const std::string& function : functions) ++diverged[function];
        break;
      }
      unexplained.push_back(fmt::format("{} frame {}: perf '{} {}', ours '{} {}'", theirs.header, i,
                                        a ? a->ip : "-", a ? a->text : "(none)", b ? b->ip : "-",
                                        b ? b->text : "(none)"));
      break;
    }
  }
  return named;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 30; ++i) out += lines[i] + "\n";
  return out;
}

class RealPrograms : public ::testing::TestWithParam<std::string> {};

Program program_named(const std::string& name, const pt::TempDir& dir) {
  if (name == "xz") {
    // 3 MB that compresses at xz's pace (text with repeats, not random bytes).
    std::string text;
    std::uint64_t state = 7;
    while (text.size() < 3000000) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      text += fmt::format("line {} value {} ", state >> 40, (state >> 20) & 0xfff);
      if ((state >> 60) == 0) text += "\n";
    }
    dir.write("input.txt", text);
    return {
        name, {"/usr/bin/xz", "-T1", "-6", "-c", "-k", dir.path() + "/input.txt"}, {"/usr/bin/xz"}};
  }
  if (name == "python3") {
    std::string script =
        "import json, re\n"
        "def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "data = [{'k': i, 'v': str(i) * 3} for i in range(200000)]\n"
        "text = json.dumps(data)\n"
        "print(fib(24), len(json.loads(text)), len(re.findall(r'\\d+', text)))\n";
    dir.write("program.py", script);
    return {name, {"/usr/bin/python3", dir.path() + "/program.py"}, {"/usr/bin/python3"}};
  }
  std::string source =
      "#include <map>\n#include <string>\n#include <vector>\n#include <iostream>\n"
      "template <int N> struct F { static constexpr int v = F<N - 1>::v + F<N - 2>::v; };\n"
      "template <> struct F<1> { static constexpr int v = 1; };\n"
      "template <> struct F<0> { static constexpr int v = 0; };\n"
      "int main() { std::map<std::string, std::vector<int>> m;\n"
      "  for (int i = 0; i < 100; ++i) m[std::to_string(i)].push_back(F<25>::v);\n"
      "  std::cout << m.size(); }\n";
  dir.write("program.cpp", source);
  return {
      name,
      {"/usr/bin/g++", "-O2", "-c", dir.path() + "/program.cpp", "-o", dir.path() + "/program.o"},
      {"/usr/bin/g++"}};
}

TEST_P(RealPrograms, ReportAndScriptAgreeWithPerf) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  pt::TempDir dir;
  Program program = program_named(GetParam(), dir);
  for (const std::string& binary : program.binaries) {
    if (::access(binary.c_str(), X_OK) != 0) GTEST_SKIP() << binary << " is not installed";
  }
  for (bool dwarf : {false, true}) {
    SCOPED_TRACE(fmt::format("{} with {}", program.name, dwarf ? "--call-graph dwarf" : "-g"));
    std::string file = dir.path() + (dwarf ? "/dwarf.data" : "/fp.data");
    std::vector<std::string> record{perf_path, "record", "-q", "-o", file};
    if (dwarf) {
      record.insert(record.end(), {"--call-graph", "dwarf", "-F", "400"});
    } else {
      record.insert(record.end(), {"-g", "-F", "1000"});
    }
    record.push_back("--");
    record.insert(record.end(), program.command.begin(), program.command.end());
    pt::CommandResult recorded = pt::run_command(record);
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;

    std::vector<std::string> script{"script", "-i", file, "-F", "comm,tid,time,ip,sym,symoff,dso"};
    std::vector<std::string> perf_script{perf_path};
    perf_script.insert(perf_script.end(), script.begin(), script.end());
    pt::CommandResult perf_frames = pt::run_command(perf_script);
    pt::CommandResult our_frames = pt::run_perfscope(script);
    ASSERT_EQ(perf_frames.exit_status, 0) << perf_frames.err;
    ASSERT_EQ(our_frames.exit_status, 0) << our_frames.err;
    auto perf_samples = script_samples(perf_frames.out);
    ASSERT_GT(perf_samples.size(), 50u);
    std::vector<std::string> unexplained;
    std::set<std::string> boundary;
    std::map<std::string, std::size_t> diverged;
    auto named = compare_scripts(perf_samples, script_samples(our_frames.out), dwarf, unexplained,
                                 boundary, diverged);
    std::string counts;
    for (const auto& [name, count] : named) counts += fmt::format(" {}={}", name, count);
    EXPECT_TRUE(unexplained.empty()) << unexplained.size() << " of " << perf_samples.size()
                                     << " samples differ unexplained (named:" << counts << "):\n"
                                     << joined(unexplained);
    EXPECT_LE(named["dwarf_walks_diverge"] * 100, perf_samples.size() * 5) << counts;
    // A stub is a jump: samples land in one rarely (1 of 481 samples of g++ in one run).
    EXPECT_LE(named["perf_unnamed_plt_got"] * 100, perf_samples.size() * 2) << counts;
    if (!dwarf) {
      EXPECT_EQ(named.count("deeper_dwarf_stack"), 0u);
      EXPECT_EQ(named.count("perf_dwarf_name_inlined"), 0u);
    }

    for (bool children : {false, true}) {
      std::vector<std::string> report{
          "report", "--stdio", "-i",
          file,     "--sort",  "comm,dso,sym",
          "-g",     "none",    children ? "--children" : "--no-children"};
      std::vector<std::string> perf_report{perf_path};
      perf_report.insert(perf_report.end(), report.begin(), report.end());
      pt::CommandResult theirs = pt::run_command(perf_report);
      pt::CommandResult ours = pt::run_perfscope(report);
      ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
      ASSERT_EQ(ours.exit_status, 0) << ours.err;
      auto perf_rows = report_rows(theirs.out);
      ASSERT_GE(perf_rows.size(), 15u) << theirs.out.substr(0, 3000);
      if (children) perf_rows = children_rows_as_offsets(perf_rows, perf_mappings(file));
      auto our_rows = report_rows(ours.out);
      ReportComparison comparison = compare_reports(perf_rows, our_rows, children, dwarf, 0.3,
                                                    boundary, diverged, perf_samples.size());
      EXPECT_GE(comparison.compared, 10u);
      std::string row_counts;
      for (const auto& [name, count] : comparison.named)
        row_counts += fmt::format(" {}={}", name, count);
      fmt::print("{} {} rows of 0.3 % or more: {} compared, {} unexplained, named:{}\n",
                 program.name, children ? "children" : "self", comparison.compared,
                 comparison.problems.size(), row_counts);
      EXPECT_TRUE(comparison.problems.empty())
          << (children ? "children" : "self") << " rows (named:" << row_counts << "):\n"
          << joined(comparison.problems) << "\nperf:\n"
          << theirs.out.substr(0, 4000) << "\nours:\n"
          << ours.out.substr(0, 4000);
      if (children) {
        // No single [unknown] row above the named ones: unresolved frames are rows per address.
        for (const Row& row : our_rows) {
          EXPECT_FALSE(row.key.ends_with(" [unknown]")) << row.key << " " << row.share;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DebianPrograms, RealPrograms, ::testing::Values("xz", "python3", "g++"));

}  // namespace
