// perf's Python scripts, unmodified, run by `perfscope script -s` over recordings perf made of a
// known workload: the same text as `perf script -s` prints (issue #46). Also perf's param_dict
// and tracepoint arguments key for key, perfscope's own Perf-Trace-Util against perf's, the
// skeleton of -g python, -l, the record and report halves, and the error policy: a traceback
// and exit 1, sys.exit's own status, Ctrl-C ending the walk with trace_end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string perf_path = "/usr/bin/perf";
const std::string perf_scripts = "/usr/lib/perf-core/scripts/python";
const std::string workload = PERFSCOPE_SCRIPT_WORKLOAD_PATH;

std::string why_not() {
  if (::access(perf_path.c_str(), X_OK) != 0) return "perf (linux-perf) is not installed";
  if (::access((perf_scripts + "/stackcollapse.py").c_str(), R_OK) != 0) {
    return "perf's Python scripts are not installed (" + perf_scripts + ")";
  }
  if (!pt::tracefs_available()) return "tracefs is not mounted (tracepoint recordings)";
  auto probe = pt::run_command(
      {perf_path, "record", "-q", "-o", "/dev/null", "-e", "raw_syscalls:sys_enter", "--", "true"});
  if (probe.exit_status != 0) return "perf record of tracepoints fails here: " + probe.err;
  return {};
}

// perf's recordings of the workload, made once: its syscalls and futexes as tracepoints, and
// cpu-clock samples with call chains.
struct Recordings {
  std::string tracepoints = pt::temp_path("script_python_tp.data");
  std::string samples = pt::temp_path("script_python_cg.data");
  std::string problem;
  Recordings() {
    problem = why_not();
    if (!problem.empty()) return;
    auto tp = pt::run_command({perf_path, "record", "-q", "-o", tracepoints, "-e",
                               "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "-e",
                               "syscalls:sys_enter_futex", "-e", "syscalls:sys_exit_futex", "-e",
                               "sched:sched_switch", "--", workload});
    auto cg = pt::run_command({perf_path, "record", "-q", "-g", "-o", samples, "-e",
                               "cpu-clock,page-faults", "-d", "--", workload});
    pt::remove_at_exit(tracepoints);
    pt::remove_at_exit(samples);
    if (tp.exit_status != 0 || cg.exit_status != 0)
      problem = "perf record failed: " + tp.err + cg.err;
  }
};
const Recordings& recordings() {
  static Recordings made;
  return made;
}

// perf's text with the two names perfscope gives otherwise, by design (docs/FOREIGN_FILES.md,
// "Names"): a symbol's default version ("clock_gettime@@GLIBC_2.17": perfscope shows the name)
// and a compatibility alias of an old version that perf can pick for an address
// ("cfree@GLIBC_2.2.5" for free, "pthread_create@GLIBC_2.2.5" for pthread_create).
std::string with_perfscope_names(const std::string& text) {
  static const std::regex default_version(R"(@@[A-Z]+_[0-9.]+)");
  static const std::regex old_free(R"(\bcfree@GLIBC_2\.2\.5\b)");
  static const std::regex old_version(R"(@GLIBC_[0-9.]+\b)");  // pthread_create@GLIBC_2.2.5
  std::string names = std::regex_replace(text, default_version, "");
  names = std::regex_replace(names, old_free, "free");
  return std::regex_replace(names, old_version, "");
}
// perf 6.1 leaves some PLT stubs' names out ("@plt" for libc's __tunable_get_val@plt), which
// perf 6.3 and perfscope give: compared as perf 6.1's, on both sides.
std::string without_plt_names(const std::string& text) {
  static const std::regex stub(R"([A-Za-z0-9_.]+@plt\b)");
  return std::regex_replace(text, stub, "@plt");
}
// Runs of blanks as one: a name perfscope shows without its version is shorter, and a script
// that pads names to a width pads it more.
std::string single_blanks(const std::string& text) {
  static const std::regex blanks(" +");
  static const std::regex leading("(^|\n) ");
  return std::regex_replace(std::regex_replace(text, blanks, " "), leading, "$1");
}

// The two scripts print sorted text (stackcollapse's lines; event_analyzing_sample's rows of one
// count by name), and the renaming above moves names ("cfree@GLIBC_2.2.5" sorts before
// "entry_SYSCALL_64", "free" after it): both sides are compared in the order the scripts give
// the renamed text.
std::string sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string sorted;
  for (const auto& line : lines) sorted += line + "\n";
  return sorted;
}
std::string histogram_ties_sorted(const std::string& text) {
  static const std::regex row(R"(^ *(.*\S) +([0-9]+) +#+ *$)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto count_of = [](const std::string& line, std::string& name) {
    std::smatch match;
    if (!std::regex_match(line, match, row)) return std::string();
    name = match[1];
    return match[2].str();
  };
  std::string name, other;
  for (std::size_t begin = 0; begin < lines.size();) {
    std::string count = count_of(lines[begin], name);
    std::size_t end = begin + 1;
    while (!count.empty() && end < lines.size() && count_of(lines[end], other) == count) ++end;
    std::sort(lines.begin() + begin, lines.begin() + end,
              [&](const std::string& a, const std::string& b) {
                std::string name_a, name_b;
                count_of(a, name_a);
                count_of(b, name_b);
                return name_a < name_b;
              });
    begin = end;
  }
  std::string sorted;
  for (const auto& line : lines) sorted += line + "\n";
  return sorted;
}

pt::CommandResult perf_script(const std::vector<std::string>& words) {
  std::vector<std::string> argv{perf_path, "script"};
  argv.insert(argv.end(), words.begin(), words.end());
  auto result = pt::run_command(argv);
  result.out = without_plt_names(with_perfscope_names(result.out));
  return result;
}
pt::CommandResult our_script(const std::vector<std::string>& words) {
  std::vector<std::string> argv{"script"};
  argv.insert(argv.end(), words.begin(), words.end());
  auto result = pt::run_perfscope(argv);
  pt::expect_no_crash(result);
  result.out = without_plt_names(result.out);
  return result;
}

// Lines that differ (at most `limit`), for a failure message.
std::string first_differences(const std::string& expected, const std::string& actual,
                              std::size_t limit = 5) {
  std::istringstream a(expected), b(actual);
  std::string left, right, text;
  std::size_t line = 0, shown = 0;
  while (shown < limit) {
    bool more_a = static_cast<bool>(std::getline(a, left));
    bool more_b = static_cast<bool>(std::getline(b, right));
    if (!more_a && !more_b) break;
    ++line;
    if (!more_a) left = "<end>";
    if (!more_b) right = "<end>";
    if (left != right) {
      // Around the first character that differs: dict lines are long.
      std::size_t at = 0;
      while (at < left.size() && at < right.size() && left[at] == right[at]) ++at;
      std::size_t from = at > 160 ? at - 160 : 0;
      text += "line " + std::to_string(line) + ", column " + std::to_string(at) +
              ":\n  perf:  " + left.substr(from, 320) + "\n  ours:  " + right.substr(from, 320) +
              "\n";
      ++shown;
    }
  }
  return text;
}

#define SKIP_WITHOUT_RECORDINGS() \
  if (!recordings().problem.empty()) GTEST_SKIP() << recordings().problem

TEST(ScriptPython, ShippedTracepointScriptsPrintPerfsText) {
  SKIP_WITHOUT_RECORDINGS();
  for (const char* script :
       {"syscall-counts", "syscall-counts-by-pid", "failed-syscalls-by-pid", "futex-contention"}) {
    std::string path = perf_scripts + "/" + script + ".py";
    auto perf = perf_script({"-i", recordings().tracepoints, "-s", path});
    auto ours = our_script({"-i", recordings().tracepoints, "-s", path});
    ASSERT_EQ(perf.exit_status, 0) << script << ": " << perf.err;
    ASSERT_EQ(ours.exit_status, 0) << script << ": " << ours.err;
    // Something real was counted: the workload's futexes and failed opens are there.
    EXPECT_GT(ours.out.size(), 200u) << script << ":\n" << ours.out;
    EXPECT_TRUE(ours.out == perf.out) << script << ":\n" << first_differences(perf.out, ours.out);
  }
  auto failed = our_script(
      {"-i", recordings().tracepoints, "-s", perf_scripts + "/failed-syscalls-by-pid.py"});
  EXPECT_NE(failed.out.find("ENOENT"), std::string::npos) << failed.out;
  EXPECT_NE(failed.out.find("script_workload"), std::string::npos) << failed.out;
}

TEST(ScriptPython, OwnPerfTraceUtilPrintsWhatPerfsDoes) {
  SKIP_WITHOUT_RECORDINGS();
  // perfscope's Core, Util and EventClass stand in for perf's where perf is not installed.
  for (const char* script : {"syscall-counts", "failed-syscalls-by-pid", "futex-contention"}) {
    std::string path = perf_scripts + "/" + script + ".py";
    auto perf = perf_script({"-i", recordings().tracepoints, "-s", path});
    auto ours =
        pt::run_command({"env", std::string("PERF_EXEC_PATH=") + PERFSCOPE_OWN_PERF_CORE,
                         PERFSCOPE_CLI_PATH, "script", "-i", recordings().tracepoints, "-s", path});
    ASSERT_EQ(ours.exit_status, 0) << script << ": " << ours.err;
    EXPECT_TRUE(ours.out == perf.out) << script << ":\n" << first_differences(perf.out, ours.out);
  }
}

TEST(ScriptPython, StackcollapseAndEventAnalyzingSamplePrintPerfsText) {
  SKIP_WITHOUT_RECORDINGS();
  std::string stackcollapse = perf_scripts + "/stackcollapse.py";
  auto perf = perf_script({"-i", recordings().samples, "-s", stackcollapse});
  auto ours = our_script({"-i", recordings().samples, "-s", stackcollapse});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("script_workload;"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("spin"), std::string::npos) << ours.out;
  EXPECT_TRUE(sorted_lines(ours.out) == sorted_lines(perf.out))
      << first_differences(sorted_lines(perf.out), sorted_lines(ours.out));
  // Its own options reach it: sys.argv after "--" (before it, perf reads options as its own).
  perf = perf_script({"-i", recordings().samples, "-s", stackcollapse, "--", "--include-tid"});
  ours = our_script({"-i", recordings().samples, "-s", stackcollapse, "--", "--include-tid"});
  EXPECT_NE(ours.out.find("script_workload-"), std::string::npos) << ours.out;
  EXPECT_TRUE(sorted_lines(ours.out) == sorted_lines(perf.out))
      << first_differences(sorted_lines(perf.out), sorted_lines(ours.out));

  // event_analyzing_sample builds its SQLite database in /dev/shm/perf.db (and adds to one
  // that is there).
  std::string analyzing = perf_scripts + "/event_analyzing_sample.py";
  std::filesystem::remove("/dev/shm/perf.db");
  perf = perf_script({"-i", recordings().samples, "-s", analyzing});
  std::filesystem::remove("/dev/shm/perf.db");
  ours = our_script({"-i", recordings().samples, "-s", analyzing});
  std::filesystem::remove("/dev/shm/perf.db");
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("records in gen_events table"), std::string::npos) << ours.out;
  std::string expected = histogram_ties_sorted(single_blanks(perf.out));
  std::string actual = histogram_ties_sorted(single_blanks(ours.out));
  EXPECT_TRUE(actual == expected) << first_differences(expected, actual);
}

// Every key and value perf hands process_event, a tracepoint handler and trace_unhandled, and
// the flag tables perf defines through Core; perf's kernel map end (which it stretches past
// _etext from its own kallsyms reading) is the one value left out.
TEST(ScriptPython, HandlersReceivePerfsArguments) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir dir;
  std::string probe = dir.write("probe.py", R"(import os, sys
sys.path.append(os.environ['PERF_EXEC_PATH'] + '/scripts/python/Perf-Trace-Util/lib/Perf/Trace')
from perf_trace_context import *
from Core import *
print("argv", sys.argv[1:], os.path.basename(sys.path[0]) == os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0]))))
seen = {}
def shown(d):
    d = dict(d)
    d.pop('attr', None)
    return d
def keep(name):
    seen[name] = seen.get(name, 0) + 1
    return seen[name] <= 25
def trace_begin():
    print("begin", type(perf_script_context).__name__)
def process_event(param_dict):
    if keep(param_dict['ev_name']):
        print(shown(param_dict))
def sched__sched_switch(event_name, context, common_cpu, common_secs, common_nsecs,
        common_pid, common_comm, common_callchain, prev_comm, prev_pid, prev_prio,
        prev_state, next_comm, next_pid, next_prio, perf_sample_dict):
    if keep(event_name):
        args = dict(locals())
        args.pop('context')
        args['perf_sample_dict'] = shown(perf_sample_dict)
        print(args, flag_str(event_name, 'prev_state', prev_state), common_pc(context),
              common_flags(context), common_lock_depth(context))
def syscalls__sys_enter_futex(*args):
    if keep('futex'):
        print([arg for i, arg in enumerate(args) if i != 1])
def trace_unhandled(event_name, context, fields):
    if keep(event_name):
        print(event_name, fields)
def plain(d):
    return {k: plain(v) for k, v in d.items()} if isinstance(d, dict) else d
def trace_end():
    print("tables", plain(flag_fields), plain(symbolic_fields), seen)
)");
  // Left out of the comparison, each a documented difference (docs/USER_GUIDE.md, "perf's
  // Python scripts"): perf's kernel map end (it stretches the map past _etext from its own
  // reading of kallsyms), the end perf gives a symbol of size 0 (the next symbol's start,
  // where perfscope ends it with its section), and which of two data symbols at one address
  // names it (__TMC_END__ or completed.0 in clang's build of the workload: perf's pick follows
  // the order its tree holds them in).
  auto comparable = [](std::string text) {
    static const std::regex kernel_end(R"('dso_map_end': 1844674407[0-9]+)");
    static const std::regex symbol_end(R"('end': [0-9]+)");
    text = std::regex_replace(text, kernel_end, "'dso_map_end': KERNEL_MAP_END");
    static const std::regex data_symbol(R"('addr_symbol': '[^']*')");
    text = std::regex_replace(text, symbol_end, "'end': END");
    return std::regex_replace(text, data_symbol, "'addr_symbol': DATA");
  };
  for (const std::string& file : {recordings().samples, recordings().tracepoints}) {
    auto perf = perf_script({"-i", file, "-s", probe, "a1", "--b2"});
    auto ours = our_script({"-i", file, "-s", probe, "a1", "--b2"});
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    std::string expected = comparable(perf.out);
    std::string actual = comparable(ours.out);
    EXPECT_NE(actual.find("argv ['a1', '--b2'] True"), std::string::npos) << actual;
    if (file == recordings().samples) {
      EXPECT_NE(actual.find("'callchain': [{'ip'"), std::string::npos) << actual;
      EXPECT_NE(actual.find("'addr_correlates_sym': True"), std::string::npos) << actual;
      EXPECT_NE(actual.find("'addr_symbol': DATA, 'addr_symoff': "), std::string::npos) << actual;
    } else {
      EXPECT_NE(actual.find("'prev_state': 1"), std::string::npos) << actual;
    }
    EXPECT_TRUE(actual == expected) << file << ":\n" << first_differences(expected, actual);
  }
}

TEST(ScriptPython, GeneratedSkeletonIsPerfsAndRuns) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir perf_dir, our_dir;
  auto perf = pt::run_command_in(
      perf_dir.path(), {perf_path, "script", "-i", recordings().tracepoints, "-g", "python"});
  auto ours = pt::run_perfscope_in(our_dir.path(),
                                   {"script", "-i", recordings().tracepoints, "-g", "python"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.err.find("generated Python script: perf-script.py"), std::string::npos);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string skeleton = read(our_dir.path() + "/perf-script.py");
  EXPECT_NE(skeleton.find("def sched__sched_switch("), std::string::npos) << skeleton;
  EXPECT_NE(skeleton.find("flag_str(\"sched__sched_switch\", \"prev_state\", prev_state)"),
            std::string::npos);
  EXPECT_EQ(skeleton, read(perf_dir.path() + "/perf-script.py"));
  // The skeleton runs: a handler line per event, as perf's run of it prints.
  auto perf_run =
      perf_script({"-i", recordings().tracepoints, "-s", perf_dir.path() + "/perf-script.py"});
  auto our_run =
      our_script({"-i", recordings().tracepoints, "-s", our_dir.path() + "/perf-script.py"});
  ASSERT_EQ(our_run.exit_status, 0) << our_run.err;
  EXPECT_NE(our_run.out.find("syscalls__sys_enter_futex"), std::string::npos);
  EXPECT_TRUE(our_run.out == perf_run.out) << first_differences(perf_run.out, our_run.out);
  // A recording of other events gets a process_event that runs too (perf's skeleton has none).
  ours =
      pt::run_perfscope_in(our_dir.path(), {"script", "-i", recordings().samples, "-g", "python"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  our_run = our_script({"-i", recordings().samples, "-s", our_dir.path() + "/perf-script.py"});
  ASSERT_EQ(our_run.exit_status, 0) << our_run.err;
  EXPECT_NE(our_run.out.find("cpu-clock"), std::string::npos) << our_run.out;
}

TEST(ScriptPython, ListAndTheRecordAndReportHalves) {
  SKIP_WITHOUT_RECORDINGS();
  auto perf = perf_script({"-l"});
  auto ours = our_script({"-l"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("syscall-counts [comm]"), std::string::npos) << ours.out;
  EXPECT_EQ(ours.out, perf.out);

  // record NAME runs bin/NAME-record, whose `perf record` is perfscope's; report NAME reads it.
  pt::TempDir dir;
  auto recorded =
      pt::run_perfscope_in(dir.path(), {"script", "record", "syscall-counts", "--", workload});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  ASSERT_TRUE(std::filesystem::exists(dir.path() + "/perf.data")) << recorded.err;
  auto our_report = pt::run_perfscope_in(dir.path(), {"script", "report", "syscall-counts"});
  auto perf_report =
      pt::run_command_in(dir.path(), {perf_path, "script", "report", "syscall-counts"});
  ASSERT_EQ(our_report.exit_status, 0) << our_report.err;
  EXPECT_NE(our_report.out.find("syscall events:"), std::string::npos) << our_report.out;
  EXPECT_TRUE(our_report.out == perf_report.out)
      << first_differences(perf_report.out, our_report.out);

  auto unknown = pt::run_perfscope_in(dir.path(), {"script", "report", "no-such-script"});
  EXPECT_EQ(unknown.exit_status, 255);
  EXPECT_NE(unknown.err.find("perfscope script -l"), std::string::npos) << unknown.err;
}

TEST(ScriptPython, ARaiseInTheThirdEventPrintsTheTracebackAndExitsOne) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir dir;
  std::string script = dir.write("raise3.py", R"(n = 0
def trace_begin():
    print("begin")
def process_event(param_dict):
    global n
    n += 1
    print("event", n)
    if n == 3:
        raise ValueError("boom in the third event")
def trace_end():
    print("end")
)");
  auto result = our_script({"-i", recordings().samples, "-s", script});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_EQ(result.out, "begin\nevent 1\nevent 2\nevent 3\n");  // no trace_end
  EXPECT_NE(result.err.find("Traceback (most recent call last):"), std::string::npos);
  EXPECT_NE(result.err.find("ValueError: boom in the third event"), std::string::npos);
  EXPECT_NE(result.err.find("raised at the sample of time"), std::string::npos) << result.err;
  // The traceback and the sentence are the last things printed.
  EXPECT_TRUE(result.err.ends_with("run it again\n")) << result.err;

  std::string syntax = dir.write("syntax.py", "def process_event(param_dict:\n");
  result = our_script({"-i", recordings().samples, "-s", syntax});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("SyntaxError"), std::string::npos) << result.err;

  std::string exits = dir.write("exit7.py", "import sys\ndef process_event(d):\n  sys.exit(7)\n");
  result = our_script({"-i", recordings().samples, "-s", exits});
  EXPECT_TRUE(result.exit_status == 7) << result.err;

  result = our_script({"-i", recordings().samples, "-s", dir.path() + "/missing.py"});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("missing.py"), std::string::npos) << result.err;
  result = our_script({"-i", recordings().samples, "-s", dir.write("x.pl", "1;\n")});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("Perl scripts are not supported"), std::string::npos) << result.err;
}

TEST(ScriptPython, CtrlCEndsTheWalkWithTraceEndOnce) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir dir;
  std::string script = dir.write("slow.py", R"(import sys, time
n = 0
def process_event(param_dict):
    global n
    n += 1
    if n == 1:
        print("first", flush=True)
    time.sleep(0.05)
def trace_end():
    print("trace_end after", n, "events", "stdin", sys.stdin.read() if sys.stdin else None)
)");
  pt::BackgroundCommand running(
      {PERFSCOPE_CLI_PATH, "script", "-i", recordings().samples, "-s", script});
  ASSERT_TRUE(running.wait_for_output("first", 30000)) << running.out() << running.err();
  running.signal(SIGINT);
  auto result = running.wait(30000);
  EXPECT_TRUE(result.exit_status == 0) << result.err;
  std::smatch match;
  std::string out = result.out;
  ASSERT_TRUE(std::regex_search(out, match, std::regex(R"(trace_end after (\d+) events)"))) << out;
  EXPECT_EQ(out.find("trace_end", match.position(0) + 1), std::string::npos) << out;
}

}  // namespace

namespace {

// Every table of an SQLite file, rows sorted, as text (Debian's python3: its sqlite3).
std::string sqlite_tables(const std::string& file) {
  auto dumped = pt::run_command(
      {"/usr/bin/python3", "-c",
       "import sqlite3, sys\n"
       "c = sqlite3.connect(sys.argv[1])\n"
       "for (t,) in c.execute(\"select name from sqlite_master where type='table' order by "
       "name\"):\n"
       "    rows = c.execute('select * from ' + t).fetchall()\n"
       "    print(t, len(rows), 'rows')\n"
       "    for r in sorted(rows, key=repr): print('  ', r)\n",
       file});
  EXPECT_EQ(dumped.exit_status, 0) << dumped.err;
  return dumped.out;
}

// A symbol without a size ends with its section in perfscope, at the next symbol in perf
// (docs/USER_GUIDE.md): the one column of the symbols table compared apart.
// And the two data symbols at the end of the workload's .data in clang's build, __TMC_END__ and
// completed.0: which names the address (a stack walked through data) follows the order perf's
// symbol tree keeps them in; perfscope takes the sized one.
std::string without_symbol_ends(const std::string& text) {
  static const std::regex symbol_row(R"(\((\d+), (\d+), (-?\d+), -?\d+, (\d), )");
  static const std::regex tmc_end(R"([01], '?(__TMC_END__|completed\.0)\b)");
  static const std::regex tmc_end_row(R"(\|[01]\|(__TMC_END__|completed\.0)$)",
                                      std::regex::ECMAScript | std::regex::multiline);
  std::string rows = std::regex_replace(text, symbol_row, "($1, $2, $3, END, $4, ");
  // Which alias of one address names it is the names tests' to check (perf can pick an old
  // version's alias: __exp_finite for libm's exp resolver): here the rows and their ids.
  static const std::regex symbol_name(R"(\((\d+), (\d+), (-?\d+), END, \d, '[^']*'\))");
  static const std::regex symbol_name_row(R"(^(   \d+\|\d+\|-?\d+\|END)\|[0-9B]\|.*$)",
                                          std::regex::ECMAScript | std::regex::multiline);
  rows = std::regex_replace(rows, symbol_name, "($1, $2, $3, END, NAME)");
  rows = std::regex_replace(rows, symbol_name_row, "$1|NAME");
  rows = std::regex_replace(rows, tmc_end, "B, 'END_OF_DATA");
  return std::regex_replace(rows, tmc_end_row, "|B|END_OF_DATA");
}

std::string why_no_pyside() {
  auto probe = pt::run_command({"/usr/bin/python3", "-c", "import PySide2.QtSql"});
  if (probe.exit_status != 0) {
    return "PySide2's QtSql is not installed (apt-get install python3-pyside2.qtsql): " + probe.err;
  }
  return {};
}

TEST(ScriptPython, ExportToSqliteWritesPerfsTables) {
  SKIP_WITHOUT_RECORDINGS();
  if (std::string why = why_no_pyside(); !why.empty()) GTEST_SKIP() << why;
  // cpu-clock with call chains: the call paths too (perf's script wants "calls" with
  // "callchains"; a cpu-clock recording has no calls to export in either tool).
  pt::TempDir dir;
  std::string recording = dir.path() + "/cg.data";
  auto recorded = pt::run_command(
      {perf_path, "record", "-q", "-g", "-o", recording, "-e", "cpu-clock", "--", workload});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  const std::string script = perf_scripts + "/export-to-sqlite.py";
  for (const std::vector<std::string>& columns :
       {std::vector<std::string>{}, std::vector<std::string>{"all", "calls", "callchains"}}) {
    std::string perfs = dir.path() + "/perf.db", ours = dir.path() + "/ours.db";
    std::filesystem::remove(perfs);
    std::filesystem::remove(ours);
    std::vector<std::string> perf_words{"-i", recording, "-s", script, perfs};
    std::vector<std::string> our_words{"-i", recording, "-s", script, ours};
    perf_words.insert(perf_words.end(), columns.begin(), columns.end());
    our_words.insert(our_words.end(), columns.begin(), columns.end());
    auto perf = perf_script(perf_words);
    auto result = our_script(our_words);
    ASSERT_EQ(perf.exit_status, 0) << perf.err;
    ASSERT_EQ(result.exit_status, 0) << result.err;
    std::string expected = without_symbol_ends(with_perfscope_names(sqlite_tables(perfs)));
    std::string actual = without_symbol_ends(sqlite_tables(ours));
    EXPECT_NE(actual.find("samples "), std::string::npos) << actual;
    EXPECT_EQ(actual.find("samples 1 rows"), std::string::npos) << actual;  // more than id 0
    if (!columns.empty()) {
      EXPECT_NE(actual.find("call_paths "), std::string::npos) << actual;
      EXPECT_EQ(actual.find("call_paths 1 rows"), std::string::npos) << actual;
    }
    EXPECT_TRUE(actual == expected) << first_differences(expected, actual);
  }
}

// A PostgreSQL server of its own, in a temporary directory on a Unix socket (as `nobody` when
// the test runs as root: postgres refuses root), stopped when the test ends.
class PostgresServer {
 public:
  explicit PostgresServer(const std::string& dir) : dir_(dir) {
    const std::string bin = "/usr/lib/postgresql/15/bin";
    if (::access((bin + "/initdb").c_str(), X_OK) != 0) {
      problem_ = "PostgreSQL 15 is not installed (apt-get install postgresql)";
      return;
    }
    std::filesystem::create_directories(dir + "/socket");
    std::vector<std::string> as_user;
    if (::geteuid() == 0) {
      as_user = {"runuser", "-u", "nobody", "--"};
      pt::run_command({"chown", "-R", "nobody", dir});
    }
    auto run = [as_user](std::vector<std::string> words) {
      words.insert(words.begin(), as_user.begin(), as_user.end());
      return pt::run_command(words);
    };
    auto made = run({bin + "/initdb", "-D", dir + "/data", "-U", "postgres", "--auth=trust"});
    if (made.exit_status != 0) {
      problem_ = "initdb failed: " + made.err;
      return;
    }
    auto started = run({bin + "/pg_ctl", "-D", dir + "/data", "-l", dir + "/server.log", "-o",
                        "-k " + dir + "/socket -c listen_addresses=''", "-w", "start"});
    if (started.exit_status != 0) {
      problem_ = "the server did not start: " + started.err + started.out;
      return;
    }
    stop_ = [run, bin, dir] {
      run({bin + "/pg_ctl", "-D", dir + "/data", "-m", "immediate", "stop"});
    };
  }
  ~PostgresServer() {
    if (stop_) stop_();
  }
  const std::string& problem() const { return problem_; }
  std::string socket() const { return dir_ + "/socket"; }
  // Every table of database `name`, rows sorted, as text.
  std::string tables(const std::string& name) const {
    auto listed =
        pt::run_command({"psql", "-h", socket(), "-U", "postgres", "-d", name, "-At", "-c",
                         "select tablename from pg_tables where schemaname='public' "
                         "order by tablename"});
    EXPECT_EQ(listed.exit_status, 0) << listed.err;
    std::string text;
    std::istringstream names(listed.out);
    for (std::string table; std::getline(names, table);) {
      auto rows = pt::run_command({"psql", "-h", socket(), "-U", "postgres", "-d", name, "-At",
                                   "-c", "select * from " + table + " order by 1"});
      std::vector<std::string> lines;
      std::istringstream in(rows.out);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      std::sort(lines.begin(), lines.end());
      text += table + " " + std::to_string(lines.size()) + " rows\n";
      for (const std::string& line : lines) text += "   " + line + "\n";
    }
    return text;
  }

 private:
  std::string dir_, problem_;
  std::function<void()> stop_;
};

TEST(ScriptPython, ExportToPostgresqlFillsARealServerAsPerfDoes) {
  SKIP_WITHOUT_RECORDINGS();
  if (std::string why = why_no_pyside(); !why.empty()) GTEST_SKIP() << why;
  pt::TempDir dir;
  ::chmod(dir.path().c_str(), 0777);
  PostgresServer server(dir.path() + "/pg");
  if (!server.problem().empty()) GTEST_SKIP() << server.problem();
  const std::string script = perf_scripts + "/export-to-postgresql.py";
  // The script writes its copy files under the working directory, connects through libpq.
  std::vector<std::string> environment{"env", "PGHOST=" + server.socket(), "PGUSER=postgres"};
  auto in_dir = [&](std::vector<std::string> words) {
    words.insert(words.begin(), environment.begin(), environment.end());
    return pt::run_command_in(dir.path(), words);
  };
  // cpu-clock with call chains (page faults' data addresses: see the sqlite test).
  std::string recording = dir.path() + "/cg.data";
  auto recorded = pt::run_command(
      {perf_path, "record", "-q", "-g", "-o", recording, "-e", "cpu-clock", "--", workload});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto perf = in_dir({perf_path, "script", "-i", recording, "-s", script, "perf_db"});
  auto ours = in_dir({PERFSCOPE_CLI_PATH, "script", "-i", recording, "-s", script, "ours_db"});
  ASSERT_EQ(perf.exit_status, 0) << perf.err;
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  pt::expect_no_crash(ours);
  std::string expected = without_symbol_ends(with_perfscope_names(server.tables("perf_db")));
  std::string actual = without_symbol_ends(server.tables("ours_db"));
  // PostgreSQL prints rows with '|' between columns: the symbol end is the fourth.
  static const std::regex symbol_end(R"(^(   \d+\|\d+\|-?\d+\|)-?\d+(\|[0-9B]\|))",
                                     std::regex::ECMAScript | std::regex::multiline);
  expected = without_symbol_ends(std::regex_replace(expected, symbol_end, "$1END$2"));
  actual = without_symbol_ends(std::regex_replace(actual, symbol_end, "$1END$2"));
  EXPECT_NE(actual.find("samples "), std::string::npos) << actual;
  EXPECT_EQ(actual.find("samples 1 rows"), std::string::npos) << actual;
  EXPECT_TRUE(actual == expected) << first_differences(expected, actual);
}

}  // namespace

namespace {

// perf stat record's files: stat__EVENT(cpu, thread, time, value, enabled, running) at each
// round and stat__interval(time), with perf script's counts (the round's difference, scaled,
// added up or per CPU).
TEST(ScriptPython, StatHandlersGetPerfStatRecordsCounts) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir dir;
  std::string script = dir.write("stat.py", R"(def show(name):
    def handler(*arguments):
        print(name, arguments)
    return handler
for event in ["task-clock", "context-switches", "page-faults"]:
    globals()["stat__" + event] = show(event)
def stat__interval(time):
    print("interval", time)
)");
  const std::vector<std::vector<std::string>> recordings_made = {
      {"-e", "task-clock,context-switches,page-faults", "--", workload},
      {"-a", "-A", "-I", "100", "-e", "task-clock,context-switches", "--", "sleep", "0.25"},
  };
  for (const auto& options : recordings_made) {
    std::string file = dir.path() + "/stat.data";
    std::vector<std::string> record{perf_path, "stat", "record", "-o", file};
    record.insert(record.end(), options.begin(), options.end());
    auto recorded = pt::run_command(record);
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    auto perf = perf_script({"-i", file, "-s", script});
    auto ours = our_script({"-i", file, "-s", script});
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    EXPECT_NE(ours.out.find("task-clock ("), std::string::npos) << ours.out;
    EXPECT_NE(ours.out.find("interval "), std::string::npos) << ours.out;
    EXPECT_TRUE(ours.out == perf.out) << first_differences(perf.out, ours.out);
  }
}

}  // namespace

namespace {

// perf_trace_context's perf_sample_insn: the bytes of the one instruction at the sample's ip,
// decoded as perf decodes it (None where no code is read: kernel samples).
TEST(ScriptPython, SampleInstructionsAreTheBytesPerfGives) {
  SKIP_WITHOUT_RECORDINGS();
  pt::TempDir dir;
  std::string script = dir.write("insn.py", R"(from perf_trace_context import *
n = 0
def process_event(param_dict):
    global n
    n += 1
    if n <= 60 and param_dict['ev_name'] == 'cpu-clock':
        print(param_dict['sample']['ip'], perf_sample_insn(perf_script_context))
)");
  auto perf = perf_script({"-i", recordings().samples, "-s", script});
  auto ours = our_script({"-i", recordings().samples, "-s", script});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find(" b'"), std::string::npos) << ours.out;  // some user code was read
  EXPECT_TRUE(ours.out == perf.out) << first_differences(perf.out, ours.out);
}

}  // namespace
