#include "perfscope/analysis/perf_data/host_description.hpp"

#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <sstream>

#include "perfscope/analysis/symbols/vdso_image.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/trim_whitespace.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/version.hpp"

namespace perfscope {

namespace {

std::optional<std::uint64_t> clock_ns(clockid_t clock) {
  struct timespec now {};
  if (::clock_gettime(clock, &now) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// The value of the first "key : value" line of /proc/cpuinfo.
std::optional<std::string> cpuinfo_value(const std::string& cpuinfo, std::string_view key) {
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim_whitespace(line.substr(0, colon)) == key)
      return trim_whitespace(line.substr(colon + 1));
  }
  return std::nullopt;
}

// Runs of blanks squeezed to one, as perf writes CPUDESC.
std::string squeeze_blanks(const std::string& text) {
  std::string out;
  for (char c : text) {
    if ((c == ' ' || c == '\t') && !out.empty() && out.back() == ' ') continue;
    out += c == '\t' ? ' ' : c;
  }
  return out;
}

std::optional<std::string> topology_file(int cpu, const char* name) {
  auto text = sys::read_text_file("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                                  "/topology/" + name);
  if (!text) return std::nullopt;
  return trim_whitespace(*text);
}

void add_unique(std::vector<std::string>& list, const std::optional<std::string>& value) {
  if (value && std::find(list.begin(), list.end(), *value) == list.end()) list.push_back(*value);
}

}  // namespace

PerfDataFeatures describe_host(std::vector<std::string> cmdline) {
  PerfDataFeatures features;
  struct utsname names {};
  if (::uname(&names) == 0) {
    features.hostname = names.nodename;
    features.osrelease = names.release;
    features.arch = names.machine;
  }
  features.version = std::string(version_banner);
  features.cmdline = std::move(cmdline);
  // The vDSO has no file: the recording keeps its image, as perf keeps it in its build-id cache.
  if (auto vdso = this_process_vdso_file()) features.embedded_files.push_back(std::move(*vdso));

  std::vector<int> online;
  if (auto list = sys::online_cpu_list()) online = parse_cpu_list(trim_whitespace(*list));
  int max_present = online.empty() ? 0 : *std::max_element(online.begin(), online.end());
  if (auto present = sys::read_text_file("/sys/devices/system/cpu/present")) {
    auto cpus = parse_cpu_list(trim_whitespace(*present));
    if (!cpus.empty())
      max_present = std::max(max_present, *std::max_element(cpus.begin(), cpus.end()));
  }
  features.nr_cpus_available = static_cast<std::uint32_t>(max_present + 1);
  features.nr_cpus_online = static_cast<std::uint32_t>(online.size());

  if (auto cpuinfo = sys::read_text_file("/proc/cpuinfo")) {
    if (auto model = cpuinfo_value(*cpuinfo, "model name"))
      features.cpudesc = squeeze_blanks(*model);
    auto vendor = cpuinfo_value(*cpuinfo, "vendor_id");
    auto family = cpuinfo_value(*cpuinfo, "cpu family");
    auto model = cpuinfo_value(*cpuinfo, "model");
    auto stepping = cpuinfo_value(*cpuinfo, "stepping");
    if (vendor && family && model && stepping) {
      features.cpuid = *vendor + "," + *family + "," + *model + "," + *stepping;
    }
  }
  if (auto meminfo = sys::read_text_file("/proc/meminfo")) {
    if (auto total = cpuinfo_value(*meminfo, "MemTotal")) {
      features.total_mem_kb = std::stoull(*total);
    }
  }

  CpuTopology topology;
  bool have_dies = true;
  for (int cpu = 0; cpu <= max_present; ++cpu) {
    add_unique(topology.core_siblings, topology_file(cpu, "core_siblings_list"));
    auto threads = topology_file(cpu, "core_cpus_list");
    add_unique(topology.thread_siblings,
               threads ? threads : topology_file(cpu, "thread_siblings_list"));
    auto dies = topology_file(cpu, "die_cpus_list");
    if (!dies) have_dies = false;
    add_unique(topology.die_siblings, dies);
    CpuTopology::Cpu entry;
    auto number = [&](const char* name) -> std::uint32_t {
      auto text = topology_file(cpu, name);
      if (!text || text->empty()) return 0;
      long value = std::strtol(text->c_str(), nullptr, 10);
      return static_cast<std::uint32_t>(value);  // -1 (unknown) kept as perf keeps it
    };
    entry.core_id = number("core_id");
    entry.socket_id = number("physical_package_id");
    entry.die_id = number("die_id");
    topology.cpus.push_back(entry);
  }
  if (!have_dies) topology.die_siblings.clear();
  features.cpu_topology = std::move(topology);

  struct timespec resolution {};
  if (::clock_getres(CLOCK_MONOTONIC, &resolution) == 0) {
    features.clockid_res_ns = static_cast<std::uint64_t>(resolution.tv_sec) * 1000000000ULL +
                              static_cast<std::uint64_t>(resolution.tv_nsec);
  }
  return features;
}

std::optional<ClockData> clock_reference(int clockid) {
  auto before = clock_ns(CLOCK_REALTIME);
  auto clock = clock_ns(static_cast<clockid_t>(clockid));
  auto after = clock_ns(CLOCK_REALTIME);
  if (!before || !clock || !after) return std::nullopt;
  ClockData data;
  data.clockid = static_cast<std::uint32_t>(clockid);
  // (A wall clock stepped back in between leaves the first reading.)
  data.wall_clock_ns = *after >= *before ? *before + (*after - *before) / 2 : *before;
  data.clockid_time_ns = *clock;
  return data;
}

}  // namespace perfscope
