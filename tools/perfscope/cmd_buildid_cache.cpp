// perfscope buildid-cache: perf's build-id cache (~/.debug) managed as perf buildid-cache does,
// in perf's layout: what perfscope adds, perf report reads, and what perf adds, perfscope's
// report reads (the symbolizer looks there for a recorded file that is gone or was rebuilt).
#include <fmt/format.h>

#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "perf_config.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/build_id_cache.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

}  // namespace

BuildidCacheCommand::BuildidCacheCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "buildid-cache");
  app_->add_option("-a,--add", add_, "Files to copy into the cache (comma-separated)");
  app_->add_option("-r,--remove", remove_,
                   "Files whose present build to take out of the cache (comma-separated)");
  app_->add_option("-p,--purge", purge_,
                   "Paths whose every cached build to take out (comma-separated; the files may "
                   "be gone)");
  app_->add_flag("-P,--purge-all", purge_all_, "Empty the cache");
  app_->add_flag("-l,--list", list_, "List the cached builds: BUILD_ID PATH");
  app_->add_option("-M,--missing", missing_,
                   "The build ids of this recording's files that the cache lacks");
  app_->add_option("-u,--update", update_, "Files to copy into the cache again (comma-separated)");
  app_->add_option("-k,--kcore", kcore_, "A kcore to copy (refused: see the message)");
  app_->add_flag("-f,--force", force_, "perf's -f (kcore copies); accepted");
  app_->add_option("--debuginfod", debuginfod_,
                   "perf's debuginfod download (refused: perfscope has no debuginfod client)")
      ->expected(0, 1);
  app_->footer(
      "Examples:\n"
      "  perfscope buildid-cache --add ./app   (then report still names ./app's functions when "
      "it is rebuilt or gone)\n"
      "  perfscope buildid-cache --list\n"
      "  perfscope buildid-cache --missing perf.data");
}

int BuildidCacheCommand::run(bool verbose) {
  if (!kcore_.empty()) {
    throw std::invalid_argument(
        "--kcore: perfscope does not copy /proc/kcore into the cache (it names kernel addresses "
        "from kallsyms, which record keeps in the cache); use perf buildid-cache --kcore");
  }
  if (app_->count("--debuginfod") != 0) {
    throw std::invalid_argument(
        "--debuginfod: perfscope has no debuginfod client; fetch the files with "
        "debuginfod-find and add them with --add");
  }
  if (add_.empty() && remove_.empty() && purge_.empty() && !purge_all_ && !list_ &&
      missing_.empty() && update_.empty()) {
    throw std::invalid_argument(
        "give what to do: --add, --remove, --purge, --purge-all, --list, --missing or --update");
  }
  BuildIdCache cache(perf_config().get("buildid.dir").value_or(""));
  int status = 0;
  // perf's messages: a warning for what failed, the rest under -v.
  auto each = [&](const std::string& list, const char* doing, auto&& action) {
    for (const std::string& file : comma_list(list)) {
      try {
        action(file);
      } catch (const std::exception& error) {
        fmt::print(stderr, "perfscope buildid-cache: couldn't {} {}: {}\n", doing, file,
                   error.what());
        status = 1;
      }
    }
  };
  auto id_of = [](const std::string& file) {
    auto id = read_build_id(file);
    return id ? build_id_hex(*id) : std::string();
  };
  each(add_, "add", [&](const std::string& file) {
    bool added = cache.add(file);
    if (verbose) {
      fmt::print(stderr, "{} {} {}: {}\n", added ? "Adding" : "Already cached:", id_of(file), file,
                 "Ok");
    }
  });
  each(remove_, "remove", [&](const std::string& file) {
    bool removed = cache.remove(file);
    if (verbose) {
      fmt::print(stderr, "Removing {} {}: {}\n", id_of(file), file,
                 removed ? "Ok" : "it wasn't in the cache");
    }
  });
  each(purge_, "purge", [&](const std::string& path) {
    std::size_t removed = cache.purge(path);
    if (verbose) fmt::print(stderr, "Purging {}: {} builds removed\n", path, removed);
  });
  if (purge_all_) {
    std::size_t removed = cache.purge_all();
    if (verbose) fmt::print(stderr, "Purging all: {} builds removed\n", removed);
  }
  each(update_, "update", [&](const std::string& file) {
    cache.remove(file);
    cache.add(file);
    if (verbose) fmt::print(stderr, "Updating {} {}: Ok\n", id_of(file), file);
  });
  std::string out;
  if (!missing_.empty()) {
    PerfDataReader reader = PerfDataReader::open(missing_);
    std::set<std::string> listed;
    for (const BuildIdEntry& entry : reader.features().build_ids) {
      std::string hex = build_id_hex(entry.build_id);
      if (cache.holds(hex) || !listed.insert(hex).second) continue;
      out += fmt::format("{} {}\n", hex, entry.filename);
    }
  }
  if (list_) {
    for (const CachedBuild& build : cache.list()) {
      out += fmt::format("{} {}\n", build.build_id, build.path);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return status;
}

}  // namespace perfscope::cli
