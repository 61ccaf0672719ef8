#include "perfscope/analysis/symbols/task_maps.hpp"

#include <sys/mman.h>

#include <string>
#include <variant>

#include "analysis/path_names.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"

namespace perfscope {

namespace {

bool kernel_mode(std::uint16_t cpumode) {
  return cpumode == abi::record_misc::kernel || cpumode == abi::record_misc::guest_kernel;
}

// perf's name for the kernel, whatever suffix ("_text", "_stext") says where it was anchored.

// A kernel map's name as perf shows it: the kernel, or a module's "[name]" from its file
// (/lib/modules/.../ath9k.ko -> [ath9k]; perf writes dashes as underscores, as the kernel
// names modules); other names as recorded.
std::string kernel_map_name(std::string_view filename) {
  if (filename.starts_with(kernel_dso_name)) return std::string(kernel_dso_name);
  std::string_view base = detail::file_name_of(filename);
  for (std::string_view suffix : {".ko", ".ko.gz", ".ko.xz", ".ko.zst"}) {
    if (base.size() > suffix.size() && base.ends_with(suffix) && filename.starts_with('/')) {
      std::string name(base.substr(0, base.size() - suffix.size()));
      for (char& c : name) c = c == '-' ? '_' : c;
      return "[" + name + "]";
    }
  }
  return std::string(filename);
}

}  // namespace

std::uint32_t TaskMaps::intern(std::string_view filename) {
  auto found = name_index_.find(std::string(filename));
  if (found != name_index_.end()) return found->second;
  auto index = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(filename);
  name_hit_.push_back(0);
  name_index_.emplace(names_.back(), index);
  return index;
}

void TaskMaps::insert(AddressMap& maps, std::uint64_t start, std::uint64_t length,
                      std::uint64_t pgoff, std::string_view filename,
                      std::span<const std::byte> build_id, bool executable) {
  std::uint64_t end = length > ~std::uint64_t{0} - start ? ~std::uint64_t{0} : start + length;
  // A new mapping replaces whatever overlapped it; the parts outside it stay.
  auto it = maps.lower_bound(start);
  if (it != maps.begin()) {
    auto before = std::prev(it);
    if (before->second.end > start) {
      Mapping tail = before->second;
      before->second.end = start;
      if (tail.end > end) {
        tail.pgoff += end - before->first;
        maps[end] = tail;
      }
    }
  }
  it = maps.lower_bound(start);
  while (it != maps.end() && it->first < end) {
    if (it->second.end > end) {
      Mapping tail = it->second;
      tail.pgoff += end - it->first;
      maps.erase(it);
      maps[end] = tail;
      break;
    }
    it = maps.erase(it);
  }
  std::uint32_t build_id_index = 0;
  if (!build_id.empty()) {
    build_id_index = static_cast<std::uint32_t>(build_ids_.size());
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(build_id.data());
    build_ids_.emplace_back(bytes, bytes + build_id.size());
  }
  std::uint32_t name = intern(filename);
  name_hit_[name] |= &maps == &kernel_ ? 8 : 4;
  maps[start] = Mapping{end, pgoff, name, build_id_index, executable};
}

void TaskMaps::insert_kernel(std::uint64_t start, std::uint64_t length, std::uint64_t pgoff,
                             std::string_view filename, std::span<const std::byte> build_id) {
  // A kernel map at 0 of length 0 (simpleperf, old perf with kptr_restrict) covers every
  // address, as perf reads it (machine__set_kernel_mmap); of length 0 elsewhere it maps nothing.
  if (start == 0 && length == 0) length = ~std::uint64_t{0};
  kernel_mapped_ |= length != 0;
  insert(kernel_, start, length, pgoff, kernel_map_name(filename), build_id);
}

const TaskMaps::Mapping* TaskMaps::find_user(std::uint32_t pid, std::uint64_t address,
                                             std::uint64_t& start,
                                             bool of_kernel_sample) const noexcept {
  for (const auto* table : {&processes_, &before_exec_}) {
    if (table == &before_exec_ && !of_kernel_sample) break;
    auto maps = table->find(pid);
    if (maps == table->end()) continue;
    if (const Mapping* mapping = find(maps->second, address)) {
      start = std::prev(maps->second.upper_bound(address))->first;
      return mapping;
    }
  }
  return nullptr;
}

void TaskMaps::touch(std::uint32_t pid) { generations_[pid] = next_generation_++; }

TaskMaps::MappingView TaskMaps::view_of(std::uint64_t start,
                                        const Mapping& mapping) const noexcept {
  const auto& build_id = build_ids_[mapping.build_id];
  return MappingView{start,
                     mapping.end,
                     mapping.pgoff,
                     &names_[mapping.name],
                     std::span<const std::uint8_t>(build_id.data(), build_id.size()),
                     mapping.executable};
}

const TaskMaps::Mapping* TaskMaps::find(const AddressMap& maps,
                                        std::uint64_t address) const noexcept {
  auto it = maps.upper_bound(address);
  if (it == maps.begin()) return nullptr;
  --it;
  if (address < it->second.end) return &it->second;
  // The kernel's own map reaches up to the next kernel map (a module), as perf's does: its MMAP
  // record ends at _etext, but kallsyms names what lies after it too (.init.text, where the idle
  // task's start_kernel frames stay; the entry trampolines).
  // (A map of length 0 maps nothing, as in perf.)
  if (&maps == &kernel_ && it->second.end > it->first &&
      names_[it->second.name] == kernel_dso_name) {
    return &it->second;
  }
  return nullptr;
}

bool TaskMaps::observes(std::uint32_t record_type) noexcept {
  switch (static_cast<abi::RecordType>(record_type)) {
    case abi::RecordType::mmap:
    case abi::RecordType::mmap2:
    case abi::RecordType::fork:
    case abi::RecordType::comm: return true;
    default: return false;
  }
}

void TaskMaps::observe(const RecordView& view, const ParseConfig& config) {
  auto type = static_cast<abi::RecordType>(view.header.type);
  if (type != abi::RecordType::comm && type != abi::RecordType::fork &&
      type != abi::RecordType::mmap && type != abi::RecordType::mmap2) {
    return;
  }
  Record record;
  DecodeError error;
  if (!decode_record(view, config, record, error)) return;
  std::uint16_t cpumode = view.header.misc & abi::record_misc::cpumode_mask;
  if (auto* comm = std::get_if<CommRecord>(&record)) {
    // An exec sets the old image's maps aside: a sample taken inside execve after its COMM still
    // holds the old image's pc and callers, which perf names from the old maps it keeps. They
    // name only a kernel-mode sample's user frames (mapping_of's of_kernel_sample), where the new
    // image's maps do not cover them, and take no part in unwinding.
    if (comm->exec) {
      auto old = processes_.find(comm->pid);
      if (old != processes_.end()) {
        before_exec_[comm->pid] = std::move(old->second);
        processes_.erase(old);
      }
      touch(comm->pid);
    }
    comms_[comm->tid] = std::string(comm->comm);
  } else if (auto* task = std::get_if<TaskRecord>(&record)) {
    // A child is called as its parent until its own COMM (the idle task's children: swapper).
    std::string_view parent = comm_of(task->ptid);
    if (!parent.empty()) comms_[task->tid] = std::string(parent);
    if (task->pid != task->ppid) {
      auto maps = processes_.find(task->ppid);
      if (maps != processes_.end()) processes_[task->pid] = maps->second;
      touch(task->pid);
    }
  } else if (auto* mmap = std::get_if<MmapRecord>(&record)) {
    bool kernel =
        kernel_mode(cpumode) || static_cast<std::int32_t>(mmap->pid) == perf_data::host_kernel_pid;
    if (kernel) {
      insert_kernel(mmap->addr, mmap->len, mmap->pgoff, mmap->filename);
    } else {
      insert(processes_[mmap->pid], mmap->addr, mmap->len, mmap->pgoff, mmap->filename, {},
             (view.header.misc & abi::record_misc::mmap_data) == 0);
      touch(mmap->pid);
    }
  } else if (auto* mmap2 = std::get_if<Mmap2Record>(&record)) {
    std::span<const std::byte> build_id =
        mmap2->has_build_id ? mmap2->build_id : std::span<const std::byte>();
    if (kernel_mode(cpumode)) {
      insert_kernel(mmap2->addr, mmap2->len, mmap2->pgoff, mmap2->filename, build_id);
    } else {
      // A prot of 0: a writer that did not say (code, as an MMAP without the data bit).
      bool executable = (view.header.misc & abi::record_misc::mmap_data) == 0 &&
                        (mmap2->prot == 0 || (mmap2->prot & PROT_EXEC) != 0);
      insert(processes_[mmap2->pid], mmap2->addr, mmap2->len, mmap2->pgoff, mmap2->filename,
             build_id, executable);
      touch(mmap2->pid);
    }
  }
}

const std::string* TaskMaps::dso_of(std::uint32_t pid, std::uint64_t address,
                                    std::uint16_t cpumode) const noexcept {
  const Mapping* mapping = nullptr;
  bool kernel = kernel_mode(cpumode);
  if (kernel) {
    mapping = find(kernel_, address);
  } else {
    std::uint64_t start = 0;
    mapping = find_user(pid, address, start, false);
  }
  if (!mapping) return nullptr;
  name_hit_[mapping->name] |= kernel ? 2 : 1;
  return &names_[mapping->name];
}

std::optional<TaskMaps::MappingView> TaskMaps::mapping_of(std::uint32_t pid, std::uint64_t address,
                                                          std::uint16_t cpumode,
                                                          bool of_kernel_sample) const noexcept {
  bool kernel = kernel_mode(cpumode);
  std::uint64_t start = 0;
  const Mapping* mapping = nullptr;
  if (kernel) {
    mapping = find(kernel_, address);
    if (mapping) start = std::prev(kernel_.upper_bound(address))->first;
  } else {
    mapping = find_user(pid, address, start, of_kernel_sample);
  }
  if (!mapping) return std::nullopt;
  name_hit_[mapping->name] |= kernel ? 2 : 1;
  return view_of(start, *mapping);
}

void TaskMaps::for_each_mapping(std::uint32_t pid,
                                const std::function<void(const MappingView&)>& visit) const {
  auto found = processes_.find(pid);
  if (found == processes_.end()) return;
  for (const auto& [start, mapping] : found->second) visit(view_of(start, mapping));
}

std::uint64_t TaskMaps::maps_generation(std::uint32_t pid) const noexcept {
  auto found = generations_.find(pid);
  return found == generations_.end() ? 0 : found->second;
}

std::string_view TaskMaps::comm_of(std::uint32_t tid) const noexcept {
  auto found = comms_.find(tid);
  if (found != comms_.end()) return found->second;
  // The idle task: no COMM record names it (the kernel has no task to synthesize one for), and
  // perf calls it swapper, as the kernel does.
  return tid == 0 ? std::string_view("swapper") : std::string_view();
}

void TaskMaps::forget_task(std::uint32_t pid, std::uint32_t tid) {
  comms_.erase(tid);
  if (pid != tid) return;
  processes_.erase(pid);
  before_exec_.erase(pid);
  // A later process with this pid starts with a FORK (and an exec): it gets a new generation.
  generations_.erase(pid);
}

std::vector<TaskMaps::Hit> TaskMaps::hit_files() const {
  std::vector<Hit> hits;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (name_hit_[i] & 1) hits.push_back({names_[i], false});
    if (name_hit_[i] & 2) hits.push_back({names_[i], true});
  }
  return hits;
}

std::vector<TaskMaps::Hit> TaskMaps::mapped_files() const {
  std::vector<Hit> files;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (name_hit_[i] & 4) files.push_back({names_[i], false});
    if (name_hit_[i] & 8) files.push_back({names_[i], true});
  }
  return files;
}

bool is_anonymous_mapping(std::string_view filename) noexcept {
  return filename.empty() || filename == "//anon" || filename.starts_with("[anon") ||
         filename.starts_with("/memfd:") || filename == "[heap]" || filename == "[stack]" ||
         filename.starts_with("[stack:") || filename.starts_with("/dev/zero") ||
         filename.starts_with("/anon_hugepage") || filename.starts_with("/SYSV");
}

}  // namespace perfscope
