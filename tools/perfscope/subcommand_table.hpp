// The names and one-line descriptions of perfscope's subcommands, in the order `perfscope` lists
// them: the one home of both, so that a run can list every subcommand (help, a mistyped name)
// without building any subcommand's options, and build only the chosen one's otherwise.
#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string_view>

namespace perfscope::cli {

struct SubcommandEntry {
  std::string_view name;
  std::string_view description;
  bool opens_events = false;  // -v (the attr of an event that failed to open) means something
};

std::span<const SubcommandEntry> subcommand_table();

// True when `word` is a subcommand's name.
bool is_subcommand_name(std::string_view word);

// Whether the subcommand named `name` opens perf events (stat, record, trace, top, ...).
bool opens_events(std::string_view name);

// app.add_subcommand(name, its description from the table).
CLI::App* add_subcommand_named(CLI::App& app, std::string_view name);

}  // namespace perfscope::cli
