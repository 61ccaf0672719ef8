// perfscope-view: the viewer's server, run by `perfscope view` (cmd_view.cpp) as
//   perfscope-view FILE PORT open|no-open [NEW_FILE]
// It reads the recording into a Profile, serves it on 127.0.0.1 and prints the address; SIGINT
// or SIGTERM stops it.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/view/profile_view.hpp"
#include "perfscope/core/safe_text.hpp"
#include "view_server.hpp"

namespace {

// The page the browser is given instead of the address: a command line is readable by every user
// in /proc, and the token on xdg-open's would open the viewer to all of them. The page is 0600 in
// a directory only this user can enter, and removed when the viewer stops.
class RedirectPage {
 public:
  // Writes the page; nothing when no private directory could be made.
  bool write(const std::string& url) {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    struct stat status {};
    if (runtime && *runtime && ::stat(runtime, &status) == 0 && S_ISDIR(status.st_mode) &&
        status.st_uid == ::getuid() && (status.st_mode & 077) == 0) {
      directory_ = runtime;
    } else {
      std::string pattern = "/tmp/perfscope-view-XXXXXX";
      if (!::mkdtemp(pattern.data())) return false;
      directory_ = made_directory_ = pattern;
    }
    path_ = fmt::format("{}/perfscope-view-{}.html", directory_, ::getpid());
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      path_.clear();
      return false;
    }
    std::string page = fmt::format(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>perfscope view</title>\n"
        "<meta http-equiv=\"refresh\" content=\"0; url={0}\">\n"
        "<p><a href=\"{0}\">perfscope view</a></p>\n",
        url);
    bool written = ::write(fd, page.data(), page.size()) == static_cast<ssize_t>(page.size());
    ::close(fd);
    return written;
  }
  std::string file_url() const { return "file://" + path_; }
  ~RedirectPage() {
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!made_directory_.empty()) ::rmdir(made_directory_.c_str());
  }

 private:
  std::string directory_;
  std::string made_directory_;
  std::string path_;
};

bool own_browser() {
  const char* browser = std::getenv("BROWSER");
  return browser && *browser;
}

// A desktop, and a browser to open there: $BROWSER when set (a command, with its arguments), else
// xdg-open.
bool can_open_browser() {
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY")) return false;
  return own_browser() || ::access("/usr/bin/xdg-open", X_OK) == 0;
}

bool open_in_browser(const std::string& page) {
  pid_t child = ::fork();
  if (child == 0) {
    if (own_browser()) {
      ::execl("/bin/sh", "sh", "-c", "exec $BROWSER \"$1\"", "sh", page.c_str(),
              static_cast<char*>(nullptr));
    } else {
      ::execl("/usr/bin/xdg-open", "xdg-open", page.c_str(), static_cast<char*>(nullptr));
    }
    ::_exit(127);
  }
  return child > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fmt::print(stderr, "perfscope-view: run it through perfscope view (perfscope view --help)\n");
    return 2;
  }
  const std::string file = argv[1];
  const auto port = static_cast<std::uint16_t>(std::strtoul(argv[2], nullptr, 10));
  const bool open = std::string(argv[3]) == "open";
  // Stopped by these signals through sigwait, not handlers: the server stops cleanly.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGCHLD, SIG_IGN);  // xdg-open is not waited for
  // The server answers on a few threads: with an arena each, what one answer freed would not
  // serve the next one's allocations on another thread (the RSS grew with each question).
  mallopt(M_ARENA_MAX, 2);
  try {
    perfscope::PerfDataReader reader = perfscope::PerfDataReader::open(file);
    perfscope::ProfileView view(
        perfscope::build_profile(reader, perfscope::ProfileView::profile_options()));
    // With a second recording, the diff view compares it with the first.
    std::optional<perfscope::PerfDataReader> current_reader;
    std::optional<perfscope::ProfileView> current;
    const std::string current_file = argc == 5 ? argv[4] : "";
    if (!current_file.empty()) {
      current_reader.emplace(perfscope::PerfDataReader::open(current_file));
      current.emplace(
          perfscope::build_profile(*current_reader, perfscope::ProfileView::profile_options()));
    }
    perfscope::cli::ViewServer server(view, reader, current ? &*current : nullptr, file,
                                      current_file);
    server.bind(port);
    const perfscope::Profile& profile = view.profile();
    fmt::print("perfscope view: {} ({} samples, {} threads){} at\n  {}\n",
               perfscope::terminal_safe(file), profile.summary.samples, profile.threads.size(),
               current
                   ? fmt::format(" against {} ({} samples)", perfscope::terminal_safe(current_file),
                                 current->profile().summary.samples)
                   : std::string(),
               server.url());
    RedirectPage page;
    if (!open || !can_open_browser() || !page.write(server.url()) ||
        !open_in_browser(page.file_url())) {
      fmt::print(
          "Open that address in a browser (from another machine: ssh -L {0}:127.0.0.1:{0} this "
          "host, then the same address there). Ctrl-C stops the viewer.\n",
          server.port());
    }
    std::fflush(stdout);
    std::thread serving([&server] { server.run(); });
    int received = 0;
    sigwait(&stop_signals, &received);
    server.stop();
    serving.join();
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "perfscope: {}\n", perfscope::terminal_safe_lines(error.what()));
    return 1;
  }
}
