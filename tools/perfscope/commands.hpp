// The subcommands of the perfscope tool.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace perfscope::cli {

struct StatOptions {
  std::string events;
  int pid = -1;
  int tid = -1;
  bool all_cpus = false;
  std::string cpu_list;
  std::string cgroup;
  int interval_ms = 0;
  int repeat = 1;
  bool json = false;
  bool csv = false;
  std::string output;
  bool no_inherit = false;
  std::vector<std::string> command;
};

class StatCommand {
 public:
  explicit StatCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // `command`: the words after "--", if the user wrote one.
  int run(bool verbose, std::vector<std::string> command);

 private:
  CLI::App* app_;
  StatOptions options_;
};

class DoctorCommand {
 public:
  explicit DoctorCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string binary_;
  bool json_ = false;
};

class ListCommand {
 public:
  explicit ListCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string pattern_;
  bool json_ = false;
  bool probe_all_ = false;
  bool no_probe_ = false;
};

}  // namespace perfscope::cli
