#include "perfscope/core/cpu_list.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {
int parse_cpu(std::string_view text, std::string_view whole) {
  int value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || value < 0) {
    throw std::invalid_argument(
        fmt::format("bad CPU '{}' in CPU list '{}' (expected e.g. 0-3,8)", text, whole));
  }
  return value;
}
}  // namespace

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (part.empty()) continue;
    auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_cpu(part, text));
      continue;
    }
    int first = parse_cpu(part.substr(0, dash), text);
    int last = parse_cpu(part.substr(dash + 1), text);
    if (last < first) {
      throw std::invalid_argument(fmt::format("CPU range '{}' in '{}' runs backwards", part, text));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  if (cpus.empty()) throw std::invalid_argument(fmt::format("CPU list '{}' is empty", text));
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> online_cpus() {
  if (auto list = sys::online_cpu_list()) {
    try {
      return parse_cpu_list(*list);
    } catch (const std::invalid_argument&) {
    }
  }
  long count = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<int> cpus;
  for (long i = 0; i < std::max(count, 1L); ++i) cpus.push_back(static_cast<int>(i));
  return cpus;
}

}  // namespace perfscope
