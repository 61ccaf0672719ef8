// The JSON form of perf.data records for `script --json`: one object per record with every
// field the decoder knows, in named steps (user records, samples, the kernel's other records).
#include "script_json.hpp"

#include <fmt/format.h>

#include <iterator>
#include <span>
#include <type_traits>
#include <variant>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;

nlohmann::json sample_id_json(const SampleId& id) {
  nlohmann::json out = nlohmann::json::object();
  if (id.has(sf::tid)) {
    out["pid"] = id.pid;
    out["tid"] = id.tid;
  }
  if (id.has(sf::time)) out["time"] = id.time;
  if (id.has(sf::id) || id.has(sf::identifier)) out["id"] = id.id;
  if (id.has(sf::stream_id)) out["stream_id"] = id.stream_id;
  if (id.has(sf::cpu)) out["cpu"] = id.cpu;
  return out;
}

std::string hex_bytes(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto byte : bytes)
    fmt::format_to(std::back_inserter(out), "{:02x}", static_cast<unsigned>(byte));
  return out;
}

// perf's own records (type 64 and up): named, their payload as hex.
void add_user_record(nlohmann::json& out, const PerfDataRecord& record) {
  std::uint32_t type = record.view.header.type;
  static constexpr const char* user_names[] = {"HEADER_ATTR",
                                               "HEADER_EVENT_TYPE",
                                               "HEADER_TRACING_DATA",
                                               "HEADER_BUILD_ID",
                                               "FINISHED_ROUND",
                                               "ID_INDEX",
                                               "AUXTRACE_INFO",
                                               "AUXTRACE",
                                               "AUXTRACE_ERROR",
                                               "THREAD_MAP",
                                               "CPU_MAP",
                                               "STAT_CONFIG",
                                               "STAT",
                                               "STAT_ROUND",
                                               "EVENT_UPDATE",
                                               "TIME_CONV",
                                               "HEADER_FEATURE",
                                               "COMPRESSED",
                                               "FINISHED_INIT",
                                               "COMPRESSED2"};
  if (type - 64 < std::size(user_names)) out["type"] = user_names[type - 64];
  out["payload"] = hex_bytes(record.view.bytes.subspan(sizeof(abi::RecordHeader)));
}

void add_sample(nlohmann::json& out, const SampleRecord& s) {
  if (s.has(sf::identifier) || s.has(sf::id)) out["id"] = s.id;
  if (s.has(sf::ip)) out["ip"] = s.ip;
  if (s.has(sf::tid)) {
    out["pid"] = s.pid;
    out["tid"] = s.tid;
  }
  if (s.has(sf::time)) out["time"] = s.time;
  if (s.has(sf::addr)) out["addr"] = s.addr;
  if (s.has(sf::stream_id)) out["stream_id"] = s.stream_id;
  if (s.has(sf::cpu)) out["cpu"] = s.cpu;
  if (s.has(sf::period)) out["period"] = s.period;
  if (s.has(sf::read))
    out["read"] = std::vector<std::uint64_t>(s.read.words.begin(), s.read.words.end());
  if (s.has(sf::callchain))
    out["callchain"] = std::vector<std::uint64_t>(s.callchain.begin(), s.callchain.end());
  if (s.has(sf::raw)) out["raw"] = hex_bytes(s.raw);
  if (s.has(sf::branch_stack)) {
    nlohmann::json branches = nlohmann::json::array();
    for (const auto& entry : s.branch_stack.entries) {
      branches.push_back({{"from", entry.from}, {"to", entry.to}, {"flags", entry.flags}});
    }
    out["branch_stack"] = std::move(branches);
  }
  if (s.has(sf::regs_user)) {
    out["regs_user"] = {{"abi", s.regs_user.abi},
                        {"mask", s.regs_user.mask},
                        {"values", std::vector<std::uint64_t>(s.regs_user.values.begin(),
                                                              s.regs_user.values.end())}};
  }
  if (s.has(sf::stack_user)) {
    out["stack_user_size"] = s.stack_user.size();
    out["stack_user_dyn_size"] = s.stack_user_dyn_size;
  }
  if (s.has(sf::weight) || s.has(sf::weight_struct)) out["weight"] = s.weight.full;
  if (s.has(sf::data_src)) out["data_src"] = s.data_src;
  if (s.has(sf::transaction)) out["transaction"] = s.transaction;
  if (s.has(sf::regs_intr)) {
    out["regs_intr"] = {{"abi", s.regs_intr.abi},
                        {"mask", s.regs_intr.mask},
                        {"values", std::vector<std::uint64_t>(s.regs_intr.values.begin(),
                                                              s.regs_intr.values.end())}};
  }
  if (s.has(sf::phys_addr)) out["phys_addr"] = s.phys_addr;
  if (s.has(sf::cgroup)) out["cgroup"] = s.cgroup;
  if (s.has(sf::data_page_size)) out["data_page_size"] = s.data_page_size;
  if (s.has(sf::code_page_size)) out["code_page_size"] = s.code_page_size;
  if (s.has(sf::aux)) out["aux"] = hex_bytes(s.aux);
}

// The kernel's records other than samples: their fields, then their sample_id trailer.
template <typename T>
void add_kernel_record(nlohmann::json& out, const T& value) {
  if constexpr (std::is_same_v<T, MmapRecord> || std::is_same_v<T, Mmap2Record>) {
    out["pid"] = value.pid;
    out["tid"] = value.tid;
    out["addr"] = value.addr;
    out["len"] = value.len;
    out["pgoff"] = value.pgoff;
    out["filename"] = std::string(value.filename);
    if constexpr (std::is_same_v<T, Mmap2Record>) {
      if (value.has_build_id) {
        out["build_id"] = hex_bytes(value.build_id);
      } else {
        out["maj"] = value.maj;
        out["min"] = value.min;
        out["ino"] = value.ino;
        out["ino_generation"] = value.ino_generation;
      }
      out["prot"] = value.prot;
      out["flags"] = value.flags;
    }
  } else if constexpr (std::is_same_v<T, LostRecord>) {
    out["id"] = value.id;
    out["lost"] = value.lost;
  } else if constexpr (std::is_same_v<T, CommRecord>) {
    out["pid"] = value.pid;
    out["tid"] = value.tid;
    out["comm"] = std::string(value.comm);
    out["exec"] = value.exec;
  } else if constexpr (std::is_same_v<T, TaskRecord>) {
    out["pid"] = value.pid;
    out["ppid"] = value.ppid;
    out["tid"] = value.tid;
    out["ptid"] = value.ptid;
    out["task_time"] = value.time;
  } else if constexpr (std::is_same_v<T, ThrottleRecord>) {
    out["throttle_time"] = value.time;
    out["id"] = value.id;
    out["stream_id"] = value.stream_id;
  } else if constexpr (std::is_same_v<T, ReadRecord>) {
    out["pid"] = value.pid;
    out["tid"] = value.tid;
    out["values"] =
        std::vector<std::uint64_t>(value.values.words.begin(), value.values.words.end());
  } else if constexpr (std::is_same_v<T, AuxRecord>) {
    out["aux_offset"] = value.aux_offset;
    out["aux_size"] = value.aux_size;
    out["flags"] = value.flags;
  } else if constexpr (std::is_same_v<T, ItraceStartRecord>) {
    out["pid"] = value.pid;
    out["tid"] = value.tid;
  } else if constexpr (std::is_same_v<T, LostSamplesRecord>) {
    out["lost"] = value.lost;
  } else if constexpr (std::is_same_v<T, SwitchRecord>) {
    out["out"] = value.out;
    out["preempted"] = value.preempted;
    if (value.cpu_wide) {
      out["next_prev_pid"] = value.next_prev_pid;
      out["next_prev_tid"] = value.next_prev_tid;
    }
  } else if constexpr (std::is_same_v<T, NamespacesRecord>) {
    out["pid"] = value.pid;
    out["tid"] = value.tid;
    out["dev_inode_pairs"] =
        std::vector<std::uint64_t>(value.dev_inode_pairs.begin(), value.dev_inode_pairs.end());
  } else if constexpr (std::is_same_v<T, KsymbolRecord>) {
    out["addr"] = value.addr;
    out["len"] = value.len;
    out["ksym_type"] = value.ksym_type;
    out["flags"] = value.flags;
    out["name"] = std::string(value.name);
  } else if constexpr (std::is_same_v<T, BpfEventRecord>) {
    out["event_type"] = value.event_type;
    out["flags"] = value.flags;
    out["bpf_id"] = value.id;
    out["tag"] = hex_bytes(value.tag);
  } else if constexpr (std::is_same_v<T, CgroupRecord>) {
    out["cgroup_id"] = value.id;
    out["path"] = std::string(value.path);
  } else if constexpr (std::is_same_v<T, TextPokeRecord>) {
    out["addr"] = value.addr;
    out["old_bytes"] = hex_bytes(value.old_bytes);
    out["new_bytes"] = hex_bytes(value.new_bytes);
  } else if constexpr (std::is_same_v<T, AuxOutputHwIdRecord>) {
    out["hw_id"] = value.hw_id;
  } else if constexpr (std::is_same_v<T, DeferredCallchainRecord>) {
    out["cookie"] = value.cookie;
    out["ips"] = std::vector<std::uint64_t>(value.ips.begin(), value.ips.end());
  }
  out["sample_id"] = sample_id_json(value.sample_id);
}

}  // namespace

nlohmann::json record_json(const PerfDataRecord& record, const PerfDataReader& reader,
                           const std::vector<std::string>& names) {
  nlohmann::json out;
  out["offset"] = record.offset;
  std::uint32_t type = record.view.header.type;
  std::string_view type_name = record_type_name(type);
  out["type"] = type_name.empty() ? fmt::format("{}", type) : std::string(type_name);
  out["misc"] = record.view.header.misc;
  out["size"] = record.view.header.size;
  if (type >= 64) {
    add_user_record(out, record);
    return out;
  }
  const auto& event = reader.events()[record.event];
  out["event"] = names[record.event];
  Record decoded;
  DecodeError error;
  if (!decode_record(record.view, event.config, decoded, error)) {
    out["error"] = fmt::format("{} at byte {} of the record", error.what, error.offset);
    return out;
  }
  std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, SampleRecord>) {
          add_sample(out, value);
        } else if constexpr (std::is_same_v<T, UnknownRecord>) {
          out["payload"] = hex_bytes(value.payload);
        } else {
          add_kernel_record(out, value);
        }
      },
      decoded);
  return out;
}

}  // namespace perfscope::cli
