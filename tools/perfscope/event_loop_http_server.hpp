// EventLoopHttpServer: cpp-httplib's Server with its connections read by one event loop instead
// of a pool thread each. cpp-httplib hands every accepted connection to a pool thread that then
// waits for the request, so a few idle connections, or a few that send a header line a second,
// held every thread: a real request waited 4.5 s behind 4 idle connections and over 20 s behind
// 8 idle and 4 slow ones, and any local user could do that without the token. Here one epoll
// thread reads every connection's request head at once, each with a deadline and their number
// bounded; only a complete head goes to a worker, which answers it with cpp-httplib's own request
// processing (routing, handlers, the response) and hands a kept-alive connection back to the loop.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace perfscope::cli {

struct HttpConnection;

class EventLoopHttpServer : public httplib::Server {
 public:
  // `workers` threads answer complete requests.
  explicit EventLoopHttpServer(std::size_t workers);
  ~EventLoopHttpServer() override;
  EventLoopHttpServer(const EventLoopHttpServer&) = delete;
  EventLoopHttpServer& operator=(const EventLoopHttpServer&) = delete;

  // After binding: cpp-httplib listens with a backlog of 5, so a burst of 20 connections lost
  // SYNs and waited out the 1 s retransmission; the kernel's maximum instead.
  void widen_accept_queue();

  // How long a connection may send nothing (new or kept alive), and how long a request head may
  // take from its first byte: past either, the connection is closed.
  static constexpr int idle_timeout_ms = 5000;
  static constexpr int head_timeout_ms = 5000;
  // Connections waiting for their request head; past this the longest-waiting one is closed.
  static constexpr std::size_t max_waiting_connections = 256;
  // A request head longer than this is refused (431), as cpp-httplib's own limit.
  static constexpr std::size_t max_head_bytes = 8192;

 private:
  // Called by cpp-httplib's accept loop (through an inline task queue) for each connection.
  bool process_and_close_socket(socket_t sock) override;

  void run_loop();
  void run_worker();
  // From any thread: the loop takes `connection` back and waits for its next request.
  void hand_to_loop(std::unique_ptr<HttpConnection> connection);
  void answer(HttpConnection& connection);

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<HttpConnection>> arriving_;  // for the loop, under mutex_
  std::deque<std::unique_ptr<HttpConnection>> ready_;      // complete heads, under mutex_
  std::thread loop_;
  std::vector<std::thread> workers_;
};

}  // namespace perfscope::cli
