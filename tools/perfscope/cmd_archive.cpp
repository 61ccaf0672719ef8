// perfscope archive: options and printing; what goes into the archive and how it is written is
// analysis/archive/symbol_archive.hpp.
#include "cmd_archive.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "partial_data.hpp"
#include "perfscope/analysis/archive/symbol_archive.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/core/safe_text.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

std::string megabytes(std::uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

std::string safe(std::string_view text) {
  return is_terminal_safe(text) ? std::string(text) : terminal_safe(text);
}

}  // namespace

ArchiveCommand::ArchiveCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "archive");
  app_->add_option("-i,--input", options_.input, "Input file (default perf.data; - reads stdin)");
  app_->add_option("-o,--output", options_.output,
                   "The archive (default INPUT.tar.zst; .tar.bz2, .tar.gz, .tar.xz and .tar "
                   "compress as their names say)");
  app_->add_option("--debug-root", options_.debug_root,
                   "Where separate debug files are (default /usr/lib/debug)");
  add_symbol_source_options(*app_, options_.symbol_sources);
  app_->footer(
      "Examples:\n"
      "  perfscope archive -i perf.data && perfscope report -i perf.data --archive "
      "perf.data.tar.zst\n"
      "  perfscope archive -i perf.data -o perf.data.tar.bz2 && tar xf perf.data.tar.bz2 -C "
      "~/.debug && perf report -i perf.data");
}

int ArchiveCommand::run() {
  const ArchiveCommandOptions& o = options_;
  auto start = std::chrono::steady_clock::now();
  if (o.input == "-" && o.output.empty()) {
    throw std::invalid_argument(
        "-i - reads the recording from stdin: name the archive with -o FILE");
  }
  std::string output = o.output.empty() ? o.input + ".tar.zst" : o.output;

  SymbolSources sources(o.symbol_sources);
  ProfileOptions options;
  sources.apply(options.symbols);
  if (!o.debug_root.empty()) options.symbols.debug_root = o.debug_root;
  PerfDataReader reader = PerfDataReader::open(o.input);
  Profile profile = build_profile(reader, options);

  SymbolArchivePlanOptions plan_options;
  plan_options.lookup = sources.roots();
  if (!o.debug_root.empty()) plan_options.debug_root = o.debug_root;
  SymbolArchivePlan plan = plan_symbol_archive(reader, profile, plan_options);
  double reading = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (const std::string& note : plan.notes) {
    fmt::print(stderr, "perfscope archive: note: {}\n", safe(note));
  }
  for (const MissingSymbolFile& missing : plan.missing) {
    fmt::print(stderr, "perfscope archive: not archived: {}: {}: {}\n", safe(missing.path),
               missing.reason, safe(missing.detail));
  }
  if (plan.files.empty()) {
    fmt::print(stderr,
               "perfscope archive: {}: none of the files its samples reach could be archived{}\n",
               safe(o.input), plan.missing.empty() ? " (it has no samples)" : "");
    return 1;
  }
  SymbolArchiveSummary summary = write_symbol_archive(plan, output);
  fmt::print(
      "perfscope archive: wrote {}: {} files and {} .build-id links, {} packed into {} "
      "({:.0f}%); samples read in {:.2f} s, archive written in {:.2f} s\n",
      safe(output), summary.files, summary.links, megabytes(summary.bytes_in),
      megabytes(summary.bytes_out),
      summary.bytes_in == 0
          ? 0.0
          : 100.0 * static_cast<double>(summary.bytes_out) / static_cast<double>(summary.bytes_in),
      reading, summary.seconds);
  if (!plan.missing.empty()) {
    fmt::print("perfscope archive: {} files the samples reach are not in it (listed above)\n",
               plan.missing.size());
  }
  fmt::print(
      "Report it anywhere with:  perfscope report -i {} --archive {}\n"
      "or for perf:              tar xf {} -C ~/.debug && perf report -i {}\n",
      safe(o.input), safe(output), safe(output), safe(o.input));
  print_partial_data_warning(profile.summary.partial_data);
  return 0;
}

}  // namespace perfscope::cli
