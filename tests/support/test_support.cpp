#include "support/test_support.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/core/event.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::testing {

bool running_as_root() { return ::geteuid() == 0; }

void expect_no_crash(const CommandResult& result, int ended_by) {
  using ::testing::HasSubstr;
  using ::testing::Not;
  // Ended by a signal, unless the caller sent it; perfscope's own statuses reach 129 (an option
  // error) and 130 (stopped by SIGINT, as perf stat).
  if (result.signal != 0 && result.exit_status != ended_by) {
    ADD_FAILURE() << "ended by signal " << result.signal << "\n" << result.err;
  }
  if (result.signal == 0 && result.exit_status != ended_by) {
    EXPECT_TRUE(result.exit_status < 128 || result.exit_status == 129) << result.err;
  }
  EXPECT_THAT(result.err, Not(HasSubstr("Sanitizer")));
  EXPECT_THAT(result.err, Not(HasSubstr("runtime error")));
  EXPECT_THAT(result.err, Not(HasSubstr("terminate called")));
}

CpuTicks cpu_ticks() {
  CpuTicks ticks;
  std::ifstream in("/proc/stat");
  std::string label;
  in >> label;  // "cpu": user nice system idle iowait irq softirq steal ...
  unsigned long long value = 0;
  for (int column = 0; column < 8 && in >> value; ++column) {
    ticks.total += value;
    if (column == 7) ticks.steal = value;
  }
  return ticks;
}

double steal_fraction(const CpuTicks& before, const CpuTicks& after) {
  return after.total > before.total ? static_cast<double>(after.steal - before.steal) /
                                          static_cast<double>(after.total - before.total)
                                    : 0.0;
}

std::vector<OwnMapping> own_mappings() {
  std::vector<OwnMapping> mappings;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode [path]"
    std::istringstream fields(line);
    std::string range, offset, device, inode;
    OwnMapping mapping;
    fields >> range >> mapping.perms >> offset >> device >> inode >> mapping.path;
    std::size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    mapping.start = std::stoull(range.substr(0, dash), nullptr, 16);
    mapping.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    mapping.pgoff = std::stoull(offset, nullptr, 16);
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("perfscope_" + name + "_" + std::to_string(::getpid())))
      .string();
}

namespace {
std::vector<std::string>& paths_removed_at_exit() {
  static std::vector<std::string> paths;
  return paths;
}
}  // namespace

void remove_at_exit(const std::string& path) {
  static const bool registered = [] {
    // The list first: statics are destroyed in the reverse order of their construction, and
    // atexit handlers run among those destructors, so the list outlives the handler.
    paths_removed_at_exit();
    std::atexit([] {
      std::error_code ignored;
      for (const std::string& each : paths_removed_at_exit()) {
        std::filesystem::remove(each, ignored);
      }
    });
    return true;
  }();
  (void)registered;
  paths_removed_at_exit().push_back(path);
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "perfscope-test-XXXXXX").string();
  path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
}

TempDir::~TempDir() {
  std::error_code error;
  if (!path_.empty()) std::filesystem::remove_all(path_, error);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  std::string file = path_ + "/" + name;
  std::ofstream(file) << text;
  return file;
}

bool hardware_counters_available() {
  int errnum = 0;
  auto attr = EventAttr::hardware(abi::HardwareEvent::instructions).count_user_only();
  Event event = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
  return event.valid();
}

bool tracefs_available() { return sys::tracefs_root().has_value(); }

std::string hardware_breakpoints_problem() {
  static const std::string problem = [] {
    static volatile std::uint64_t watched = 0;
    int errnum = 0;
    Event event = Event::try_open(EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watched),
                                                        8, abi::breakpoint_type::write)
                                      .count_user_only(),
                                  0, -1, nullptr, 0, errnum);
    if (!event.valid()) {
      return "a write watchpoint does not open here (" + std::string(std::strerror(errnum)) + ")";
    }
    for (std::uint64_t i = 1; i <= 3; ++i) watched = i;
    Reading reading;
    if (!event.read(reading)) return std::string("a write watchpoint cannot be read here");
    if (reading.value != 3) {
      return "this machine's hardware breakpoints do not fire: a write watchpoint opens but "
             "counted " +
             std::to_string(reading.value) +
             " of 3 writes (a virtual machine without debug registers, such as Firecracker)";
    }
    return std::string();
  }();
  return problem;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CommandResult run_command(const std::vector<std::string>& argv) { return run_command_in({}, argv); }

CommandResult run_command_in(const std::string& directory, const std::vector<std::string>& argv) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) < 0 || ::pipe2(err_pipe, O_CLOEXEC) < 0) return result;
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!directory.empty() && ::chdir(directory.c_str()) != 0) ::_exit(126);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_status = sys::exit_status_from_wait(status);
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

CommandResult run_perfscope(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv{PERFSCOPE_CLI_PATH};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return run_command(argv);
}

CommandResult run_perf_or_perfscope(const std::string& tool,
                                    const std::vector<std::string>& arguments) {
  if (tool != "perf") return run_perfscope(arguments);
  std::vector<std::string> argv{"/usr/bin/perf"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return run_command(argv);
}

CommandResult run_perfscope_in(const std::string& directory,
                               const std::vector<std::string>& arguments) {
  std::vector<std::string> argv{PERFSCOPE_CLI_PATH};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return run_command_in(directory, argv);
}

SchemaCheck check_json_schema(const std::string& schema, const std::string& document) {
  // Exit status 3: jsonschema is missing.
  static const char* const validator = R"py(
import json, sys
try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(3)
schema = json.load(open(sys.argv[1]))
document = json.load(open(sys.argv[2]))
def close(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            close(value)
    elif isinstance(node, list):
        for value in node:
            close(value)
close(schema)
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
errors = sorted(cls(schema).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
for error in errors[:20]:
    print("/" + "/".join(map(str, error.absolute_path)), ":", error.message[:300])
sys.exit(1 if errors else 0)
)py";
  SchemaCheck check;
  CommandResult result = run_command({"python3", "-c", validator, schema, document});
  if (result.exit_status == 127) {
    check.report = "python3 is not installed";
  } else if (result.exit_status == 3) {
    check.report = result.out;
  } else {
    check.ran = true;
    check.valid = result.exit_status == 0;
    check.report = result.out + result.err;
  }
  return check;
}

std::vector<FoldedLine> parse_folded(const std::string& text) {
  std::vector<FoldedLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    lines.push_back({line.substr(0, space), std::stod(line.substr(space + 1))});
  }
  return lines;
}

std::optional<std::string> missing_browser(const std::string& browser_dir,
                                           const std::vector<std::string>& packages) {
  const char* chromium = std::getenv("PERFSCOPE_CHROMIUM");
  std::string chromium_path = chromium != nullptr ? chromium : "/usr/bin/chromium";
  if (::access(chromium_path.c_str(), X_OK) != 0) {
    return "no Chromium at " + chromium_path +
           " (apt-get install chromium, or set PERFSCOPE_CHROMIUM)";
  }
  if (run_command({"node", "--version"}).exit_status != 0) {
    return std::string("node is not installed (apt-get install nodejs)");
  }
  std::filesystem::path modules = std::filesystem::path(browser_dir) / "node_modules";
  for (const std::string& package : packages) {
    if (!std::filesystem::exists(modules / package / "package.json")) {
      return "the npm package " + package + " is not in " + modules.string() +
             " (run scripts/install-deps, or npm ci in " + browser_dir + ")";
    }
  }
  return std::nullopt;
}

std::string plt_names_as_perf_6_1(const std::string& ours, const std::string& perfs) {
  static const std::regex header(R"( \.plt(\+0x[0-9a-f]+)? \()");
  static const std::regex stub(R"( [A-Za-z0-9_.]+@plt(\+0x[0-9a-f]+)? \()");
  if (ours == perfs) return ours;
  for (const std::regex* name : {&header, &stub}) {
    std::string unnamed = std::regex_replace(ours, *name, " [unknown] (");
    if (unnamed == perfs) return unnamed;
  }
  return ours;
}

std::vector<std::string> build_id_list_files(const std::vector<std::string>& lister) {
  auto listed = run_command(lister);
  EXPECT_EQ(listed.exit_status, 0) << listed.err;
  std::vector<std::string> files;
  std::istringstream lines(listed.out);
  for (std::string id, file; lines >> id >> file;) files.push_back(file);
  std::sort(files.begin(), files.end());
  return files;
}

std::string control_command(const std::string& control, const std::string& ack,
                            const std::string& command) {
  int out = ::open(control.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) return "cannot open " + control;
  std::string line = command + "\n";
  bool written = ::write(out, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(out);
  if (!written) return "cannot write " + control;
  int in = ::open(ack.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  std::string answer;
  for (int waited = 0; in >= 0 && waited < 10000 && answer.size() < 4; waited += 5) {
    char bytes[4];
    ssize_t got = ::read(in, bytes, 4 - answer.size());
    if (got > 0) answer.append(bytes, static_cast<std::size_t>(got));
    if (got <= 0) ::usleep(5000);
  }
  if (in >= 0) ::close(in);
  return answer;
}

}  // namespace perfscope::testing
