// ViewServer: `perfscope view`'s HTTP side (cpp-httplib). Serves the viewer application embedded
// in the binary and its API over a ProfileView, on 127.0.0.1 only. Each run has a random token
// that every path carries (/t/TOKEN/...): a request without it, or with a Host header that is
// not this loopback address and port (DNS rebinding), gets 403. Only the application's files and
// the API are answered; nothing on disk is read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "perfscope/analysis/view/profile_view.hpp"

namespace perfscope {
class PerfDataReader;
}  // namespace perfscope

namespace perfscope::cli {

class ViewServer {
 public:
  // `reader` is the recording `view` was read from: the function pane annotates from it.
  // `current`, when given, is a second recording: the diff view compares it with `view`.
  ViewServer(const ProfileView& view, const PerfDataReader& reader,
             const ProfileView* current = nullptr, std::string base_name = {},
             std::string current_name = {});
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  // Binds 127.0.0.1:`port` (0: a free one); throws with the reason when it cannot.
  void bind(std::uint16_t port);
  std::uint16_t port() const noexcept;
  // The application's address, token included.
  std::string url() const;
  // Answers requests until stop() (from another thread or a signal's watcher).
  void run();
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The token of one run: 32 hex digits from the kernel's random source.
std::string random_token();

}  // namespace perfscope::cli
