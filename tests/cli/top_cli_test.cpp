// `perfscope top` end to end: text snapshots (--batch) of the known-answer workload (leaves at
// 60/30/10 %, in that order, with their callers under -g), names kept after the process exits,
// option errors; and the live screen driven through tmux: the rows, the call-graph view (g), the
// symbol filter (s), q, and the terminal given back in cooked mode after SIGTERM.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/sys/kernel_files.hpp"
#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string cli = PERFSCOPE_CLI_PATH;

// The symbol rows of one text snapshot or screen: "   60.12%  known_answer_fp  [.] leaf_60".
std::map<std::string, double> shares_of(const std::string& text) {
  static const std::regex row(R"(^\s+([0-9.]+)%\s+(?:[0-9.]+%\s+)?(\S+)\s+\[[.k]\] (\S+)\s*$)");
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) out[match[3]] += std::stod(match[1]);
  }
  return out;
}

// The text of the last snapshot of --batch output.
std::string last_snapshot(const std::string& out) {
  auto at = out.rfind("perfscope top:");
  return at == std::string::npos ? std::string() : out.substr(at);
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

void expect_known_order(const std::string& text) {
  auto a = text.find("[.] leaf_60"), b = text.find("[.] leaf_30"), c = text.find("[.] leaf_10");
  ASSERT_NE(a, std::string::npos) << text;
  ASSERT_NE(b, std::string::npos) << text;
  ASSERT_NE(c, std::string::npos) << text;
  EXPECT_LT(a, b) << text;
  EXPECT_LT(b, c) << text;
  auto shares = shares_of(text);
  EXPECT_NEAR(shares["leaf_60"], 60.0, 5.0) << text;
  EXPECT_NEAR(shares["leaf_30"], 30.0, 5.0) << text;
  EXPECT_NEAR(shares["leaf_10"], 10.0, 5.0) << text;
}

TEST(TopCliTest, BatchSnapshotsShowTheKnownSharesInOrder) {
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  ASSERT_TRUE(workload.started());
  auto result = pt::run_perfscope({"top", "-p", std::to_string(workload.pid()), "-e", "cpu-clock",
                                   "-F", "4000", "--batch", "3", "-d", "1", "--rows", "8"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(count_of(result.out, "perfscope top:"), 3u) << result.out;
  EXPECT_NE(result.out.find("snapshot 3 of 3"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[cpu-clock 4000 Hz]"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("(pid " + std::to_string(workload.pid()) + ")"), std::string::npos);
  EXPECT_NE(result.out.find("  Overhead  Shared Object"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("lost: 0"), std::string::npos) << result.out;
  expect_known_order(last_snapshot(result.out));
  // Each snapshot holds at most --rows rows.
  EXPECT_LE(shares_of(last_snapshot(result.out)).size(), 8u);
}

// perf top's -E/--entries (rows) and --show-nr-samples: with -z (no decay) each row's samples
// are in the proportions of its share.
TEST(TopCliTest, EntriesAndSamplesColumnAsPerfTop) {
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  ASSERT_TRUE(workload.started());
  auto result =
      pt::run_perfscope({"top", "-p", std::to_string(workload.pid()), "-e", "cpu-clock", "--batch",
                         "1", "-d", "1", "-z", "-E", "3", "--show-nr-samples"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("  Overhead       Samples  Shared Object"), std::string::npos)
      << result.out;
  std::map<std::string, std::pair<double, double>> rows;  // symbol: share, samples
  std::istringstream lines(last_snapshot(result.out));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string share, samples, dso, mark, symbol;
    if ((words >> share >> samples >> dso >> mark >> symbol) && share.ends_with("%")) {
      rows[symbol] = {std::stod(share), std::stod(samples)};
    }
  }
  ASSERT_EQ(rows.size(), 3u) << result.out;  // -E 3
  ASSERT_TRUE(rows.count("leaf_60") && rows.count("leaf_30")) << result.out;
  EXPECT_GT(rows["leaf_60"].second, 100.0) << result.out;
  EXPECT_NEAR(rows["leaf_60"].second / rows["leaf_30"].second,
              rows["leaf_60"].first / rows["leaf_30"].first, 0.01)
      << result.out;
}

// --switch-on: nothing until a sample of that event (the known answer never calls getppid);
// --switch-off on it: everything, the switch never turning.
TEST(TopCliTest, SwitchOnAndOffAsPerfTop) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "no tracefs for the switching tracepoint";
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  ASSERT_TRUE(workload.started());
  const std::string never = "syscalls:sys_enter_getppid";
  auto top = [&](const char* option) {
    auto result = pt::run_perfscope({"top", "-p", std::to_string(workload.pid()), "-e", "cpu-clock",
                                     "-e", never, "--batch", "1", "-d", "1", "-z", option, never});
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return last_snapshot(result.out);
  };
  EXPECT_EQ(top("--switch-on").find("leaf_60"), std::string::npos);
  EXPECT_NE(top("--switch-off").find("leaf_60"), std::string::npos);
  auto unknown = pt::run_perfscope({"top", "-p", std::to_string(workload.pid()), "--batch", "1",
                                    "--switch-on", "no-such-event"});
  EXPECT_NE(unknown.err.find("--switch-on no-such-event: there is no such event"),
            std::string::npos)
      << unknown.err;
}

TEST(TopCliTest, CallGraphShowsEachLeafsCaller) {
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  ASSERT_TRUE(workload.started());
  auto result =
      pt::run_perfscope({"top", "-g", "--no-children", "-p", std::to_string(workload.pid()), "-e",
                         "cpu-clock", "--batch", "2", "-d", "1", "--rows", "3"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::string last = last_snapshot(result.out);
  expect_known_order(last);
  for (std::string share : {"60", "30", "10"}) {
    // The first caller line under the leaf's row: its own work_ function, nearly always.
    auto row = last.find("[.] leaf_" + share + "\n");
    ASSERT_NE(row, std::string::npos) << last;
    std::string next = last.substr(row, last.find('\n', last.find('\n', row) + 1) - row);
    std::smatch match;
    ASSERT_TRUE(std::regex_search(next, match, std::regex(R"(--([0-9.]+)%-- \[\.\] (\S+))")))
        << next;
    EXPECT_EQ(match[2], "work_" + share) << next;
    EXPECT_GT(std::stod(match[1]), 90.0) << next;
  }
}

TEST(TopCliTest, FunctionsOfAProcessThatExitedStayNamed) {
  if (!pt::running_as_root()) GTEST_SKIP() << "system-wide top needs root or CAP_PERFMON";
  pt::BackgroundCommand top({cli, "top", "-a", "-e", "cpu-clock", "--batch", "3", "-d", "2",
                             "--rows", "0", "--sort", "comm,dso,sym", "--symbol-filter", "leaf_"});
  ASSERT_TRUE(top.started());
  // After the first snapshot: top has named what ran at its start (slow in a sanitizer build,
  // whose buffers may overflow meanwhile on a busy machine; the losses are in the header).
  ASSERT_TRUE(top.wait_for_output("snapshot 1 of 3", 60000)) << top.out() << top.err();
  auto workload = pt::run_command({known_answer_fp, "150"});
  ASSERT_EQ(workload.exit_status, 0);
  // The workload has exited before the last snapshot.
  EXPECT_EQ(count_of(top.out(), "snapshot 3 of 3"), 0u) << top.out();
  auto result = top.wait(60000);
  ASSERT_FALSE(top.timed_out());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  // The last snapshot is taken after the workload exited: its rows decay but keep their names.
  std::string last = last_snapshot(result.out);
  EXPECT_TRUE(
      std::regex_search(last, std::regex(R"(known_answer_fp\s+known_answer_fp\s+\[\.\] leaf_60)")))
      << result.out;
}

// As an unprivileged user (created here, as security_test does) at perf_event_paranoid 2: the
// user's own process in user space only, said in the header; the whole machine refused with
// the fix.
TEST(TopCliTest, UnprivilegedUserSeesOwnProcessInUserSpace) {
  if (!pt::running_as_root()) GTEST_SKIP() << "creating and becoming another user needs root";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "util-linux setpriv is missing";
  auto paranoid = perfscope::sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) GTEST_SKIP() << "perf_event_paranoid is below 2 here";
  const std::string user = "perfscope-unpriv";
  if (::getpwnam(user.c_str()) == nullptr) {
    auto added = pt::run_command(
        {"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user});
    if (added.exit_status != 0 && added.exit_status != 9) GTEST_SKIP() << added.err;
  }
  const passwd* entry = ::getpwnam(user.c_str());
  ASSERT_NE(entry, nullptr);
  std::vector<std::string> as_user{"/usr/bin/setpriv",
                                   "--reuid=" + std::to_string(entry->pw_uid),
                                   "--regid=" + std::to_string(entry->pw_gid),
                                   "--clear-groups",
                                   "--inh-caps=-all",
                                   "/bin/sh",
                                   "-c",
                                   "\"$1\" 100000 >/dev/null & shift; \"$@\" -p $!; s=$?; kill $!; "
                                   "exit $s",
                                   "sh",
                                   known_answer_fp,
                                   cli,
                                   "top",
                                   "-e",
                                   "cpu-clock",
                                   "--batch",
                                   "2",
                                   "-d",
                                   "1"};
  auto own = pt::run_command(as_user);
  if (own.exit_status != 0 && own.err.find("Permission denied") != std::string::npos &&
      own.err.find("perfscope") == std::string::npos) {
    GTEST_SKIP() << "the user cannot run the binaries under test: " << own.err;
  }
  ASSERT_EQ(own.exit_status, 0) << own.err;
  EXPECT_NE(own.out.find("user space only: kernel.perf_event_paranoid is"), std::string::npos)
      << own.out;
  EXPECT_NE(own.out.find("[cpu-clock:u 4000 Hz]"), std::string::npos) << own.out;
  EXPECT_EQ(own.out.find("[k] "), std::string::npos) << own.out;
  expect_known_order(last_snapshot(own.out));
  std::vector<std::string> machine(as_user.begin(), as_user.begin() + 5);
  machine.insert(machine.end(), {cli, "top", "--batch", "1"});
  auto refused = pt::run_command(machine);
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_NE(refused.err.find("perf_event_paranoid"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("CAP_PERFMON"), std::string::npos) << refused.err;
}

// doctor says what top needs: the whole machine as root, and a terminal type terminfo knows.
TEST(TopCliTest, DoctorChecksWhatTopNeeds) {
  auto top_check = [](const std::string& term) {
    auto result = pt::run_command({"/usr/bin/env", "TERM=" + term, cli, "doctor", "--json"});
    EXPECT_EQ(result.exit_status, 0) << result.err;
    auto document = nlohmann::json::parse(result.out);
    for (const auto& check : document.at("checks")) {
      if (check.at("id") == "top") return check;
    }
    ADD_FAILURE() << "no top check: " << result.out;
    return nlohmann::json::object();
  };
  auto unknown = top_check("no-such-terminal");
  EXPECT_EQ(unknown.value("status", ""), "warn");
  EXPECT_NE(unknown.value("value", "").find("'no-such-terminal' unknown to terminfo"),
            std::string::npos)
      << unknown.dump();
  EXPECT_NE(unknown.value("fix", "").find("--stdio"), std::string::npos) << unknown.dump();
  auto known = top_check("xterm");
  EXPECT_NE(known.value("value", "").find("terminal 'xterm' known to terminfo"), std::string::npos)
      << known.dump();
  if (pt::running_as_root()) {
    EXPECT_EQ(known.value("status", ""), "ok") << known.dump();
    EXPECT_NE(known.value("value", "").find("the whole machine"), std::string::npos);
  }
}

TEST(TopCliTest, BadOptionsSayWhatToFix) {
  auto sort = pt::run_perfscope({"top", "--stdio", "--sort", "dso,cycles"});
  EXPECT_NE(sort.exit_status, 0);
  EXPECT_NE(sort.err.find("unknown key 'cycles'"), std::string::npos) << sort.err;
  auto children = pt::run_perfscope({"top", "--batch", "1", "--children"});
  EXPECT_NE(children.exit_status, 0);
  EXPECT_NE(children.err.find("add -g"), std::string::npos) << children.err;
  auto targets = pt::run_perfscope({"top", "--batch", "1", "-p", "1", "-a"});
  EXPECT_NE(targets.exit_status, 0);
  EXPECT_NE(targets.err.find("choose one target"), std::string::npos) << targets.err;
  auto delay = pt::run_perfscope({"top", "--batch", "1", "-d", "0"});
  EXPECT_EQ(delay.exit_status, 129);
  EXPECT_NE(delay.err.find("perfscope top:"), std::string::npos) << delay.err;
  auto help = pt::run_perfscope({"top", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("perfscope top -g -F 999"), std::string::npos) << help.out;
}

// A tmux server of this test's own, with one pane running sh.
class Tmux {
 public:
  // A socket per server: the previous test's server may still be going away when the next
  // starts, and a new-session that reaches a dying server fails.
  Tmux()
      : socket_("perfscope_top_test_" + std::to_string(::getpid()) + "_" +
                std::to_string(next_server_++)) {
    auto started = tmux({"-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "30", "env",
                         "PS1=READY$ ", "TERM=screen", "sh"});
    ok_ = started.exit_status == 0;
    error_ = started.err;
  }
  ~Tmux() { tmux({"kill-server"}); }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  pt::CommandResult tmux(std::vector<std::string> arguments) const {
    arguments.insert(arguments.begin(), {"tmux", "-L", socket_});
    return pt::run_command(arguments);
  }
  void keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> arguments{"send-keys", "-t", "0"};
    arguments.insert(arguments.end(), keys.begin(), keys.end());
    tmux(arguments);
  }
  std::string screen() const { return tmux({"capture-pane", "-p", "-t", "0"}).out; }
  std::string query(const std::string& format) const {
    std::string out = tmux({"display-message", "-p", "-t", "0", format}).out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // Waits until `check` holds for the screen; returns the last screen.
  template <class Check>
  std::string wait_for(Check check, int timeout_ms = 15000) const {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string text;
    do {
      text = screen();
      if (check(text)) return text;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return text;
  }
  // The process the pane's shell is running now (its only child), or -1.
  pid_t foreground_child() const {
    std::string shell = query("#{pane_pid}");
    std::ifstream children("/proc/" + shell + "/task/" + shell + "/children");
    pid_t child = -1;
    children >> child;
    return child;
  }

 private:
  static inline int next_server_ = 0;
  std::string socket_;
  bool ok_ = false;
  std::string error_;
};

auto contains(const std::string& part) {
  return [part](const std::string& text) { return text.find(part) != std::string::npos; };
}

TEST(TopCliTest, LiveScreenKeysUnderTmux) {
  if (::access("/usr/bin/tmux", X_OK) != 0) GTEST_SKIP() << "tmux is not installed";
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  Tmux tmux;
  ASSERT_TRUE(tmux.ok()) << tmux.error();
  tmux.wait_for(contains("READY$"));
  tmux.keys({cli + " top -g --no-children -e cpu-clock -d 0.5 -p " +
                 std::to_string(workload.pid()) + "; echo TOP-EXIT=$?",
             "Enter"});
  // After a few refreshes the leaves are in order with their shares.
  std::string screen = tmux.wait_for(contains("[.] leaf_10"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  screen = tmux.screen();
  EXPECT_NE(screen.find("perfscope top:"), std::string::npos) << screen;
  EXPECT_EQ(tmux.query("#{alternate_on}"), "1");
  expect_known_order(screen);
  // A resize redraws at the new size: the status line moves to the new last line, under the
  // header. (Until top has redrawn, the pane shows the old frame cut to 20 lines, which can end
  // in a status line too: the sanitizer build was caught there.)
  tmux.tmux({"resize-window", "-t", "0", "-x", "90", "-y", "20"});
  screen = tmux.wait_for([](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines.size() == 20 && lines.front().starts_with("perfscope top:") &&
           lines.back().starts_with("q quit") && text.find("[.] leaf_60") != std::string::npos;
  });
  EXPECT_NE(screen.find("\nq quit  g call graph"), std::string::npos) << screen;
  EXPECT_NE(screen.find("[.] leaf_60"), std::string::npos) << screen;
  // g: the call graph of the selected (first) row, leaf_60, called by work_60.
  tmux.keys({"g"});
  screen = tmux.wait_for(contains("Callers (who calls it)"));
  EXPECT_NE(screen.find("Call graph of [.] leaf_60"), std::string::npos) << screen;
  EXPECT_TRUE(std::regex_search(screen, std::regex(R"(1?[0-9]{2}\.[0-9]{2}%  \[\.\] work_60)")))
      << screen;
  // Escape back to the table, then s: only rows whose symbol holds "leaf_3".
  tmux.keys({"Escape"});
  tmux.wait_for(contains("Shared Object"));
  tmux.keys({"s"});
  tmux.wait_for(contains("Symbol filter"));
  tmux.keys({"leaf_3", "Enter"});
  screen = tmux.wait_for(contains("[symbol ~ leaf_3]"));
  EXPECT_NE(screen.find("[.] leaf_30"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("[.] leaf_60"), std::string::npos) << screen;
  // Enter: the selected row's callers under it.
  tmux.keys({"Enter"});
  screen = tmux.wait_for(contains("-- [.] work_30"));
  EXPECT_TRUE(
      std::regex_search(screen, std::regex(R"(--(100\.00|9[0-9]\.[0-9]{2})%-- \[\.\] work_30)")))
      << screen;
  // p pauses the display, h shows the keys (any key goes back).
  tmux.keys({"p"});
  screen = tmux.wait_for(contains("[paused]"));
  EXPECT_NE(screen.find("[paused]"), std::string::npos) << screen;
  tmux.keys({"p"});
  tmux.keys({"h"});
  screen = tmux.wait_for(contains("perfscope top: keys"));
  EXPECT_NE(screen.find("call graph of the selected row"), std::string::npos) << screen;
  tmux.keys({"Escape"});
  tmux.wait_for(contains("Shared Object"));
  // q: top ends at once, the shell's screen is back.
  tmux.keys({"q"});
  screen = tmux.wait_for(contains("TOP-EXIT=0"));
  EXPECT_NE(screen.find("TOP-EXIT=0"), std::string::npos) << screen;
  EXPECT_EQ(tmux.query("#{alternate_on}"), "0");
}

TEST(TopCliTest, SigtermRestoresTheTerminal) {
  if (::access("/usr/bin/tmux", X_OK) != 0) GTEST_SKIP() << "tmux is not installed";
  pt::BackgroundCommand workload({known_answer_fp, "100000"});
  Tmux tmux;
  ASSERT_TRUE(tmux.ok()) << tmux.error();
  tmux.wait_for(contains("READY$"));
  tmux.keys(
      {cli + " top -e cpu-clock -d 0.5 -p " + std::to_string(workload.pid()) + "; echo TOP-EXIT=$?",
       "Enter"});
  std::string screen = tmux.wait_for(contains("[.] leaf_60"));
  ASSERT_NE(screen.find("[.] leaf_60"), std::string::npos) << screen;
  pid_t top = tmux.foreground_child();
  ASSERT_GT(top, 0);
  ASSERT_EQ(::kill(top, SIGTERM), 0);
  screen = tmux.wait_for(contains("TOP-EXIT=0"));
  EXPECT_NE(screen.find("TOP-EXIT=0"), std::string::npos) << screen;
  EXPECT_EQ(tmux.query("#{alternate_on}"), "0");
  // sh reads lines in the terminal's own cooked mode: top must have given back echo and icanon.
  // (The marker is typed as MODES""-END: only the output spells MODES-END.)
  tmux.keys(
      {"stty -a | tr ' ' '\\n' | grep -x -e echo -e -echo -e icanon -e -icanon | tr '\\n' "
       "' '; echo MODES\"\"-END",
       "Enter"});
  screen = tmux.wait_for(contains("MODES-END"));
  EXPECT_NE(screen.find("icanon echo MODES-END"), std::string::npos) << screen;
}

}  // namespace
