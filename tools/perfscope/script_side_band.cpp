#include "script_side_band.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <array>
#include <iterator>
#include <variant>

#include "perfscope/abi/record_type.hpp"

namespace perfscope::cli {

namespace {

using abi::RecordType;

// C's %#x: "0x1f", but "0" for zero (fmt's {:#x} would print "0x0").
std::string alternate_hex(std::uint64_t value) {
  return value == 0 ? std::string("0") : fmt::format("{:#x}", value);
}

// perf's binary__fprintf with text_poke_printer: 16 bytes a line after "Old bytes:".
void append_bytes(std::string& out, std::string_view label, std::span<const std::byte> bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i % 16 == 0) fmt::format_to(std::back_inserter(out), "            {} bytes:", label);
    fmt::format_to(std::back_inserter(out), " {:02x}", static_cast<unsigned>(bytes[i]));
    if (i % 16 == 15 || i + 1 == bytes.size()) out += '\n';
  }
}

// perf_ns__name's names, in the kernel's NAMESPACES order.
constexpr std::array<std::string_view, 7> namespace_names = {"net",  "uts", "ipc",   "pid",
                                                             "user", "mnt", "cgroup"};

}  // namespace

bool SideBandSelection::shows(std::uint32_t type) const noexcept {
  switch (static_cast<RecordType>(type)) {
    case RecordType::comm:
    case RecordType::fork:
    case RecordType::exit: return task;
    case RecordType::mmap:
    case RecordType::mmap2: return mmap;
    case RecordType::switch_:
    case RecordType::switch_cpu_wide: return switches;
    case RecordType::lost: return lost;
    case RecordType::namespaces: return namespaces;
    case RecordType::cgroup: return cgroup;
    case RecordType::ksymbol: return bpf || text_poke;
    case RecordType::bpf_event: return bpf;
    case RecordType::text_poke: return text_poke;
    default: break;
  }
  return rounds && type == static_cast<std::uint32_t>(abi::UserRecordType::finished_round);
}

SideBandTask side_band_task(const Record& record) noexcept {
  return std::visit(
      [](const auto& r) -> SideBandTask {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, CommRecord> || std::is_same_v<T, TaskRecord> ||
                      std::is_same_v<T, MmapRecord> || std::is_same_v<T, Mmap2Record> ||
                      std::is_same_v<T, NamespacesRecord>) {
          return {true, r.pid, r.tid};
        } else {
          return {};
        }
      },
      record);
}

std::string side_band_text(const Record& record, const abi::RecordHeader& header,
                           const SideBandNames& names) {
  const std::uint16_t misc = header.misc;
  std::string out;
  auto to = std::back_inserter(out);
  auto signed_id = [](std::uint32_t id) { return static_cast<std::int32_t>(id); };
  if (const auto* comm = std::get_if<CommRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_COMM{}: {}:{}/{}\n", comm->exec ? " exec" : "",
                   names.name(comm->comm), signed_id(comm->pid), signed_id(comm->tid));
  } else if (const auto* task = std::get_if<TaskRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_{}({}:{}):({}:{})\n",
                   header.type == static_cast<std::uint32_t>(RecordType::exit) ? "EXIT" : "FORK",
                   signed_id(task->pid), signed_id(task->tid), signed_id(task->ppid),
                   signed_id(task->ptid));
  } else if (const auto* mmap = std::get_if<MmapRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_MMAP {}/{}: [{}({}) @ {}]: {} {}\n", signed_id(mmap->pid),
                   signed_id(mmap->tid), alternate_hex(mmap->addr), alternate_hex(mmap->len),
                   alternate_hex(mmap->pgoff), (misc & abi::record_misc::mmap_data) ? 'r' : 'x',
                   names.name(mmap->filename));
  } else if (const auto* mmap2 = std::get_if<Mmap2Record>(&record)) {
    fmt::format_to(to, "PERF_RECORD_MMAP2 {}/{}: [{}({}) @ {}", signed_id(mmap2->pid),
                   signed_id(mmap2->tid), alternate_hex(mmap2->addr), alternate_hex(mmap2->len),
                   alternate_hex(mmap2->pgoff));
    if (mmap2->has_build_id) {
      out += " <";
      for (std::byte b : mmap2->build_id) fmt::format_to(to, "{:02x}", static_cast<unsigned>(b));
      out += '>';
    } else {
      fmt::format_to(to, " {:02x}:{:02x} {} {}", mmap2->maj, mmap2->min, mmap2->ino,
                     mmap2->ino_generation);
    }
    fmt::format_to(to, "]: {}{}{}{} {}\n", (mmap2->prot & PROT_READ) ? 'r' : '-',
                   (mmap2->prot & PROT_WRITE) ? 'w' : '-', (mmap2->prot & PROT_EXEC) ? 'x' : '-',
                   (mmap2->flags & MAP_SHARED) ? 's' : 'p', names.name(mmap2->filename));
  } else if (const auto* lost = std::get_if<LostRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_LOST lost {}\n", lost->lost);
  } else if (const auto* change = std::get_if<SwitchRecord>(&record)) {
    std::string_view in_out = !change->out        ? "IN         "
                              : change->preempted ? "OUT preempt"
                                                  : "OUT        ";
    if (!change->cpu_wide) {
      fmt::format_to(to, "PERF_RECORD_SWITCH {}\n", in_out);
    } else {
      fmt::format_to(to, "PERF_RECORD_SWITCH_CPU_WIDE {}  {} pid/tid: {:5}/{:<5}\n", in_out,
                     change->out ? "next" : "prev", signed_id(change->next_prev_pid),
                     signed_id(change->next_prev_tid));
    }
  } else if (const auto* spaces = std::get_if<NamespacesRecord>(&record)) {
    std::size_t count = spaces->count();
    fmt::format_to(to, "PERF_RECORD_NAMESPACES {}/{} - nr_namespaces: {}\n\t\t[",
                   signed_id(spaces->pid), signed_id(spaces->tid), count);
    for (std::size_t i = 0; i < count; ++i) {
      if (i != 0 && i % 4 == 0) out += "\n\t\t ";
      std::string_view name = i < namespace_names.size() ? namespace_names[i] : "UNKNOWN";
      fmt::format_to(to, "{}/{}: {}/{}{}", i, name, spaces->dev_inode_pairs[2 * i],
                     alternate_hex(spaces->dev_inode_pairs[2 * i + 1]),
                     i + 1 != count ? ", " : "]\n");
    }
  } else if (const auto* cgroup = std::get_if<CgroupRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_CGROUP cgroup: {} {}\n", cgroup->id, names.name(cgroup->path));
  } else if (const auto* ksymbol = std::get_if<KsymbolRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_KSYMBOL addr {:x} len {} type {} flags {:#x} name {}\n",
                   ksymbol->addr, ksymbol->len, ksymbol->ksym_type, ksymbol->flags,
                   names.name(ksymbol->name));
  } else if (const auto* bpf = std::get_if<BpfEventRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_BPF_EVENT type {}, flags {}, id {}\n", bpf->event_type,
                   bpf->flags, bpf->id);
  } else if (const auto* poke = std::get_if<TextPokeRecord>(&record)) {
    fmt::format_to(to, "PERF_RECORD_TEXT_POKE {:x} {} old len {} new len {}\n", poke->addr,
                   names.kernel_symbol(poke->addr), poke->old_bytes.size(), poke->new_bytes.size());
    append_bytes(out, "Old", poke->old_bytes);
    append_bytes(out, "New", poke->new_bytes);
  }
  return out;
}

}  // namespace perfscope::cli
