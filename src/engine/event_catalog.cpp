#include "perfscope/engine/event_catalog.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_names.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/engine/event_opener.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;

std::string_view category_name(EventCategory category) noexcept {
  switch (category) {
    case EventCategory::hardware: return "hardware";
    case EventCategory::software: return "software";
    case EventCategory::cache: return "cache";
    case EventCategory::pmu: return "pmu";
    case EventCategory::tracepoint: return "tracepoint";
    case EventCategory::breakpoint: return "breakpoint";
    case EventCategory::probe: return "probe";
  }
  return "";
}

std::string_view open_check_name(OpenCheck check) noexcept {
  switch (check) {
    case OpenCheck::opens: return "yes";
    case OpenCheck::fails: return "no";
    case OpenCheck::not_probed: return "not probed";
  }
  return "";
}

bool catalog_pattern_matches(std::string_view pattern, std::string_view name,
                             std::string_view alias) {
  if (pattern.empty()) return true;
  auto one = [&](std::string_view candidate) {
    if (candidate.empty()) return false;
    if (pattern.find_first_of("*?[") == std::string_view::npos) {
      return candidate.find(pattern) != std::string_view::npos;
    }
    return ::fnmatch(std::string(pattern).c_str(), std::string(candidate).c_str(), 0) == 0;
  };
  return one(name) || one(alias);
}

namespace {

struct Described {
  std::string_view name;
  std::string_view description;
};

// perf's meanings of the generic events (perf_event_open(2)).
constexpr std::array generic_descriptions{
    Described{"cycles", "CPU cycles (beware of frequency scaling)"},
    Described{"instructions", "retired instructions"},
    Described{"cache-references", "cache accesses, usually the last-level cache"},
    Described{"cache-misses", "cache misses, usually the last-level cache"},
    Described{"branches", "retired branch instructions"},
    Described{"branch-misses", "mispredicted branch instructions"},
    Described{"bus-cycles", "bus cycles, which can differ from total cycles"},
    Described{"stalled-cycles-frontend", "stalled cycles during issue"},
    Described{"stalled-cycles-backend", "stalled cycles during retirement"},
    Described{"ref-cycles", "total cycles, not affected by CPU frequency scaling"},
    Described{"cpu-clock", "the CPU clock, a high-resolution per-CPU timer (ns)"},
    Described{"task-clock", "clock time the task ran on a CPU (ns)"},
    Described{"page-faults", "page faults"},
    Described{"context-switches", "context switches"},
    Described{"cpu-migrations", "times the task moved to another CPU"},
    Described{"minor-faults", "page faults served without disk I/O"},
    Described{"major-faults", "page faults that needed disk I/O"},
    Described{"alignment-faults", "unaligned accesses the kernel fixed up"},
    Described{"emulation-faults", "unimplemented instructions the kernel emulated"},
    Described{"dummy", "counts nothing; carries side-band records"},
    Described{"bpf-output", "output of BPF programs to perf buffers"},
    Described{"cgroup-switches", "context switches to a task of another cgroup"},
};

std::string describe_generic(std::string_view name) {
  for (const auto& entry : generic_descriptions) {
    if (entry.name == name) return std::string(entry.description);
  }
  return {};
}

std::string describe_cache(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> caches{{
      {"L1-dcache", "level-1 data cache"},
      {"L1-icache", "level-1 instruction cache"},
      {"LLC", "last-level cache"},
      {"dTLB", "data TLB"},
      {"iTLB", "instruction TLB"},
      {"branch", "branch prediction unit"},
      {"node", "local memory (NUMA node) accesses"},
  }};
  for (const auto& [prefix, what] : caches) {
    if (!name.starts_with(prefix)) continue;
    std::string_view rest = name.substr(prefix.size() + 1);
    std::string op = rest.starts_with("load")    ? "loads"
                     : rest.starts_with("store") ? "stores"
                                                 : "prefetches";
    bool misses = rest.find("misses") != std::string_view::npos;
    return fmt::format("{} {}{}", what, op, misses ? " that miss" : "");
  }
  return {};
}

std::string describe_errno(int errnum) {
  return fmt::format("{} ({})", errno_name(errnum), std::strerror(errnum));
}

// Opens the attr once, disabled, to see whether this machine counts it, with the fallbacks a
// session would use (EventOpener: user space only where the kernel part is refused); uncore PMUs
// (with a cpumask) count per CPU only.
void probe(CatalogEvent& event, EventAttr attr, const Pmu* pmu) {
  attr.set_flag(flag::disabled);
  OpenSite site;
  if (pmu && !pmu->cpumask.empty()) {
    auto cpus = parse_cpu_list(pmu->cpumask);
    if (!cpus.empty()) {
      site.pid = -1;
      site.cpu = cpus.front();
    }
  }
  site.name = event.name;
  EventOpener opener;  // one per probe: a fallback one event needed is not the next one's
  int errnum = 0;
  try {
    OpenOutcome outcome = opener.open(attr, site);
    if (outcome.status == OpenStatus::opened) {
      event.open = OpenCheck::opens;
      return;
    }
    errnum = outcome.errnum;
  } catch (const Error& error) {
    errnum = error.errnum();
  }
  event.open = OpenCheck::fails;
  event.open_error = describe_errno(errnum);
}

// A function of this program for the uprobe probe: its file offset comes from /proc/self/maps.
[[gnu::noinline]] int uprobe_probe_target(int value) {
  asm volatile("" : "+r"(value));
  return value + 1;
}

struct ProbePlace {
  std::string path;
  std::uint64_t offset = 0;
};

std::optional<ProbePlace> own_function_place() {
  auto address = reinterpret_cast<std::uintptr_t>(&uprobe_probe_target);
  auto maps = sys::read_text_file("/proc/self/maps");
  if (!maps) return std::nullopt;
  std::size_t at = 0;
  while (at < maps->size()) {
    std::size_t end = maps->find('\n', at);
    if (end == std::string::npos) end = maps->size();
    std::string line = maps->substr(at, end - at);
    at = end + 1;
    unsigned long long start = 0, stop = 0, offset = 0;
    char permissions[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &stop, permissions,
                    &offset, &path_at) < 4) {
      continue;
    }
    if (address < start || address >= stop || path_at <= 0) continue;
    std::string path = line.substr(static_cast<std::size_t>(path_at));
    if (path.empty() || path[0] != '/') return std::nullopt;
    return ProbePlace{path, address - start + offset};
  }
  return std::nullopt;
}

struct ProbeForm {
  std::string_view pmu;
  std::string_view name;
  std::string_view description;
};
constexpr std::array probe_forms{
    ProbeForm{"uprobe", "uprobe:/path/to/binary:symbol[+offset]",
              "function entry in a program or library (or uprobe:/path:0xFILE_OFFSET)"},
    ProbeForm{"uprobe", "uretprobe:/path/to/binary:symbol[+offset]",
              "function return in a program or library"},
    ProbeForm{"kprobe", "kprobe:function[+offset]", "kernel function entry (or kprobe:0xADDRESS)"},
    ProbeForm{"kprobe", "kretprobe:function", "kernel function return"},
};

class CatalogBuilder {
 public:
  explicit CatalogBuilder(const CatalogOptions& options)
      : options_(options),
        pmus_(options.pmus ? *options.pmus : PmuRegistry::system()),
        tracefs_root_(options.tracefs_root) {}

  std::vector<CatalogEvent> build() {
    add_generic(hardware_event_names(), EventCategory::hardware);
    add_generic(software_event_names(), EventCategory::software);
    for (const auto& name : hw_cache_event_names()) {
      if (!selected(name)) continue;
      CatalogEvent event;
      event.category = EventCategory::cache;
      event.name = name;
      auto attr = lookup_generic_event(name);
      event.encoding = fmt::format("PERF_TYPE_HW_CACHE/{:#x}", attr->config());
      event.description = describe_cache(name);
      if (options_.probe) probe(event, *attr, nullptr);
      events_.push_back(std::move(event));
    }
    add_pmu_aliases();
    auto tracepoints = tracepoint_names();
    std::size_t slow = tracepoints.size();
    for (const auto& form : probe_forms)
      slow += form.pmu == "uprobe" && selected(form.name, form.pmu);
    probe_slow_ =
        options_.probe && (options_.probe_slow_events || slow <= options_.slow_probe_limit);
    add_tracepoints(std::move(tracepoints));
    add_breakpoint();
    add_probes();
    std::stable_sort(events_.begin(), events_.end(), [](const auto& a, const auto& b) {
      return a.category != b.category ? a.category < b.category : a.name < b.name;
    });
    return std::move(events_);
  }

 private:
  bool selected(std::string_view name, std::string_view alias = {}) const {
    return catalog_pattern_matches(options_.pattern, name, alias);
  }

  void add_generic(std::span<const GenericEventName> table, EventCategory category) {
    for (const auto& entry : table) {
      if (!selected(entry.name, entry.alias)) continue;
      CatalogEvent event;
      event.category = category;
      event.name = std::string(entry.name);
      event.alias = std::string(entry.alias);
      event.encoding = fmt::format("{}/{}", event_type_name(static_cast<std::uint32_t>(entry.type)),
                                   entry.config);
      event.description = describe_generic(entry.name);
      if (options_.probe) {
        probe(event,
              EventAttr{}.set_type(static_cast<std::uint32_t>(entry.type)).set_config(entry.config),
              nullptr);
      }
      events_.push_back(std::move(event));
    }
  }

  void add_pmu_aliases() {
    for (const Pmu* pmu : pmus_.all()) {
      for (const auto& alias : pmu->aliases) {
        std::string name = fmt::format("{}/{}/", pmu->name, alias.name);
        if (!selected(name, alias.name)) continue;
        CatalogEvent event;
        event.category = EventCategory::pmu;
        event.name = std::move(name);
        event.alias = alias.name;
        event.encoding = alias.terms;
        event.description = fmt::format("{} PMU event", pmu->name);
        if (!pmu->cpumask.empty()) event.description += fmt::format(" (CPUs {})", pmu->cpumask);
        event.unit = alias.unit;
        event.scale = alias.scale;
        event.per_pkg = alias.per_pkg;
        event.snapshot = alias.snapshot;
        if (options_.probe) probe_parsed(event, pmu);
        events_.push_back(std::move(event));
      }
    }
  }

  void probe_parsed(CatalogEvent& event, const Pmu* pmu) {
    EventParseOptions parse_options;
    parse_options.pmus = &pmus_;
    parse_options.tracefs_root = tracefs_root_;
    try {
      auto groups = parse_event_list(event.name, parse_options);
      probe(event, groups.at(0).events.at(0).attr, pmu);
    } catch (const EventSpecError& error) {
      event.open = OpenCheck::fails;
      event.open_error = error.what();
    }
  }

  std::vector<std::string> tracepoint_names() {
    if (tracefs_root_.empty()) tracefs_root_ = sys::tracefs_root().value_or("");
    if (tracefs_root_.empty()) return {};
    std::vector<std::string> names;
    // One read of available_events lists them all; walking thousands of directories is slower.
    if (auto available = sys::read_text_file(tracefs_root_ + "/available_events")) {
      std::size_t at = 0;
      while (at < available->size()) {
        std::size_t end = available->find('\n', at);
        if (end == std::string::npos) end = available->size();
        std::string line = available->substr(at, end - at);
        at = end + 1;
        if (!line.empty() && selected(line)) names.push_back(std::move(line));
      }
    } else {
      for (const auto& group : sys::list_directory(tracefs_root_ + "/events")) {
        for (const auto& name : sys::list_directory(tracefs_root_ + "/events/" + group)) {
          std::string full = group + ":" + name;
          if (sys::path_exists(tracefs_root_ + "/events/" + group + "/" + name + "/id") &&
              selected(full)) {
            names.push_back(std::move(full));
          }
        }
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void add_tracepoints(std::vector<std::string> names) {
    for (auto& name : names) {
      CatalogEvent event;
      event.category = EventCategory::tracepoint;
      auto colon = name.find(':');
      event.encoding = fmt::format("{}/events/{}/{}/id", tracefs_root_, name.substr(0, colon),
                                   name.substr(colon + 1));
      event.name = std::move(name);
      event.description = "tracepoint";
      if (probe_slow_) {
        probe_parsed(event, nullptr);
      } else {
        event.open_error = std::string(slow_reason);
      }
      events_.push_back(std::move(event));
    }
  }

  void add_breakpoint() {
    if (!selected("mem:ADDR[/LEN][:rwx]", "mem:")) return;
    CatalogEvent event;
    event.category = EventCategory::breakpoint;
    event.name = "mem:ADDR[/LEN][:rwx]";
    event.encoding = "PERF_TYPE_BREAKPOINT";
    event.description = "hardware data watchpoint or execute breakpoint at ADDR (LEN 1-8 bytes)";
    if (options_.probe) {
      static long watched = 0;
      probe(event,
            EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watched), sizeof watched,
                                  abi::breakpoint_type::write),
            nullptr);
    }
    events_.push_back(std::move(event));
  }

  void add_probes() {
    for (const auto& form : probe_forms) {
      if (!selected(form.name, form.pmu)) continue;
      CatalogEvent event;
      event.category = EventCategory::probe;
      event.name = std::string(form.name);
      event.description = std::string(form.description);
      const Pmu* pmu = pmus_.find(form.pmu);
      event.encoding = fmt::format("{} PMU", form.pmu);
      if (!pmu) {
        event.open = OpenCheck::fails;
        event.open_error =
            fmt::format("this kernel has no {} PMU ({}/{})", form.pmu, pmus_.root(), form.pmu);
      } else if (!options_.probe) {
        event.open_error = "not opened (probing is off)";
      } else if (form.pmu == "uprobe" && !probe_slow_) {
        event.open_error = std::string(slow_reason);
      } else if (form.pmu == "uprobe") {
        probe_uprobe(event, *pmu, form.name.starts_with("uretprobe"));
      } else {
        event.open_error = fmt::format(
            "the {} PMU exists (type {}); a kernel function probe is not opened to list it",
            form.pmu, pmu->type);
      }
      events_.push_back(std::move(event));
    }
  }

  // A uprobe on a function of this very program shows whether uprobes open here.
  void probe_uprobe(CatalogEvent& event, const Pmu& pmu, bool return_probe) {
    auto place = own_function_place();
    if (!place) {
      event.open_error =
          "not opened: this program's own file could not be found in /proc/self/maps";
      return;
    }
    EventAttr attr;
    attr.set_type(pmu.type)
        .set_config1(reinterpret_cast<std::uintptr_t>(place->path.c_str()))
        .set_config2(place->offset);
    if (return_probe) {
      if (const PmuFormatField* retprobe = pmu.find_term("retprobe")) {
        apply_pmu_format(*retprobe, 1, attr.raw());
      }
    }
    probe(event, attr, nullptr);
  }

  static constexpr std::string_view slow_reason =
      "not opened: closing a tracepoint or uprobe event waits for an RCU grace period (tens of "
      "ms), so they are opened only when a few are listed (name them, or use --probe-all)";

  const CatalogOptions& options_;
  const PmuRegistry& pmus_;
  bool probe_slow_ = false;
  std::string tracefs_root_;
  std::vector<CatalogEvent> events_;
};

}  // namespace

std::vector<CatalogEvent> list_events(const CatalogOptions& options) {
  return CatalogBuilder(options).build();
}

}  // namespace perfscope
