// perfscope data convert --to-json: a recording's samples in perf's JSON layout (perf data
// convert's: the file's headers, then each sample's time, task, CPU, comm, call chain with
// symbol and file, and a tracepoint's fields as libtraceevent prints them), byte for byte the
// indentation perf writes, so that what reads perf's output reads perfscope's.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "partial_data.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/safe_text.hpp"
#include "script_text_printer.hpp"
#include "script_tracepoints.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;

// perf's JSON text: values after a newline and `depth` tabs, a comma before all but a
// container's first; strings with RFC 8259's escapes (perf's data-convert-json.c layout; the
// exporters' TextSink writes compact JSON, not this).
class PerfJsonText {
 public:
  explicit PerfJsonText(std::FILE* out) : out_(out) {}
  void delimit(bool comma, int depth) {
    if (comma) text_.push_back(',');
    text_.push_back('\n');
    text_.append(static_cast<std::size_t>(depth), '\t');
  }
  void raw(std::string_view text) { text_.append(text); }
  // Names are bytes the recorded programs chose: invalid UTF-8 becomes U+FFFD, so that every
  // JSON parser reads the file (perf writes the bytes as they are).
  void string(std::string_view value) {
    std::string repaired;
    if (!is_valid_utf8(value)) {
      repaired = valid_utf8(value);
      value = repaired;
    }
    text_.push_back('"');
    for (char c : value) {
      switch (c) {
        case '"': text_.append("\\\""); break;
        case '\\': text_.append("\\\\"); break;
        case '\b': text_.append("\\b"); break;
        case '\f': text_.append("\\f"); break;
        case '\n': text_.append("\\n"); break;
        case '\r': text_.append("\\r"); break;
        case '\t': text_.append("\\t"); break;
        default:
          if (static_cast<unsigned char>(c) <= 0x1f) {
            fmt::format_to(std::back_inserter(text_), "\\u{:04x}", static_cast<unsigned>(c));
          } else {
            text_.push_back(c);
          }
      }
    }
    text_.push_back('"');
  }
  void key(bool comma, int depth, std::string_view name) {
    delimit(comma, depth);
    string(name);
    text_.append(": ");
  }
  void key_string(bool comma, int depth, std::string_view name, std::string_view value) {
    key(comma, depth, name);
    string(value);
  }
  template <typename Number>
  void key_number(bool comma, int depth, std::string_view name, Number value) {
    key(comma, depth, name);
    fmt::format_to(std::back_inserter(text_), "{}", value);
  }
  // Writes out what has gathered once it is a block (checked once per sample).
  void flush_full() {
    if (text_.size() >= block) flush();
  }
  void flush() {
    written_ += std::fwrite(text_.data(), 1, text_.size(), out_);
    text_.clear();
  }
  std::uint64_t written() const noexcept { return written_; }

 private:
  static constexpr std::size_t block = 1 << 20;
  std::FILE* out_;
  std::string text_;
  std::uint64_t written_ = 0;
};

// perf's short name of a file: the path's last part; bracketed names ([kernel.kallsyms],
// [vdso], a module's [ext4]) as they are.
std::string_view short_dso_name(std::string_view dso) {
  if (dso.starts_with('[')) return dso;
  std::size_t slash = dso.rfind('/');
  return slash == std::string_view::npos ? dso : dso.substr(slash + 1);
}

void write_headers(PerfJsonText& json, const PerfDataReader& reader, const std::string& input) {
  const auto& header = reader.header();
  const auto& features = reader.features();
  json.key_number(false, 2, "header-version", 1);
  struct ::stat status {};
  if (::stat(input.c_str(), &status) == 0) {
    std::tm utc{};
    ::gmtime_r(&status.st_mtime, &utc);
    char stamp[64];
    std::strftime(stamp, sizeof stamp, "%FT%TZ", &utc);
    json.key_string(true, 2, "captured-on", stamp);
  }
  json.key_number(true, 2, "data-offset", header.data.offset);
  json.key_number(true, 2, "data-size", header.data.size);
  json.key_number(true, 2, "feat-offset", header.data.offset + header.data.size);
  json.key_string(true, 2, "hostname", features.hostname.value_or(""));
  json.key_string(true, 2, "os-release", features.osrelease.value_or(""));
  json.key_string(true, 2, "arch", features.arch.value_or(""));
  if (features.cpudesc) json.key_string(true, 2, "cpu-desc", *features.cpudesc);
  json.key_string(true, 2, "cpuid", features.cpuid.value_or(""));
  json.key_number(true, 2, "nrcpus-online", features.nr_cpus_online.value_or(0));
  json.key_number(true, 2, "nrcpus-avail", features.nr_cpus_available.value_or(0));
  if (const auto& clock = features.clock_data) {
    json.key_number(true, 2, "clockid", clock->clockid);
    json.key_number(true, 2, "clock-time", clock->clockid_time_ns);
    json.key_number(true, 2, "real-time", clock->wall_clock_ns);
  }
  json.key_string(true, 2, "perf-version", features.version.value_or(""));
  json.key(true, 2, "cmdline");
  json.raw("[");
  if (features.cmdline) {
    for (std::size_t i = 0; i < features.cmdline->size(); ++i) {
      json.delimit(i != 0, 3);
      json.string((*features.cmdline)[i]);
    }
  }
  json.delimit(false, 2);
  json.raw("]");
}

// One sample at a time, in time order, named by a resolver that follows the recording's tasks.
class SampleWriter {
 public:
  SampleWriter(const PerfDataReader& reader, PerfJsonText& json, TimeRanges times)
      : reader_(reader),
        json_(json),
        tracepoints_(reader),
        resolver_(script_text::resolver_options(short_names())),
        times_(std::move(times)) {
    script_text::add_recorded_build_ids(resolver_, reader);
    for (const auto& event : reader.events()) any_cpu_ |= (event.attr.sample_type & sf::cpu) != 0;
    for (const auto& note : tracepoints_.notes()) fmt::print(stderr, "perfscope: note: {}\n", note);
  }

  void visit(const PerfDataRecord& record) {
    const auto& config = reader_.events()[record.event].config;
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      if (record.view.type() < 64) resolver_.observe(record.view, config);
      return;
    }
    DecodeError error;
    if (!decode_sample(record.view, config, sample_, error)) {
      ++undecodable_;
      return;
    }
    if (!times_.empty() && sample_.has(sf::time) && !times_.contains(sample_.time)) {
      ++skipped_;
      return;
    }
    ++samples_;
    json_.delimit(samples_ > 1, 2);
    json_.raw("{");
    json_.key_number(false, 3, "timestamp", static_cast<std::int64_t>(sample_.time));
    json_.key_number(true, 3, "pid", static_cast<std::int32_t>(sample_.pid));
    json_.key_number(true, 3, "tid", static_cast<std::int32_t>(sample_.tid));
    if (any_cpu_) json_.key_number(true, 3, "cpu", static_cast<std::int32_t>(sample_.cpu));
    json_.key_string(true, 3, "comm", resolver_.maps().comm_of(sample_.tid));
    json_.key(true, 3, "callchain");
    json_.raw("[");
    auto cpumode =
        static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
    resolver_.walk(sample_, cpumode, addresses_, config.branch_sample_type);
    bool first = true;
    for (const StackAddress& address : addresses_) {
      json_.delimit(!first, 4);
      first = false;
      json_.raw("{");
      json_.key(false, 5, "ip");
      fmt::format_to(std::back_inserter(scratch_), "\"{:#x}\"", address.ip);
      json_.raw(scratch_);
      scratch_.clear();
      const ResolvedAddress& where = resolver_.resolve(sample_.pid, address);
      if (!where.symbol.symbol.empty()) {
        json_.key_string(true, 5, "symbol", where.symbol.symbol);
        if (!where.dso.empty()) json_.key_string(true, 5, "dso", short_dso_name(where.dso));
      }
      json_.delimit(false, 4);
      json_.raw("}");
    }
    json_.delimit(false, 3);
    json_.raw("]");
    if (sample_.has(sf::raw) && tracepoints_.decodes(record.event)) {
      for (const auto& [name, value] : tracepoints_.printed_fields(record.event, sample_.raw)) {
        json_.key_string(true, 3, name, value);
      }
    }
    json_.delimit(false, 2);
    json_.raw("}");
    json_.flush_full();
  }

  std::uint64_t samples() const noexcept { return samples_; }
  std::uint64_t skipped() const noexcept { return skipped_; }
  std::uint64_t undecodable() const noexcept { return undecodable_; }

 private:
  // perf's names: the function without its parameter list.
  static SymbolizerOptions short_names() {
    SymbolizerOptions symbols;
    symbols.parameter_lists = false;
    return symbols;
  }

  const PerfDataReader& reader_;
  PerfJsonText& json_;
  ScriptTracepoints tracepoints_;
  StackResolver resolver_;
  TimeRanges times_;
  bool any_cpu_ = false;
  SampleRecord sample_;
  std::vector<StackAddress> addresses_;
  std::string scratch_;
  std::uint64_t samples_ = 0, skipped_ = 0, undecodable_ = 0;
};

}  // namespace

DataCommand::DataCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "data");
  app_->require_subcommand(1);
  convert_ = app_->add_subcommand("convert", "Convert a perf.data file to JSON (perf's layout)");
  convert_->add_option("-i,--input", input_, "Input file (default perf.data)");
  convert_->add_option("--to-json", to_json_, "Write the samples as JSON to this file");
  convert_->add_option("--to-ctf", to_ctf_,
                       "CTF (refused: perfscope is built without babeltrace; use perf)");
  convert_->add_flag("-f,--force", force_, "Overwrite the output file");
  convert_->add_flag("--all", all_, "All records, not only samples (refused for JSON, as perf)");
  convert_->add_flag("--tod", time_of_day_, "Wall-clock times (refused for JSON, as perf)");
  convert_->add_option("--time", time_,
                       "Only samples in these times: START,STOP in seconds, A%/N, A%-B% (as "
                       "script --time)");
  app_->footer(
      "Example:\n"
      "  perfscope data convert --to-json perf.json -i perf.data");
}

int DataCommand::run() {
  if (!to_ctf_.empty()) {
    throw std::invalid_argument(
        "--to-ctf: perfscope is built without babeltrace, so it writes no CTF; use --to-json, "
        "or perf data convert --to-ctf");
  }
  if (to_json_.empty()) {
    throw std::invalid_argument("give the output: --to-json FILE (perf's --to-ctf is perf's)");
  }
  if (all_) throw std::invalid_argument("--all is not supported for JSON output (nor by perf)");
  if (time_of_day_) {
    throw std::invalid_argument("--tod is not supported for JSON output (nor by perf)");
  }
  PerfDataReader reader = PerfDataReader::open(input_);
  for (const auto& note : reader.notes()) fmt::print(stderr, "perfscope: {}: {}\n", input_, note);
  TimeRanges times = TimeRanges::parse(time_, reader.features().sample_time);

  int fd =
      ::open(to_json_.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | (force_ ? O_TRUNC : O_EXCL), 0666);
  if (fd < 0) {
    if (errno == EEXIST) {
      throw std::runtime_error(
          fmt::format("{} exists: give -f (--force) to overwrite it", to_json_));
    }
    throw std::runtime_error(fmt::format("cannot write {}: {}", to_json_, std::strerror(errno)));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(::fdopen(fd, "w"), &std::fclose);
  if (!out) {
    ::close(fd);
    throw std::runtime_error(fmt::format("cannot write {}: {}", to_json_, std::strerror(errno)));
  }
  PerfJsonText json(out.get());
  json.raw("{");
  json.delimit(false, 1);
  json.raw("\"linux-perf-json-version\": 1");
  json.delimit(true, 1);
  json.raw("\"headers\": {");
  write_headers(json, reader, input_);
  json.delimit(false, 1);
  json.raw("}");
  json.delimit(true, 1);
  json.raw("\"samples\": [");
  SampleWriter samples(reader, json, std::move(times));
  auto error =
      reader.for_each_record_ordered([&](const PerfDataRecord& record) { samples.visit(record); });
  json.delimit(false, 1);
  json.raw("]");
  json.delimit(false, 0);
  json.raw("}\n");
  json.flush();
  std::uint64_t written = json.written();
  if (std::fflush(out.get()) != 0 || std::ferror(out.get()) != 0) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", to_json_, std::strerror(errno)));
  }

  fmt::print(stderr, "[ perfscope data convert: Converted '{}' into JSON data '{}' ]\n", input_,
             to_json_);
  fmt::print(stderr, "[ perfscope data convert: Converted and wrote {:.3f} MB ({} samples) ]\n",
             static_cast<double>(written) / 1024.0 / 1024.0, samples.samples());
  if (samples.skipped() != 0) {
    fmt::print(stderr, "[ perfscope data convert: Skipped {} samples ]\n", samples.skipped());
  }
  if (samples.undecodable() != 0) {
    fmt::print(stderr, "perfscope: {} samples could not be decoded and were left out\n",
               samples.undecodable());
  }
  if (error) print_partial_data_warning(reader, *error);
  return 0;
}

}  // namespace perfscope::cli
