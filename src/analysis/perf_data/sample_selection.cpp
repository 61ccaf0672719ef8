#include "perfscope/analysis/perf_data/sample_selection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/cpu_list.hpp"

namespace perfscope {

namespace {

constexpr std::string_view forms =
    "perf's forms are START,STOP in seconds (either may be left out; ranges separated by "
    "blanks), A%/N (the N-th slice of A %) and A%-B% (from A % to B %), several separated by "
    "commas";

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

double parse_percent(std::string_view whole, std::string_view text) {
  text = trimmed(text);
  if (!text.ends_with('%')) {
    throw std::invalid_argument(
        fmt::format("--time {}: '{}' is not a percentage; {}", whole, text, forms));
  }
  text.remove_suffix(1);
  std::string number(text);
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || value < 0 || value > 100) {
    throw std::invalid_argument(fmt::format(
        "--time {}: '{}%' is not a percentage from 0 to 100; {}", whole, number, forms));
  }
  return value;
}

}  // namespace

std::uint64_t parse_perf_timestamp(std::string_view text) {
  text = trimmed(text);
  std::size_t dot = text.find('.');
  std::string_view seconds = text.substr(0, dot);
  std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  auto all_digits = [](std::string_view part) {
    return std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (seconds.empty() || !all_digits(seconds) || !all_digits(fraction) || fraction.size() > 9 ||
      seconds.size() > 10) {
    throw std::invalid_argument(fmt::format(
        "'{}' is not a time in seconds with up to nine decimals (e.g. 34791.372397)", text));
  }
  std::uint64_t whole = 0;
  std::from_chars(seconds.data(), seconds.data() + seconds.size(), whole);
  std::uint64_t nanoseconds = 0;
  for (std::size_t i = 0; i < 9; ++i) {
    nanoseconds = nanoseconds * 10 +
                  (i < fraction.size() ? static_cast<std::uint64_t>(fraction[i] - '0') : 0);
  }
  return whole * 1000000000ULL + nanoseconds;
}

TimeRanges TimeRanges::parse(std::string_view text,
                             std::optional<std::pair<std::uint64_t, std::uint64_t>> first_last) {
  TimeRanges result;
  std::string_view whole = trimmed(text);
  if (whole.empty()) return result;
  if (whole.find('%') != std::string_view::npos) {
    if (!first_last || first_last->second < first_last->first) {
      throw std::invalid_argument(fmt::format(
          "--time {}: a percentage needs the recording's first and last sample times, which "
          "this file does not hold (perf.data's SAMPLE_TIME feature); give START,STOP in "
          "seconds instead",
          whole));
    }
    const double length = static_cast<double>(first_last->second - first_last->first);
    auto at = [&](double percent) {
      return first_last->first + static_cast<std::uint64_t>(std::llround(length * percent / 100));
    };
    std::size_t from = 0;
    while (from <= whole.size()) {
      std::size_t comma = whole.find(',', from);
      std::string_view item = trimmed(whole.substr(
          from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
      from = comma == std::string_view::npos ? whole.size() + 1 : comma + 1;
      if (item.empty()) continue;
      if (std::size_t slash = item.find('/'); slash != std::string_view::npos) {
        double size = parse_percent(whole, item.substr(0, slash));
        std::string_view index_text = trimmed(item.substr(slash + 1));
        unsigned index = 0;
        auto parsed =
            std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
        if (parsed.ec != std::errc() || parsed.ptr != index_text.data() + index_text.size() ||
            index == 0 || size <= 0 || size * index > 100.0 + 1e-9) {
          throw std::invalid_argument(fmt::format(
              "--time {}: '{}' is no slice of the recording (A%/N: N from 1 to 100/A); {}", whole,
              item, forms));
        }
        result.ranges_.emplace_back(at(size * (index - 1)), at(size * index));
      } else if (std::size_t dash = item.find('-'); dash != std::string_view::npos) {
        double low = parse_percent(whole, item.substr(0, dash));
        double high = parse_percent(whole, item.substr(dash + 1));
        if (high < low) {
          throw std::invalid_argument(
              fmt::format("--time {}: '{}' ends before it starts; {}", whole, item, forms));
        }
        result.ranges_.emplace_back(at(low), at(high));
      } else {
        throw std::invalid_argument(
            fmt::format("--time {}: '{}' is neither A%/N nor A%-B%; {}", whole, item, forms));
      }
    }
    return result;
  }
  // Absolute ranges, separated by blanks.
  std::size_t from = 0;
  while (from < whole.size()) {
    std::size_t blank = whole.find(' ', from);
    std::string_view item =
        whole.substr(from, blank == std::string_view::npos ? std::string_view::npos : blank - from);
    from = blank == std::string_view::npos ? whole.size() : blank + 1;
    if (item.empty()) continue;
    std::size_t comma = item.find(',');
    if (comma == std::string_view::npos) {
      throw std::invalid_argument(fmt::format(
          "--time {}: '{}' has no comma between START and STOP; {}", whole, item, forms));
    }
    std::string_view start_text = item.substr(0, comma), stop_text = item.substr(comma + 1);
    try {
      std::uint64_t start = start_text.empty() ? 0 : parse_perf_timestamp(start_text);
      std::uint64_t stop = stop_text.empty() ? ~std::uint64_t{0} : parse_perf_timestamp(stop_text);
      if (stop < start) {
        throw std::invalid_argument(fmt::format("'{}' ends before it starts", item));
      }
      result.ranges_.emplace_back(start, stop);
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(fmt::format("--time {}: {}; {}", whole, error.what(), forms));
    }
  }
  return result;
}

std::pair<std::uint64_t, std::uint64_t> TimeRanges::span() const noexcept {
  if (ranges_.empty()) return {0, ~std::uint64_t{0}};
  std::pair<std::uint64_t, std::uint64_t> all = ranges_.front();
  for (const auto& [start, end] : ranges_) {
    all.first = std::min(all.first, start);
    all.second = std::max(all.second, end);
  }
  return all;
}

std::vector<bool> cpu_selection(std::string_view list, const PerfDataReader& reader) {
  bool has_cpu = std::any_of(reader.events().begin(), reader.events().end(), [](const auto& event) {
    return (event.attr.sample_type & abi::sample_format::cpu) != 0;
  });
  if (!has_cpu) {
    throw std::invalid_argument(fmt::format(
        "--cpu {}: the recording's samples carry no CPU (record with -a, -C or --sample-cpu); "
        "leave out --cpu",
        list));
  }
  std::vector<bool> cpus;
  for (int cpu : parse_cpu_list(list)) {
    auto index = static_cast<std::size_t>(cpu);
    if (cpus.size() <= index) cpus.resize(index + 1, false);
    cpus[index] = true;
  }
  return cpus;
}

std::vector<std::uint32_t> parse_task_id_list(std::string_view option, std::string_view text) {
  std::vector<std::uint32_t> ids;
  for (const std::string& item : split_comma_list(text)) {
    std::uint32_t id = 0;
    auto parsed = std::from_chars(item.data(), item.data() + item.size(), id);
    if (parsed.ec != std::errc() || parsed.ptr != item.data() + item.size()) {
      throw std::invalid_argument(fmt::format(
          "{} {}: '{}' is not a process or thread id (a whole number)", option, text, item));
    }
    ids.push_back(id);
  }
  return ids;
}

std::vector<std::string> split_comma_list(std::string_view text) {
  std::vector<std::string> items;
  std::size_t from = 0;
  while (from <= text.size()) {
    std::size_t comma = text.find(',', from);
    std::string_view item = trimmed(
        text.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  return items;
}

}  // namespace perfscope
