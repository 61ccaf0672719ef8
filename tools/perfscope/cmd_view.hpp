// perfscope view: the interactive viewer in the browser. This static binary checks the options
// and hands the run to the helper perfscope-view (installed beside it), which links the HTTP
// server library (cpp-httplib, a shared library in Debian) and serves the profile.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace perfscope::cli {

class ViewCommand {
 public:
  explicit ViewCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::vector<std::string> files_;
  std::uint16_t port_ = 0;
  bool no_open_ = false;
};

}  // namespace perfscope::cli
