#include "record_perf_options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <charconv>
#include <string_view>

#include "command_line.hpp"
#include "commands.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::cli {

std::uint64_t parse_frequency(const std::string& text, const char* option) {
  if (text == "max") {
    auto rate = sys::read_sysctl("perf_event_max_sample_rate");
    if (!rate || *rate <= 0) {
      throw CLI::ValidationError(fmt::format("{} max", option),
                                 "cannot read kernel.perf_event_max_sample_rate");
    }
    return static_cast<std::uint64_t>(*rate);
  }
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value == 0) {
    throw CLI::ValidationError(option, fmt::format("'{}' is not a rate: give samples per second "
                                                   "(a positive integer) or max",
                                                   text));
  }
  return value;
}

std::pair<std::size_t, std::size_t> parse_mmap_pages(const std::string& text,
                                                     std::string& rounded) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto pages = [&](std::string_view part) -> std::size_t {
    if (part.empty()) return 0;
    std::size_t value = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    std::string_view unit(end, static_cast<std::size_t>(part.data() + part.size() - end));
    std::size_t scale = 0;  // bytes per unit; 0: a page count
    if (unit == "B" || unit == "b") scale = 1;
    if (unit == "K" || unit == "k") scale = std::size_t{1} << 10;
    if (unit == "M" || unit == "m") scale = std::size_t{1} << 20;
    if (unit == "G" || unit == "g") scale = std::size_t{1} << 30;
    if (error != std::errc() || end == part.data() || (!unit.empty() && scale == 0) ||
        value > (std::size_t{1} << 40) / std::max<std::size_t>(scale, 1)) {
      throw CLI::ValidationError(
          "-m", fmt::format("'{}' is not a number of pages or a size; give DATA or DATA,AUX "
                            "(e.g. -m 128, -m 16M or -m 128,1024)",
                            part));
    }
    std::size_t count = scale == 0 ? value : (value * scale + page - 1) / page;
    if (value != 0 && count == 0) count = 1;
    if (count != 0 && !std::has_single_bit(count)) {
      std::size_t up = std::bit_ceil(count);
      rounded += fmt::format("{}-m {}: rounded up to {} pages ({} KiB), as perf does",
                             rounded.empty() ? "" : "; ", part, up, up * page / 1024);
      count = up;
    }
    return count;
  };
  std::string_view whole = text;
  std::size_t comma = whole.find(',');
  if (comma == std::string_view::npos) return {pages(whole), 0};
  return {pages(whole.substr(0, comma)), pages(whole.substr(comma + 1))};
}

void add_perf_record_options(CLI::App& app, RecordOptions& options) {
  app.add_flag("-T,--timestamp", options.timestamps,
               "Sample timestamps (perf's -T; perfscope records them always)");
  app.add_flag("-d,--data", options.sample_addr,
               "Record the data address of each sample (PERF_SAMPLE_ADDR: memory events, page "
               "faults); script's addr field prints it");
  app.add_flag("-q,--quiet", options.quiet,
               "No summary and no notes on stderr (errors and warnings of lost data still)");
  app.add_flag("-N,--no-buildid-cache", options.no_buildid_cache,
               "Do not copy the kernel's symbols into the build-id cache (~/.debug)");
  app.add_flag("-B,--no-buildid", options.no_buildid,
               "Do not record the build ids of the files samples hit (reports then cannot tell "
               "a rebuilt file from the recorded one)");
  app.add_flag("--switch-events", options.switch_events,
               "Record context-switch records (PERF_RECORD_SWITCH/SWITCH_CPU_WIDE): script shows "
               "them");
  add_refused_option(
      app, "-z,--compression-level",
      "perf's zstd-compressed records: not written by perfscope (see the error for why)", false,
      "perfscope writes its records uncompressed (it reads perf's compressed files): leave "
      "out -z, and compress the finished file for storage (zstd perf.data; unpack it before "
      "reading)");
  add_refused_option(
      app, "-s,--stat", "perf's per-thread read counts: use 'perfscope stat --per-thread'", false,
      "per-thread counts in the recording (PERF_SAMPLE_READ with inherit_stat) are not "
      "written by perfscope record: count per thread with 'perfscope stat --per-thread -- "
      "COMMAND'");
  add_refused_option(
      app, "--user-regs", "perf's user register samples: not written by perfscope", true,
      "perfscope record samples user registers only for --call-graph dwarf (the unwinder's "
      "registers); a chosen register set is not supported: leave out --user-regs");
}

}  // namespace perfscope::cli
