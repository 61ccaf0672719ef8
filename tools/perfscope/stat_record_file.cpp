#include "stat_record_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/host_description.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/perf_data/stat_records.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/reading.hpp"

namespace perfscope::cli {

namespace {

// perf's ids of the file's counters: one per event, numbered from 1 (the kernel's ids of the
// counting session's many fds are not the file's business).
std::uint64_t event_id(std::size_t event) { return event + 1; }

}  // namespace

StatRecordWriter::StatRecordWriter(const std::string& path,
                                   const std::vector<EventGroupSpec>& groups,
                                   std::uint64_t interval_ms)
    : path_(path), interval_ms_(interval_ms) {
  if (path == "-") {
    throw std::invalid_argument("stat record writes a file: give -o FILE, not standard output");
  }
  std::vector<PerfDataEvent> events;
  for (const auto& group : groups) {
    for (const auto& spec : group.events) {
      PerfDataEvent event;
      event.attr = spec.attr.raw();
      event.attr.read_format |=
          abi::read_format::total_time_enabled | abi::read_format::total_time_running;
      event.name = spec.name.empty() ? spec.text : spec.name;
      event.ids = {event_id(events.size())};
      events.push_back(std::move(event));
    }
  }
  writer_ = std::make_unique<PerfDataWriter>(path, std::move(events));
}

StatRecordWriter::~StatRecordWriter() = default;

void StatRecordWriter::begin(std::int32_t pid, const std::string& comm) {
  std::vector<StatThread> threads{{pid, comm}};
  std::vector<std::int32_t> cpus{-1};
  writer_->append(encode_thread_map(threads));
  writer_->append(encode_cpu_map(cpus));
  StatConfig config;
  config.aggregation = StatAggregation::global;
  config.interval_ms = interval_ms_;
  writer_->append(encode_stat_config(config));
  writer_->end_round();
}

void StatRecordWriter::round(const std::vector<EventCount>& counts, bool final,
                             std::uint64_t time_ns) {
  for (std::size_t i = 0; i < counts.size(); ++i) {
    StatCounter counter;
    counter.id = event_id(i);
    counter.cpu = 0xffffffffu;  // the CPU (not an index): -1, any CPU, as the CPU map says
    counter.value = counts[i].reading.value;
    counter.enabled = counts[i].reading.enabled;
    counter.running = counts[i].reading.running;
    writer_->append(encode_stat(counter));
  }
  StatRound round;
  round.type = final ? StatRound::final : StatRound::interval;
  round.time = time_ns;
  writer_->append(encode_stat_round(round));
  writer_->end_round();
}

void StatRecordWriter::finish() {
  PerfDataFeatures features = describe_host(own_command_line());
  features.stat_file = true;
  writer_->finish(features);
}

void report_stat_file(const std::string& path, std::FILE* out, StatFormat format,
                      std::string_view separator) {
  PerfDataReader reader = PerfDataReader::open(path);
  const auto& present = reader.features().present;
  if (std::find(present.begin(), present.end(), perf_data::bit(perf_data::Feature::stat)) ==
      present.end()) {
    throw std::runtime_error(
        fmt::format("{} holds no stat record counts (record them with stat record -- COMMAND); "
                    "its samples are report's",
                    path));
  }
  const auto& events = reader.events();
  std::vector<EventCount> totals(events.size()), previous(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    totals[i].name = events[i].name;
    totals[i].unit = events[i].unit;
    totals[i].scale = events[i].scale.value_or(1.0);
  }
  // Each counter's latest cumulative reading per CPU and thread, added up at each round.
  std::vector<std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, Reading>>> latest(
      events.size());
  StatConfig config;
  bool first_interval = true;
  std::uint64_t previous_time = 0;
  StatResult result;
  result.runs = 1;
  bool final_seen = false;
  auto event_of = [&](std::uint64_t id) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (std::find(events[i].ids.begin(), events[i].ids.end(), id) != events[i].ids.end())
        return i;
    }
    return events.size();
  };
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    auto payload = record.view.bytes.subspan(sizeof(abi::RecordHeader));
    std::uint32_t type = record.view.type();
    if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_config)) {
      if (auto decoded = decode_stat_config(payload)) config = *decoded;
    } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat)) {
      auto counter = decode_stat(payload);
      if (!counter) return;
      std::size_t event = event_of(counter->id);
      if (event == events.size()) return;
      auto key = std::make_pair(counter->cpu, counter->thread);
      auto& entries = latest[event];
      auto at = std::find_if(entries.begin(), entries.end(),
                             [&](const auto& entry) { return entry.first == key; });
      Reading reading;
      reading.value = counter->value;
      reading.enabled = counter->enabled;
      reading.running = counter->running;
      if (at == entries.end()) {
        entries.emplace_back(key, reading);
      } else {
        at->second = reading;
      }
    } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_round)) {
      auto round = decode_stat_round(payload);
      if (!round) return;
      for (std::size_t i = 0; i < events.size(); ++i) {
        Reading sum;
        for (const auto& [key, reading] : latest[i]) {
          sum.value += reading.value;
          sum.enabled += reading.enabled;
          sum.running += reading.running;
        }
        totals[i].reading = sum;
        totals[i].scaled = scale(sum);
      }
      if (round->type == StatRound::final) {
        final_seen = true;
        result.elapsed_ns.add(static_cast<double>(round->time));
        result.elapsed_values_ns.push_back(static_cast<double>(round->time));
        return;
      }
      std::vector<EventCount> delta = totals;
      for (std::size_t i = 0; i < delta.size(); ++i) {
        delta[i].reading = totals[i].reading.since(previous[i].reading);
        delta[i].scaled = scale_delta(delta[i].reading, totals[i].reading);
      }
      print_stat_interval(out, format, static_cast<double>(round->time) / 1e9, delta,
                          static_cast<double>(round->time - previous_time), first_interval,
                          separator);
      first_interval = false;
      previous = totals;
      previous_time = round->time;
    }
  });
  if (error) throw *error;
  // perf stat record -I writes intervals alone, no final round: perf stat report prints them
  // and no totals.
  if (config.interval_ms != 0 && !final_seen) return;
  if (!final_seen) {
    throw std::runtime_error(fmt::format(
        "{} ends before its final counts (the recording was cut short): the intervals above are "
        "all it holds",
        path));
  }
  result.counts = totals;
  result.per_event.resize(totals.size());
  result.per_event_values.resize(totals.size());
  for (std::size_t i = 0; i < totals.size(); ++i) {
    if (totals[i].scaled.status != CountStatus::not_counted) {
      result.per_event[i].add(totals[i].scaled.value);
      result.per_event_values[i].push_back(totals[i].scaled.value);
    }
  }
  // perf's header names the recording's whole command line ("'perf stat record -- ls'"); the
  // counted command (after "--") is what the run's times are of.
  std::string words;
  if (const auto& cmdline = reader.features().cmdline) {
    for (const auto& word : *cmdline) words += (words.empty() ? "" : " ") + word;
    auto dash = std::find(cmdline->begin(), cmdline->end(), std::string("--"));
    if (dash != cmdline->end()) result.command.assign(dash + 1, cmdline->end());
  }
  result.target = fmt::format("'{}'", words.empty() ? std::string("system wide") : words);
  if (config.interval_ms == 0 || format == StatFormat::text) {
    print_stat(out, format, result, separator);
  }
}

}  // namespace perfscope::cli
