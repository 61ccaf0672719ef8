// The transport of the static perfscope binary: Debian ships libcurl's dependencies (Kerberos,
// LDAP) without static archives, so the CLI cannot link libcurl; a small dynamically linked
// helper (perfscope-push-http) does each request. The request and its credentials go to the
// helper's standard input over a socket pair, its answer comes back on its standard output.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "perfscope/analysis/push/push_client.hpp"

extern char** environ;

namespace perfscope {

namespace {

class HelperTransport final : public HttpTransport {
 public:
  HelperTransport(std::string helper, std::string ca_file)
      : helper_(std::move(helper)), ca_file_(std::move(ca_file)) {}

  HttpResponse post(const HttpRequest& request, const std::string& authorization,
                    int timeout_seconds) override {
    HttpResponse response;
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      response.error = fmt::format("cannot create a socket pair: {}", std::strerror(errno));
      return response;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::string program = helper_;
    char* argv[] = {program.data(), nullptr};
    pid_t pid = -1;
    int spawned = ::posix_spawn(&pid, helper_.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (spawned != 0) {
      ::close(fds[0]);
      response.error =
          fmt::format("cannot run the HTTP helper {}: {}", helper_, std::strerror(spawned));
      return response;
    }
    std::string head = fmt::format("perfscope-push-http 1\nurl {}\ncontent-type {}\ntimeout {}\n",
                                   request.url, request.content_type, timeout_seconds);
    if (!authorization.empty()) head += "authorization " + authorization + "\n";
    if (!ca_file_.empty()) head += "ca-file " + ca_file_ + "\n";
    head += "\n";
    bool sent = send_all(fds[0], head) && send_all(fds[0], request.body);
    ::shutdown(fds[0], SHUT_WR);
    std::string answer;
    // The helper's own timeout ends the transfer; this bounds a helper that hangs regardless.
    int wait_ms = (timeout_seconds + 15) * 1000;
    char buffer[4096];
    for (;;) {
      pollfd ready{fds[0], POLLIN, 0};
      int polled = ::poll(&ready, 1, wait_ms);
      if (polled < 0 && errno == EINTR) continue;
      if (polled <= 0) {
        ::kill(pid, SIGKILL);
        break;
      }
      ssize_t got = ::read(fds[0], buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      if (answer.size() < 8192) answer.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (answer.rfind("status ", 0) == 0) {
      std::size_t line_end = answer.find('\n');
      response.reached = true;
      response.status = std::strtol(answer.c_str() + 7, nullptr, 10);
      if (line_end != std::string::npos) response.body = answer.substr(line_end + 1);
    } else if (answer.rfind("error ", 0) == 0) {
      std::size_t line_end = answer.find('\n');
      response.error =
          answer.substr(6, line_end == std::string::npos ? std::string::npos : line_end - 6);
    } else {
      response.error = fmt::format(
          "the HTTP helper {} {}", helper_,
          !sent                 ? "did not take the request"
          : WIFSIGNALED(status) ? fmt::format("ended by signal {}", WTERMSIG(status))
                                : fmt::format("exited {} without an answer", WEXITSTATUS(status)));
    }
    return response;
  }

 private:
  static bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
  }

  std::string helper_;
  std::string ca_file_;
};

}  // namespace

std::unique_ptr<HttpTransport> make_helper_transport(std::string helper, std::string ca_file) {
  return std::make_unique<HelperTransport>(std::move(helper), std::move(ca_file));
}

}  // namespace perfscope
