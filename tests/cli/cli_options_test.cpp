// The command-line rules every subcommand shares (issue #23): option errors with exit status 2
// and a message that ends with what to do, where a measured command starts, the subcommand list,
// -F above the kernel's maximum, doctor's fixes said once, and two examples in every --help.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::vector<std::string> subcommands = {"stat",    "doctor", "list",     "record", "script",
                                              "report",  "diff",   "annotate", "trace",  "inject",
                                              "archive", "top",    "sched",    "push"};

std::string help_hint(const std::string& sub) {
  return "run 'perfscope " + sub + " --help' for the options\n";
}

TEST(CliOptions, UnknownOptionBeforeTheCommandIsAnOptionError) {
  auto record = pt::run_perfscope({"record", "--bogus", "--", "true"});
  // One letter from another is no likely typo: no suggestion for short options.
  auto short_option = pt::run_perfscope({"record", "-Q", "true"});
  EXPECT_EQ(short_option.exit_status, 129);
  EXPECT_EQ(short_option.err, "perfscope record: unknown option -Q; " + help_hint("record"));
  EXPECT_EQ(record.exit_status, 129);
  EXPECT_EQ(record.err, "perfscope record: unknown option --bogus; " + help_hint("record"));
  auto stat = pt::run_perfscope({"stat", "--bogus", "true"});
  EXPECT_EQ(stat.exit_status, 129);
  EXPECT_EQ(stat.err, "perfscope stat: unknown option --bogus; " + help_hint("stat"));
  // A near miss gets a suggestion; options after it are still read as options.
  auto typo = pt::run_perfscope({"stat", "--evnt", "task-clock", "true"});
  EXPECT_EQ(typo.exit_status, 129);
  EXPECT_EQ(typo.err,
            "perfscope stat: unknown option --evnt; did you mean --event?; " + help_hint("stat"));
  auto report = pt::run_perfscope({"report", "--sortt", "comm"});
  EXPECT_EQ(report.exit_status, 129);
  EXPECT_EQ(report.err, "perfscope report: unknown option --sortt; did you mean --sort?; " +
                            help_hint("report"));
}

TEST(CliOptions, TheCommandStartsAtItsFirstWordOrAfterDoubleDash) {
  // Options of the command itself are its own, with or without "--".
  auto plain = pt::run_perfscope({"stat", "-e", "task-clock", "sh", "-c", "exit 3"});
  EXPECT_EQ(plain.exit_status, 3) << plain.err;
  auto dashed = pt::run_perfscope({"stat", "-e", "task-clock", "--", "sh", "-c", "exit 4"});
  EXPECT_EQ(dashed.exit_status, 4) << dashed.err;
  // A "--" after the command's first word belongs to the command: sh -c gets it as $1 (were it
  // dropped, $1 would be "x").
  auto kept = pt::run_perfscope({"stat", "-e", "task-clock", "-o", "/dev/null", "sh", "-c",
                                 "echo \"[$1]\"", "sh", "--", "x"});
  EXPECT_EQ(kept.exit_status, 0) << kept.err;
  EXPECT_EQ(kept.out, "[--]\n");
  // A flag before the options' "--" takes no value: the "--" still ends the options.
  auto flag = pt::run_perfscope(
      {"stat", "-e", "task-clock", "--no-inherit", "-o", "/dev/null", "--", "sh", "-c", "exit 5"});
  EXPECT_EQ(flag.exit_status, 5) << flag.err;
  // A word starting with '-' after "--" is the command, not an option.
  auto after = pt::run_perfscope({"stat", "-e", "task-clock", "--", "--bogus"});
  EXPECT_EQ(after.exit_status, 1);
  EXPECT_THAT(after.err, HasSubstr("cannot run '--bogus'"));
}

// -v goes before or after the subcommand, as perf takes it (`perf record -v`); what the
// subcommand does not know is still its unknown option.
TEST(CliOptions, VerboseGoesBeforeOrAfterTheSubcommand) {
  pt::TempDir dir;
  std::string path = dir.path() + "/verbose.data";
  for (bool before : {true, false}) {
    SCOPED_TRACE(before ? "before" : "after");
    std::vector<std::string> words = {"record", "-e", "task-clock", "-o", path, "--", "true"};
    words.insert(before ? words.begin() : words.begin() + 1, "-v");
    auto run = pt::run_perfscope(words);
    EXPECT_EQ(run.exit_status, 0) << run.err;
    EXPECT_THAT(run.err, HasSubstr("perfscope: recording 1 event(s) of")) << run.err;
  }
  auto quiet = pt::run_perfscope({"record", "-e", "task-clock", "-o", path, "--", "true"});
  EXPECT_EQ(quiet.exit_status, 0) << quiet.err;
  EXPECT_THAT(quiet.err, Not(HasSubstr("perfscope: recording"))) << quiet.err;
  auto report = pt::run_perfscope({"report", "-v", "--sortt", "comm", "-i", path});
  EXPECT_EQ(report.exit_status, 129);
  EXPECT_EQ(report.err, "perfscope report: unknown option --sortt; did you mean --sort?; " +
                            help_hint("report"));
}

TEST(CliOptions, HelpStatesWhereTheCommandStarts) {
  for (std::string sub : {"stat", "record"}) {
    auto help = pt::run_perfscope({sub, "--help"});
    EXPECT_EQ(help.exit_status, 0);
    EXPECT_THAT(help.out, HasSubstr("The command starts at the first word that is neither an "
                                    "option nor an option's value"));
    EXPECT_THAT(help.out, HasSubstr("a '--' after the command's first word belongs to the "
                                    "command"));
  }
}

TEST(CliOptions, NoSubcommandListsThemAll) {
  auto result = pt::run_perfscope({});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_THAT(result.err, HasSubstr("usage: perfscope [--version] [-v] COMMAND [ARGS]"));
  for (const auto& sub : subcommands) {
    EXPECT_THAT(result.err, HasSubstr("\n   " + sub + " ")) << sub;
  }
  EXPECT_THAT(result.err, HasSubstr("   record     Sample a command or a target into a "
                                    "perf.data file\n"));
  auto verbose_only = pt::run_perfscope({"-v"});
  EXPECT_EQ(verbose_only.exit_status, 1);
  EXPECT_THAT(verbose_only.err, HasSubstr("The perfscope commands are:"));
  auto unknown = pt::run_perfscope({"recrod"});
  EXPECT_EQ(unknown.exit_status, 1);  // perf's status for a word that names no command
  EXPECT_EQ(unknown.err,
            "perfscope: 'recrod' is not a perfscope command; did you mean 'record'?; "
            "run 'perfscope' for the list\n");
}

TEST(CliOptions, FrequencyAboveTheKernelMaximumIsLowered) {
  auto maximum = perfscope::sys::read_sysctl("perf_event_max_sample_rate");
  if (!maximum || *maximum <= 0) GTEST_SKIP() << "kernel.perf_event_max_sample_rate unreadable";
  std::string above = std::to_string(*maximum + 1000);
  std::string output = pt::temp_path("cli_options_freq.data");
  auto lowered =
      pt::run_perfscope({"record", "-e", "cpu-clock", "-F", above, "-o", output, "--", "true"});
  EXPECT_EQ(lowered.exit_status, 0) << lowered.err;
  EXPECT_THAT(lowered.err, HasSubstr("perfscope: warning: -F " + above +
                                     " is above kernel.perf_event_max_sample_rate: sampling at " +
                                     std::to_string(*maximum) + " Hz instead"));
  auto strict = pt::run_perfscope(
      {"record", "-e", "cpu-clock", "-F", above, "--strict-freq", "-o", output, "--", "true"});
  EXPECT_EQ(strict.exit_status, 129);  // an option value refused: an option error
  EXPECT_THAT(strict.err, HasSubstr("--strict-freq refuses to lower it; give -F " +
                                    std::to_string(*maximum) + " or less"));
  std::filesystem::remove(output);
}

TEST(CliOptions, DoctorSaysEachFixOnce) {
  auto result = pt::run_perfscope({"doctor"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  // Every "fix:" paragraph (the lines up to the next check) is printed once.
  std::vector<std::string> fixes;
  std::string current;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    bool continuation = line.starts_with("            ");
    if (!current.empty() && !continuation) {
      fixes.push_back(current);
      current.clear();
    }
    if (line.starts_with("       fix: "))
      current = line;
    else if (!current.empty())
      current += line;
  }
  if (!current.empty()) fixes.push_back(current);
  std::vector<std::string> long_fixes;
  for (const auto& fix : fixes) {
    if (fix.find("the same as for '") == std::string::npos) long_fixes.push_back(fix);
  }
  auto sorted = long_fixes;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << result.out;
  if (!pt::hardware_counters_available()) {
    // Without a PMU several checks share the one fix: the later ones refer to it.
    EXPECT_THAT(result.out, HasSubstr("fix: the same as for '")) << result.out;
  }
}

// Help is found before parsing (help_text_requested): it must be the text CLI11 prints for the
// same subcommand, with the options given before it, and a --help that belongs to the measured
// command must stay the command's.
TEST(CliOptions, HelpIsEachSubcommandsOwnWhereverItIsAsked) {
  auto top = pt::run_perfscope({"--help"});
  EXPECT_EQ(top.exit_status, 0);
  EXPECT_THAT(top.out, StartsWith("perfscope: counting and profiling with Linux perf_event\n"
                                  "Usage: perfscope [OPTIONS] SUBCOMMAND"));
  for (const auto& sub : subcommands) {
    EXPECT_THAT(top.out, HasSubstr("\n  " + sub + " ")) << sub;
    auto help = pt::run_perfscope({sub, "--help"});
    EXPECT_EQ(help.exit_status, 0) << sub;
    EXPECT_THAT(help.out, HasSubstr("Usage: perfscope " + sub + " ")) << sub;
    EXPECT_EQ(pt::run_perfscope({sub, "-h"}).out, help.out) << sub;
    EXPECT_EQ(pt::run_perfscope({"-v", sub, "--help"}).out, help.out) << sub;
    // perf's spelling.
    auto spelled = pt::run_perfscope({"help", sub});
    EXPECT_EQ(spelled.exit_status, 0) << sub;
    EXPECT_EQ(spelled.out, help.out) << sub;
  }
  // After options and their values, and in a nested subcommand.
  auto record = pt::run_perfscope({"record", "-F", "99", "-e", "cpu-clock", "--help"});
  EXPECT_EQ(record.out, pt::run_perfscope({"record", "--help"}).out);
  auto timehist = pt::run_perfscope({"sched", "timehist", "--help"});
  EXPECT_EQ(timehist.exit_status, 0);
  EXPECT_THAT(timehist.out, HasSubstr("Usage: perfscope sched timehist "));
  EXPECT_EQ(pt::run_perfscope({"help"}).out, top.out);
  // The measured command's own --help, with or without "--".
  for (auto words :
       {std::vector<std::string>{"stat", "-e", "task-clock", "sh", "-c", "echo own", "--help"},
        std::vector<std::string>{"stat", "-e", "task-clock", "--", "sh", "-c", "echo own",
                                 "--help"}}) {
    auto own = pt::run_perfscope(words);
    EXPECT_EQ(own.exit_status, 0) << own.err;
    EXPECT_EQ(own.out, "own\n");
  }
}

TEST(CliOptions, VersionHasThreeSpellings) {
  auto flag = pt::run_perfscope({"--version"});
  EXPECT_EQ(flag.exit_status, 0);
  EXPECT_THAT(flag.out, StartsWith("perfscope "));
  EXPECT_EQ(pt::run_perfscope({"version"}).out, flag.out);
  EXPECT_EQ(pt::run_perfscope({"-v", "version"}).out, flag.out);
}

TEST(CliOptions, EveryHelpShowsTwoExamples) {
  for (const auto& sub : subcommands) {
    auto help = pt::run_perfscope({sub, "--help"});
    EXPECT_EQ(help.exit_status, 0) << sub;
    auto at = help.out.find("Examples:\n");
    ASSERT_NE(at, std::string::npos) << sub << help.out;
    std::string examples = help.out.substr(at);
    std::size_t count = 0;
    for (std::size_t p = examples.find("\n  perfscope " + sub + " "); p != std::string::npos;
         p = examples.find("\n  perfscope " + sub + " ", p + 1)) {
      ++count;
    }
    if (sub == "doctor") count += examples.find("\n  perfscope doctor\n") != std::string::npos;
    EXPECT_GE(count, 2u) << sub << examples;
  }
}

// Every subcommand with an unknown option, an option missing its value and a value that is not
// one: exit status 2, one line naming the subcommand and ending with what to do.
TEST(CliOptions, EverySubcommandRejectsBadOptionsTheSameWay) {
  struct Case {
    std::string sub;
    std::vector<std::string> missing_value;  // an option given without its value
    std::vector<std::string> typo_value;     // an option given a value it cannot take
    std::vector<std::string> operands = {};  // what the subcommand requires besides options
  };
  const std::vector<Case> cases = {
      {"stat", {"stat", "-e"}, {"stat", "-p", "abc", "true"}},
      {"record", {"record", "-o"}, {"record", "-F", "fast", "true"}},
      {"report", {"report", "--sort"}, {"report", "--percent-limit", "lots"}},
      {"script", {"script", "-i"}, {"script", "--json=maybe"}},
      {"list", {"list", "--json", "extra", "words"}, {"list", "--json=maybe"}},
      {"doctor", {"doctor", "--binary"}, {"doctor", "--json=maybe"}},
      {"diff", {"diff", "--sort"}, {"diff", "--percent-limit", "lots"}, {"a.data", "b.data"}},
      {"annotate", {"annotate", "-i"}, {"annotate", "--percent-limit", "lots"}},
      {"trace", {"trace", "-e"}, {"trace", "-p", "abc", "true"}},
      {"inject", {"inject", "-i"}, {}, {"-o", "/dev/null"}},  // paths and a flag
      {"archive", {"archive", "-o"}, {}},  // every value is a path: none is a typo
      {"top", {"top", "-e"}, {"top", "-F", "fast"}},
      {"sched", {"sched", "-i"}, {}, {"timehist"}},
      {"push",
       {"push", "--push-format"},
       {"push", "--push-timeout", "soon"},
       {"/dev/null", "http://127.0.0.1:4040"}},
  };
  ASSERT_EQ(cases.size(), subcommands.size());
  for (const auto& c : cases) {
    std::vector<std::string> bogus = {c.sub, "--bogus-option"};
    bogus.insert(bogus.end(), c.operands.begin(), c.operands.end());
    auto unknown = pt::run_perfscope(bogus);
    EXPECT_EQ(unknown.exit_status, 129) << c.sub;
    EXPECT_EQ(unknown.err,
              "perfscope " + c.sub + ": unknown option --bogus-option; " + help_hint(c.sub));
    auto missing = pt::run_perfscope(c.missing_value);
    EXPECT_EQ(missing.exit_status, 129) << c.sub << missing.err;
    EXPECT_THAT(missing.err, StartsWith("perfscope " + c.sub + ": ")) << missing.err;
    EXPECT_THAT(missing.err, EndsWith(help_hint(c.sub))) << missing.err;
    if (c.typo_value.empty()) continue;
    auto typo = pt::run_perfscope(c.typo_value);
    EXPECT_EQ(typo.exit_status, 129) << c.sub << typo.err;
    EXPECT_THAT(typo.err, StartsWith("perfscope " + c.sub + ": ")) << typo.err;
    EXPECT_THAT(typo.err, EndsWith(help_hint(c.sub))) << typo.err;
    EXPECT_EQ(std::count(typo.err.begin(), typo.err.end(), '\n'), 1) << typo.err;
  }
  // The exact messages of the two kinds.
  auto missing = pt::run_perfscope({"stat", "-e"});
  EXPECT_EQ(missing.err,
            "perfscope stat: option --event needs a value; give one (--event VALUE) "
            "or " +
                help_hint("stat"));
  auto typo = pt::run_perfscope({"stat", "-p", "abc", "true"});
  EXPECT_EQ(typo.err, "perfscope stat: --pid abc: not a value --pid takes; " + help_hint("stat"));
}

}  // namespace

namespace {

// A number out of range, or no number, is said in a sentence with the value first, and no bound
// nobody typed (CLI11's PositiveNumber printed the largest double, 310 digits).
TEST(CliOptions, NumericOptionErrorsAreSentences) {
  struct Case {
    std::vector<std::string> argv;
    std::string said;
  };
  const std::vector<Case> cases = {
      // top -F takes max as record's does.
      {{"top", "-F", "abc"}, "perfscope top: -F: 'abc' is not a rate: give samples per second"},
      {{"top", "-F", "0"}, "perfscope top: -F: '0' is not a rate: give samples per second"},
      {{"stat", "-I", "abc", "--", "true"},
       "perfscope stat: --interval-print abc: not a number (from 1 to 3600000)"},
      {{"stat", "-I", "0", "--", "true"},
       "perfscope stat: --interval-print 0: not in the range 1 to 3600000"},
      {{"report", "--percent-limit", "200"},
       "perfscope report: --percent-limit 200: not in the range 0 to 100"},
  };
  for (const Case& c : cases) {
    auto result = perfscope::testing::run_perfscope(c.argv);
    EXPECT_EQ(result.exit_status, 129) << c.said;
    EXPECT_TRUE(result.err.starts_with(c.said)) << result.err;
    EXPECT_LT(result.err.size(), 200u) << result.err;
  }
}

}  // namespace
