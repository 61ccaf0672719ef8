#include "cmd_view.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "command_line.hpp"

namespace perfscope::cli {

ViewCommand::ViewCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "view");
  app_->add_option("files", files_,
                   "The recording (default perf.data); a second one adds the diff view, which "
                   "compares it with the first")
      ->expected(0, 2)
      ->check(readable_file());
  app_->add_option("--port", port_, "Listen on this port of 127.0.0.1 (default: a free one)");
  app_->add_flag("--no-open", no_open_,
                 "Only print the address (over SSH: forward the port, ssh -L PORT:127.0.0.1:PORT)");
  app_->footer(
      "The viewer is served on 127.0.0.1 only, at an address with a random token; it needs no "
      "network and loads nothing from elsewhere. The browser ($BROWSER, else xdg-open) is given a "
      "private page that redirects there, so the token is on no command line. Ctrl-C stops it.\n"
      "Views: flame graph (click zooms, / searches), call tree (top-down and bottom-up), "
      "timeline (drag a range: every view follows), events and comm/pid/tid/DSO filters.\n"
      "Examples:\n"
      "  perfscope view perf.data\n"
      "  perfscope view base.data new.data              # the diff view too\n"
      "  perfscope view --no-open --port 8123 perf.data   # then ssh -L 8123:127.0.0.1:8123 host");
}

int ViewCommand::run() {
  std::string helper =
      find_helper("perfscope-view", "the viewer's server built with perfscope, from cpp-httplib",
                  "perfscope_view");
  std::string file = files_.empty() ? "perf.data" : files_.front();
  if (::access(file.c_str(), R_OK) != 0) {
    throw std::invalid_argument(
        fmt::format("cannot read {} ({}): give a recording (perfscope record -o FILE) to view",
                    file, std::strerror(errno)));
  }
  std::vector<std::string> words{"perfscope-view", file, std::to_string(port_),
                                 no_open_ ? "no-open" : "open"};
  if (files_.size() == 2) words.push_back(files_[1]);
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(helper.c_str(), argv.data());
  throw std::runtime_error(fmt::format("cannot run {}: {}", helper, std::strerror(errno)));
}

}  // namespace perfscope::cli
