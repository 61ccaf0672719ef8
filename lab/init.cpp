// /init of the PMU lab's initramfs: mounts what perf needs, sets the sysctls the lab tests rely
// on, runs /lab_tests with the kernel command line's extra arguments, reports on the serial
// console and powers the machine off, so that QEMU exits when the tests are done.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

void mount_filesystem(const char* type, const char* where) {
  ::mkdir(where, 0755);
  if (::mount(type, where, type, 0, nullptr) < 0 && errno != EBUSY) {
    std::printf("pmu-lab: cannot mount %s on %s: %s\n", type, where, std::strerror(errno));
  }
}

// The kernel opens /dev/console for /init only if the initramfs has the node; when it did not,
// the devtmpfs one serves.
void attach_console() {
  if (::fcntl(1, F_GETFD) >= 0) return;
  int fd = ::open("/dev/console", O_RDWR);
  if (fd < 0) return;
  for (int target = 0; target <= 2; ++target) ::dup2(fd, target);
  if (fd > 2) ::close(fd);
}

void write_sysctl(const char* name, const char* value) {
  std::string path = std::string("/proc/sys/kernel/") + name;
  int fd = ::open(path.c_str(), O_WRONLY);
  bool written = fd >= 0 && ::write(fd, value, std::strlen(value)) >= 0;
  int error = errno;
  if (fd >= 0) ::close(fd);
  std::printf("pmu-lab: sysctl kernel.%s=%s%s%s\n", name, value,
              written ? "" : " FAILED: ", written ? "" : std::strerror(error));
}

std::string read_first_line(const char* path) {
  char buffer[256] = {};
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) return "?";
  ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  std::string line(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (auto newline = line.find('\n'); newline != std::string::npos) line.resize(newline);
  return line;
}

// Arguments for the tests after "--" on the kernel command line (e.g. a --gtest_filter).
std::vector<std::string> test_arguments() {
  std::string command_line = read_first_line("/proc/cmdline");
  std::vector<std::string> arguments;
  std::size_t dashes = command_line.find(" -- ");
  if (dashes == std::string::npos) return arguments;
  std::string rest = command_line.substr(dashes + 4);
  std::size_t start = 0;
  while (start < rest.size()) {
    std::size_t end = rest.find(' ', start);
    if (end == std::string::npos) end = rest.size();
    if (end > start) arguments.push_back(rest.substr(start, end - start));
    start = end + 1;
  }
  return arguments;
}

[[noreturn]] void power_off() {
  std::fflush(stdout);
  ::sync();
  ::reboot(RB_POWER_OFF);
  for (;;) ::pause();
}

}  // namespace

int main() {
  mount_filesystem("devtmpfs", "/dev");
  attach_console();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  mount_filesystem("proc", "/proc");
  mount_filesystem("sysfs", "/sys");
  mount_filesystem("tracefs", "/sys/kernel/tracing");
  ::mkdir("/tmp", 01777);

  utsname machine{};
  ::uname(&machine);
  std::printf("pmu-lab: kernel %s %s, %ld CPUs, PMUs:", machine.release, machine.machine,
              ::sysconf(_SC_NPROCESSORS_ONLN));
  if (DIR* pmus = ::opendir("/sys/bus/event_source/devices")) {
    while (dirent* entry = ::readdir(pmus)) {
      if (entry->d_name[0] != '.') std::printf(" %s", entry->d_name);
    }
    ::closedir(pmus);
  }
  std::printf("\n");
  write_sysctl("perf_user_access", "1");
  // The sample-rate limit can only be written while throttling is on: raise it first, then turn
  // the CPU-time throttle off (an emulated CPU's slow interrupts would otherwise lower it).
  write_sysctl("perf_event_max_sample_rate", "100000");
  write_sysctl("perf_cpu_time_max_percent", "0");

  std::vector<std::string> arguments = test_arguments();
  std::vector<char*> argv{const_cast<char*>("/lab_tests")};
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t child = ::fork();
  if (child == 0) {
    ::execv(argv[0], argv.data());
    std::printf("pmu-lab: cannot run /lab_tests: %s\n", std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (child > 0 && ::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    std::printf("pmu-lab: lab_tests exited with status %d\n", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    std::printf("pmu-lab: lab_tests killed by signal %d (%s)\n", WTERMSIG(status),
                strsignal(WTERMSIG(status)));
  }
  power_off();
}
