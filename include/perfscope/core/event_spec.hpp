// Event lists as users write them: "cycles,instructions:u,{task-clock,page-faults}:k". The
// grammar is perf's: generic hardware/software/hw-cache names, PMU events pmu/term=value,.../ and
// pmu/alias/ (resolved through sysfs, see PmuRegistry), bare PMU aliases (tsc), raw rNNNN,
// tracepoints subsys:name and globs (sched:*), breakpoints mem:ADDR[/LEN][:rwx], uprobes
// uprobe:/path:symbol[+off] and uretprobe:, kprobes kprobe:func[+off] and kretprobe:, vendor
// names through a VendorEventResolver, groups in braces, and perf's modifiers.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

class PmuRegistry;
class SymbolOffsetResolver;
class VendorEventResolver;

struct EventSpec {
  std::string text;  // as written, modifiers included
  std::string name;  // display name (text without group braces), or the name= term
  EventAttr attr;
  bool weak_group = false;  // :W — if the group cannot open, open its events separately
  std::string pmu;          // the PMU of pmu/.../ events, aliases and hybrid copies
  // From the alias's .scale/.unit/.per-pkg/.snapshot: the count times `scale` is in `unit`.
  double scale = 1.0;
  std::string unit;
  bool per_pkg = false;    // count once per package (socket), not per CPU
  bool snapshot = false;   // the count is a current value, not a running total
  std::string call_graph;  // call-graph= term: "fp", "dwarf", "lbr" or "no"; empty when absent
  std::uint32_t stack_size = 0;  // stack-size= term (bytes of user stack with call-graph=dwarf)
  // The uprobe's path or the kprobe's function: attr.config1 points at its characters, so it is
  // shared by every copy of the spec and must outlive every open of the attr.
  std::shared_ptr<const std::string> probe_target;
  // A tracepoint filter ("id == 39 || id == 2", perf's --filter): SamplingSession sets it on every
  // copy it opens; inherited copies use their parent's.
  std::string filter;
};

struct EventGroupSpec {
  std::vector<EventSpec> events;
  bool braced = false;  // written as {a,b}: opened as one group
};

// A malformed event list: the message names the problem, position is the offending character.
class PERFSCOPE_EXPORT EventSpecError : public std::invalid_argument {
 public:
  EventSpecError(std::string message, std::string input, std::size_t position);
  std::size_t position() const noexcept { return position_; }
  const std::string& input() const noexcept { return input_; }
  // The message, the input, and a caret under the offending character.
  std::string with_caret() const;

 private:
  std::string input_;
  std::size_t position_;
};

struct EventParseOptions {
  const PmuRegistry* pmus = nullptr;  // nullptr: PmuRegistry::system()
  std::string tracefs_root;           // empty: sys::tracefs_root()
  // nullptr: the installed ones (event_resolvers.hpp). Without a symbol resolver uprobes take
  // file offsets only; without a vendor resolver vendor names are unknown.
  const SymbolOffsetResolver* symbols = nullptr;
  const VendorEventResolver* vendor = nullptr;
};

PERFSCOPE_EXPORT std::vector<EventGroupSpec> parse_event_list(std::string_view text);
PERFSCOPE_EXPORT std::vector<EventGroupSpec> parse_event_list(std::string_view text,
                                                              const EventParseOptions& options);

// The event in the grammar's canonical spelling, from its attr and spec: generic names as perf
// prints them, PMU events as pmu/term=0x..,.../ with every term decoded through format/,
// tracepoints, breakpoints and probes by their canonical forms, then the modifiers that the attr
// carries (:ukhGHIpDeSW order). Parsing it gives the same attr. `pmus` resolves dynamic PMU types.
PERFSCOPE_EXPORT std::string canonical_event_string(const EventSpec& spec,
                                                    const PmuRegistry* pmus = nullptr);

// Applies perf modifiers ("u", "k", "ppp", "G", "H", "I", "P", "D", "e", "S", "W") to an attr:
// u/k/h count only user/kernel/hypervisor, G/H only guest/host, I excludes idle, p..ppp ask for
// precise (skid-free) samples, P the highest precision, D pins the event, e makes it exclusive,
// S samples the group's counts (PERF_SAMPLE_READ), W makes the group weak.
// Returns false and sets `bad` to the index of the first unknown modifier.
PERFSCOPE_EXPORT bool apply_modifiers(std::string_view modifiers, EventSpec& spec,
                                      std::size_t& bad);

// The id of tracepoint subsys:name from tracefs, or -errno (ENOENT: no such tracepoint).
PERFSCOPE_EXPORT long long tracepoint_id(std::string_view subsystem, std::string_view name);

}  // namespace perfscope
