// perf's --control for record and stat: commands read, a line each, from a FIFO or an inherited
// file descriptor while the events run ("enable", "disable", "ping", "stop"), each answered
// "ack\n" on the acknowledgement FIFO or descriptor when one is given, as perf answers them: how
// a program marks the region it wants measured (with -D -1, the events start disabled).
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace perfscope::cli {

struct ControlHandlers {
  std::function<void()> enable;
  std::function<void()> disable;
  std::function<void()> stop;  // end the recording or count as a stop signal does
  bool quiet = false;          // no "Events enabled" / "Events disabled" lines
};

// Empty when `spec` has perf's --control form (fifo:CTL[,ACK] or fd:CTL[,ACK]); otherwise what is
// wrong with it (a CLI11 check).
std::string control_spec_error(const std::string& spec);

class ControlChannel {
 public:
  // `spec` as perf takes it: fifo:CTL[,ACK] (paths, opened here) or fd:CTL[,ACK] (descriptors
  // this process inherited). Throws CLI::ValidationError naming --control for anything else,
  // and std::runtime_error when a FIFO cannot be opened.
  ControlChannel(const std::string& spec, ControlHandlers handlers);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Starts reading commands (after the events are open).
  void start();

 private:
  void serve();
  void run(const std::string& command);

  ControlHandlers handlers_;
  int control_fd_ = -1, ack_fd_ = -1;
  bool owns_fds_ = false;
  int wake_fd_ = -1;  // an eventfd that ends serve()
  std::thread reader_;
};

}  // namespace perfscope::cli
