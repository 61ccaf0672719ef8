#include "event_loop_http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace perfscope::cli {

using Clock = std::chrono::steady_clock;

struct HttpConnection {
  explicit HttpConnection(int socket) : fd(socket) {}
  ~HttpConnection() {
    if (fd >= 0) ::close(fd);
  }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd;
  std::string received;      // the request head being read, and whatever followed it
  std::size_t head_end = 0;  // past the head's blank line; 0 while incomplete
  Clock::time_point deadline;
  Clock::time_point waiting_since;
  bool keep_alive = false;  // after an answer: the loop waits for the next request
};

namespace {

constexpr int answer_timeout_ms = 10000;  // for writing one response, however long

std::string_view head_terminator = "\r\n\r\n";

// Looks for the end of the request head; true once it is there.
bool find_head_end(HttpConnection& connection) {
  std::size_t at = connection.received.find(head_terminator);
  if (at == std::string::npos) return false;
  connection.head_end = at + head_terminator.size();
  return true;
}

// Sends all of `text` now or not at all: for short refusals on a connection about to close.
void send_if_room(int fd, std::string_view text) {
  [[maybe_unused]] ssize_t sent = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void address_text(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

// The stream cpp-httplib's request processing reads and writes: the head the loop read, then
// end of input; responses go to the socket with one deadline for the whole answer.
class HeadStream final : public httplib::Stream {
 public:
  HeadStream(int fd, std::string_view head)
      : fd_(fd),
        head_(head),
        deadline_(Clock::now() + std::chrono::milliseconds(answer_timeout_ms)) {}

  bool failed() const noexcept { return failed_; }

  bool is_readable() const override { return offset_ < head_.size(); }
  bool is_writable() const override { return wait_writable(); }
  ssize_t read(char* ptr, std::size_t size) override {
    std::size_t n = std::min(size, head_.size() - offset_);
    std::memcpy(ptr, head_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, std::size_t size) override {
    std::size_t done = 0;
    while (done < size && !failed_) {
      ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_writable()) {
        continue;
      } else {
        failed_ = true;
      }
    }
    return failed_ ? -1 : static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      address_text(address, ip, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      address_text(address, ip, port);
    }
  }
  socket_t socket() const override { return fd_; }

 private:
  bool wait_writable() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    if (left.count() <= 0) return false;
    pollfd watched{fd_, POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&watched, 1, static_cast<int>(left.count()));
    } while (ready < 0 && errno == EINTR);
    return ready > 0 && (watched.revents & POLLOUT) != 0;
  }

  int fd_;
  std::string_view head_;
  std::size_t offset_ = 0;
  Clock::time_point deadline_;
  bool failed_ = false;
};

// cpp-httplib's accept loop hands each connection to its task queue; this one passes it on at
// once (to process_and_close_socket, which gives it to the event loop).
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> task) override { task(); }
  void shutdown() override {}
};

}  // namespace

EventLoopHttpServer::EventLoopHttpServer(std::size_t workers) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    throw std::runtime_error(std::string("cannot make the viewer's event loop: ") +
                             std::strerror(errno));
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  new_task_queue = [] { return new InlineTaskQueue; };
  loop_ = std::thread([this] { run_loop(); });
  for (std::size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { run_worker(); });
}

EventLoopHttpServer::~EventLoopHttpServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t woke = ::write(wake_fd_, &one, sizeof one);
  loop_.join();
  for (std::thread& worker : workers_) worker.join();
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void EventLoopHttpServer::widen_accept_queue() { ::listen(svr_sock_, SOMAXCONN); }

bool EventLoopHttpServer::process_and_close_socket(socket_t sock) {
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  // Headers and body leave in separate writes: without this, Nagle's algorithm holds the body
  // until the browser's delayed acknowledgement (40 ms a request).
  int on = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  hand_to_loop(std::make_unique<HttpConnection>(sock));
  return true;
}

void EventLoopHttpServer::hand_to_loop(std::unique_ptr<HttpConnection> connection) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // closed with the connection
    arriving_.push_back(std::move(connection));
  }
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t woke = ::write(wake_fd_, &one, sizeof one);
}

void EventLoopHttpServer::run_loop() {
  std::unordered_map<int, std::unique_ptr<HttpConnection>> waiting;
  auto dispatch = [this](std::unique_ptr<HttpConnection> connection) {
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(connection));
    }
    work_ready_.notify_one();
  };
  auto close_waiting = [&](int fd) { waiting.erase(fd); };  // closing leaves the epoll set too
  // Reads what `connection` sent; false when it is to be closed.
  auto read_from = [&](HttpConnection& connection) {
    char chunk[4096];
    for (;;) {
      ssize_t n = ::recv(connection.fd, chunk, sizeof chunk, 0);
      if (n > 0) {
        if (connection.received.empty()) {
          connection.deadline = Clock::now() + std::chrono::milliseconds(head_timeout_ms);
        }
        connection.received.append(chunk, static_cast<std::size_t>(n));
        if (find_head_end(connection)) return true;
        if (connection.received.size() > max_head_bytes) {
          send_if_room(connection.fd,
                       "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n"
                       "Content-Length: 0\r\n\r\n");
          return false;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  };
  epoll_event events[64];
  for (;;) {
    int ready = ::epoll_wait(epoll_fd_, events, 64, 100);
    std::vector<std::unique_ptr<HttpConnection>> arrived;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
      arrived.swap(arriving_);
    }
    const Clock::time_point now = Clock::now();
    for (auto& connection : arrived) {
      if (find_head_end(*connection)) {  // a pipelined request already read
        dispatch(std::move(connection));
        continue;
      }
      connection->waiting_since = now;
      connection->deadline =
          now + std::chrono::milliseconds(connection->received.empty() ? idle_timeout_ms
                                                                       : head_timeout_ms);
      epoll_event watch{};
      watch.events = EPOLLIN | EPOLLRDHUP;
      watch.data.fd = connection->fd;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection->fd, &watch) != 0) continue;
      int fd = connection->fd;
      waiting[fd] = std::move(connection);
      if (waiting.size() > max_waiting_connections) {
        auto oldest = std::min_element(waiting.begin(), waiting.end(), [](auto& a, auto& b) {
          return a.second->waiting_since < b.second->waiting_since;
        });
        close_waiting(oldest->first);
      }
    }
    for (int i = 0; i < ready; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        std::uint64_t count;
        [[maybe_unused]] ssize_t drained = ::read(wake_fd_, &count, sizeof count);
        continue;
      }
      auto found = waiting.find(fd);
      if (found == waiting.end()) continue;
      HttpConnection& connection = *found->second;
      if (!read_from(connection)) {
        close_waiting(fd);
      } else if (connection.head_end != 0) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        dispatch(std::move(found->second));
        waiting.erase(found);
      }
    }
    for (auto at = waiting.begin(); at != waiting.end();) {
      at = at->second->deadline <= now ? waiting.erase(at) : std::next(at);
    }
  }
}

void EventLoopHttpServer::run_worker() {
  for (;;) {
    std::unique_ptr<HttpConnection> connection;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      connection = std::move(ready_.front());
      ready_.pop_front();
    }
    answer(*connection);
    if (connection->keep_alive) hand_to_loop(std::move(connection));
  }
}

void EventLoopHttpServer::answer(HttpConnection& connection) {
  HeadStream stream(connection.fd,
                    std::string_view(connection.received).substr(0, connection.head_end));
  bool closed = false;
  bool answered = process_request(stream, false, closed, {});
  connection.keep_alive = answered && !closed && !stream.failed();
  connection.received.erase(0, connection.head_end);
  connection.head_end = 0;
}

}  // namespace perfscope::cli
