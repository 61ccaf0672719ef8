#include "analysis/annotate/named_function_sieve.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "analysis/annotate/symbol_suggestions.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "analysis/symbols/short_function_name.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace perfscope {

namespace {

namespace misc = abi::record_misc;
namespace sf = abi::sample_format;
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

// `name` without the template arguments at its end ("f<int>" -> "f").
std::string_view without_template_arguments(std::string_view name) {
  if (!name.ends_with('>')) return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == '>') ++depth;
    if (name[i] == '<' && --depth == 0) return name.substr(0, i);
  }
  return {};
}

// A part of the raw (mangled) symbol name of every function whose shown name matches `asked`:
// the identifier that ends its short form, which a mangled name spells out as a source name.
// Empty where no such part is sure to be there: operators, constructors and destructors (the
// class may be a substitution: std::allocator is "Sa"), lambdas and other unnamed entities.
std::string_view raw_part_of(std::string_view asked) {
  std::string_view name = short_function_name(asked);
  if (name.ends_with("@plt")) name.remove_suffix(4);
  name = without_template_arguments(name);
  std::size_t colons = name.rfind("::");
  std::string_view last = colons == std::string_view::npos ? name : name.substr(colons + 2);
  if (last.empty() || last.starts_with("operator") ||
      !std::all_of(last.begin(), last.end(), identifier_char)) {
    return {};
  }
  if (colons != std::string_view::npos) {
    std::string_view scope = without_template_arguments(name.substr(0, colons));
    std::size_t outer = scope.rfind("::");
    if ((outer == std::string_view::npos ? scope : scope.substr(outer + 2)) == last) return {};
  }
  return last;
}

// Sorted and merged: overlapping or touching ranges become one.
Ranges merged(Ranges ranges) {
  std::sort(ranges.begin(), ranges.end());
  Ranges out;
  for (const auto& range : ranges) {
    if (range.first >= range.second) continue;
    if (!out.empty() && range.first <= out.back().second) {
      out.back().second = std::max(out.back().second, range.second);
    } else {
      out.push_back(range);
    }
  }
  return out;
}

// The parts of `from` outside every range of `minus` (both merged).
Ranges subtracted(const Ranges& from, const Ranges& minus) {
  Ranges out;
  auto cut = minus.begin();
  for (auto [start, end] : from) {
    while (cut != minus.end() && cut->second <= start) ++cut;
    for (auto next = cut; next != minus.end() && next->first < end; ++next) {
      if (next->first > start) out.emplace_back(start, next->first);
      start = std::max(start, next->second);
    }
    if (start < end) out.emplace_back(start, end);
  }
  return out;
}

constexpr std::size_t no_file = ~std::size_t{0};
constexpr std::uint64_t no_time = ~std::uint64_t{0};

}  // namespace

// What the records that are not samples say about the processes.
struct NamedFunctionSieve::RecordedTasks {
  // A user-space MMAP or MMAP2 record.
  struct Mapping {
    std::uint32_t pid = 0;
    std::uint64_t time = 0;
    std::uint64_t sequence = 0;  // its place among the records, in file order
    std::uint64_t start = 0, end = 0, pgoff = 0;
    std::size_t file = 0;  // into the files; no_file for JIT code, the vDSO and the like
  };

  // A record that changes what addresses a process's samples name: a mapping over [start, end),
  // or an exec or fork (every address).
  struct ProcessChange {
    std::uint64_t time = 0, sequence = 0;
    std::uint64_t start = 0, end = ~std::uint64_t{0};
  };
  std::vector<Mapping> mappings;
  // What may end a mapping's window, by pid: another mapping over it, an exec, the process's
  // fork (a reused pid).
  std::unordered_map<std::uint32_t, std::vector<ProcessChange>> changes;
  std::vector<std::uint64_t> kernel_references;  // the kernel map's pgoff: its _text
  // The BUILD_ID feature: by file, and the kernel's.
  std::unordered_map<std::string, std::vector<std::uint8_t>> recorded_build_ids;
  std::vector<std::uint8_t> kernel_build_id;
  // The mapped files, by path '\0' the MMAP2 record's build id.
  std::vector<MappedFile> files;
  std::vector<std::string> file_keys;
  std::unordered_map<std::string, std::size_t> file_index;
  // Where the records that are not samples are, for the profile's ordered walk. A record
  // unpacked from a COMPRESSED one has that one's offset: those files are sieved in the walk.
  std::vector<std::uint64_t> other_records;
  bool offsets_known = true;

  // The first pass over [from, to) (see PerfDataReader::for_each_record_but_samples); false:
  // the data is damaged there.
  bool read(const PerfDataReader& reader, std::uint64_t from, std::uint64_t to,
            const std::unordered_map<std::string, std::vector<std::uint8_t>>& recorded,
            std::uint64_t* stopped);
  // The records of the part after this one's.
  void append(RecordedTasks&& later);
};

bool NamedFunctionSieve::RecordedTasks::read(
    const PerfDataReader& reader, std::uint64_t from, std::uint64_t to,
    const std::unordered_map<std::string, std::vector<std::uint8_t>>& recorded,
    std::uint64_t* stopped) {
  // A record's place in the file: its offset, then its place among those unpacked from one
  // COMPRESSED record.
  std::uint64_t sequence = 0;
  Record record;
  DecodeError error;
  std::string key;
  auto visit = [&](const PerfDataRecord& at) {
    sequence = std::max(sequence + 1, at.offset << 16);
    if (offsets_known) {
      if (!other_records.empty() && other_records.back() >= at.offset) {
        offsets_known = false;
      } else {
        other_records.push_back(at.offset);
      }
    }
    auto type = static_cast<abi::RecordType>(at.view.header.type);
    if (type != abi::RecordType::mmap && type != abi::RecordType::mmap2 &&
        type != abi::RecordType::comm && type != abi::RecordType::fork) {
      return;
    }
    if (!decode_record(at.view, reader.events()[at.event].config, record, error)) return;
    if (auto* comm = std::get_if<CommRecord>(&record)) {
      if (!comm->exec) return;
      changes[comm->pid].push_back({at.time, sequence});
      return;
    }
    if (auto* task = std::get_if<TaskRecord>(&record)) {
      if (task->pid == task->ppid) return;  // a thread
      changes[task->pid].push_back({at.time, sequence});
      return;
    }
    std::uint16_t cpumode = at.view.header.misc & misc::cpumode_mask;
    if (cpumode == misc::kernel || cpumode == misc::guest_kernel) {
      // The kernel's map carries the address of _text as its pgoff: which kallsyms names it.
      std::string_view path;
      std::uint64_t pgoff = 0;
      if (auto* mmap = std::get_if<MmapRecord>(&record)) {
        path = mmap->filename, pgoff = mmap->pgoff;
      } else {
        path = std::get<Mmap2Record>(record).filename, pgoff = std::get<Mmap2Record>(record).pgoff;
      }
      if (cpumode == misc::kernel && path.starts_with(kernel_dso_name)) {
        kernel_references.push_back(pgoff);
      }
      return;
    }
    Mapping mapping;
    std::string_view path;
    std::span<const std::byte> build_id;
    std::uint64_t length;
    if (auto* mmap = std::get_if<MmapRecord>(&record)) {
      if (static_cast<std::int32_t>(mmap->pid) == perf_data::host_kernel_pid) return;
      mapping.pid = mmap->pid, mapping.start = mmap->addr, length = mmap->len;
      mapping.pgoff = mmap->pgoff, path = mmap->filename;
    } else {
      auto& mmap2 = std::get<Mmap2Record>(record);
      mapping.pid = mmap2.pid, mapping.start = mmap2.addr, length = mmap2.len;
      mapping.pgoff = mmap2.pgoff, path = mmap2.filename;
      if (mmap2.has_build_id) build_id = mmap2.build_id;
    }
    mapping.time = at.time;
    mapping.sequence = sequence;
    mapping.end =
        length > ~std::uint64_t{0} - mapping.start ? ~std::uint64_t{0} : mapping.start + length;
    changes[mapping.pid].push_back({at.time, sequence, mapping.start, mapping.end});
    mapping.file = no_file;
    if (!is_anonymous_mapping(path) && path.front() != '[') {
      key.assign(path);
      key.push_back('\0');
      key.append(reinterpret_cast<const char*>(build_id.data()), build_id.size());
      auto [found, added] = file_index.try_emplace(key, files.size());
      if (added) {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(build_id.data());
        MappedFile& file =
            files.emplace_back(MappedFile{std::string(path), {bytes, bytes + build_id.size()}});
        file_keys.push_back(key);
        auto listed = recorded.find(file.path);
        if (file.build_id.empty() && listed != recorded.end()) {
          file.build_id = listed->second;
        }
      }
      mapping.file = found->second;
    }
    mappings.push_back(mapping);
  };
  return !reader.for_each_record_but_samples(visit, from, to, stopped);
}

void NamedFunctionSieve::RecordedTasks::append(RecordedTasks&& later) {
  std::vector<std::size_t> file_of(later.files.size());
  for (std::size_t i = 0; i < later.files.size(); ++i) {
    auto [found, added] = file_index.try_emplace(later.file_keys[i], files.size());
    if (added) {
      files.push_back(std::move(later.files[i]));
      file_keys.push_back(std::move(later.file_keys[i]));
    }
    file_of[i] = found->second;
  }
  for (Mapping& mapping : later.mappings) {
    if (mapping.file != no_file) mapping.file = file_of[mapping.file];
    mappings.push_back(mapping);
  }
  for (auto& [pid, changed] : later.changes) {
    auto& into = changes[pid];
    into.insert(into.end(), changed.begin(), changed.end());
  }
  kernel_references.insert(kernel_references.end(), later.kernel_references.begin(),
                           later.kernel_references.end());
  offsets_known = offsets_known && later.offsets_known;
  other_records.insert(other_records.end(), later.other_records.begin(), later.other_records.end());
}

bool NamedFunctionSieve::read_tasks(const PerfDataReader& reader, RecordedTasks& tasks) {
  tasks.offsets_known = !reader.features().compression;
  std::uint64_t begin = reader.data_offset(), end = reader.data_end();
  // Two parts on two threads where the data is large: the second from a record that looks
  // like a FINISHED_ROUND, taken when the first part's walk stops right there (else the first
  // walk goes on alone). Not in compressed data, which is one stream from its start.
  std::optional<std::uint64_t> split;
  if (tasks.offsets_known && end - begin >= PerfDataReader::pipelined_min_bytes &&
      std::thread::hardware_concurrency() >= 2) {
    split = reader.finished_round_after(begin + (end - begin) / 2);
  }
  if (!split) {
    if (!tasks.read(reader, 0, end, tasks.recorded_build_ids, nullptr)) return false;
  } else {
    RecordedTasks later;
    later.offsets_known = tasks.offsets_known;
    bool later_read = false;
    std::thread second(
        [&] { later_read = later.read(reader, *split, end, tasks.recorded_build_ids, nullptr); });
    std::uint64_t stopped = 0;
    bool read = tasks.read(reader, 0, *split, tasks.recorded_build_ids, &stopped);
    second.join();
    if (!read) return false;
    if (stopped == *split) {
      if (!later_read) return false;
      tasks.append(std::move(later));
    } else if (!tasks.read(reader, stopped, end, tasks.recorded_build_ids, nullptr)) {
      return false;
    }
  }
  files_ = std::move(tasks.files);
  other_records_ = std::move(tasks.other_records);
  offsets_known_ = tasks.offsets_known;
  return true;
}

void NamedFunctionSieve::read_recorded_build_ids(const PerfDataReader& reader,
                                                 RecordedTasks& tasks) {
  // The build ids the recording lists per file, for mappings whose record had none (the
  // profile builder reads them the same way).
  for (const BuildIdEntry& entry : reader.features().build_ids) {
    if (entry.build_id.empty() || entry.filename.empty() || entry.filename.size() > 4000) continue;
    std::vector<std::uint8_t> id(
        entry.build_id.begin(),
        entry.build_id.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                     entry.build_id.size(), perf_data::build_id_max)));
    if ((entry.misc & misc::cpumode_mask) == misc::kernel &&
        entry.filename.starts_with(kernel_dso_name)) {
      tasks.kernel_build_id = std::move(id);
    } else {
      tasks.recorded_build_ids[entry.filename] = std::move(id);
    }
  }
}

void NamedFunctionSieve::plan(
    const RecordedTasks& tasks,
    const std::vector<std::optional<std::vector<Symbolizer::FunctionFileRange>>>& functions,
    const std::vector<bool>& ambiguous) {
  Ranges cleared, keep;
  std::map<std::tuple<std::size_t, std::uint64_t, std::uint64_t>, std::size_t> range_index;
  for (const RecordedTasks::Mapping& mapping : tasks.mappings) {
    if (mapping.file == no_file || !functions[mapping.file]) {
      keep.emplace_back(mapping.start, mapping.end);
      continue;
    }
    cleared.emplace_back(mapping.start, mapping.end);
    std::uint64_t length = mapping.end - mapping.start;
    for (const auto& function : *functions[mapping.file]) {
      // The offsets of the function that this mapping holds, as addresses.
      std::uint64_t from = std::max(function.first, mapping.pgoff);
      std::uint64_t to =
          std::min(function.second, mapping.pgoff + std::min(length, ~mapping.pgoff));
      if (from >= to) continue;
      std::uint64_t start = mapping.start + (from - mapping.pgoff);
      std::uint64_t end = mapping.start + (to - mapping.pgoff);
      keep.emplace_back(start, end);
      // A mapping without a time is handed out where the walk meets it: no time says when.
      if (ambiguous[mapping.file] || mapping.time == 0) continue;
      // Until a later record of the process maps something over it, or the process execs.
      Window window{mapping.pid, start, end, mapping.time, no_time, from, 0};
      for (const RecordedTasks::ProcessChange& change : tasks.changes.at(mapping.pid)) {
        if (change.sequence == mapping.sequence || change.end <= start || end <= change.start) {
          continue;
        }
        if (change.time != 0) {
          if (change.time >= mapping.time) window.before = std::min(window.before, change.time);
        } else if (change.sequence > mapping.sequence) {
          // Without a time, after the mapping in the file: it takes effect somewhere among
          // the samples of the window, and which ones only the walk knows.
          window.before = 0;
        }
        // (Before the mapping in the file and without a time, it is handed out before the
        // mapping is: the synthesized records of the processes that were there at the start.)
      }
      if (window.before <= window.after + 1) continue;
      // One count per address of the file, however many processes map it.
      auto [range, added] =
          range_index.try_emplace(std::make_tuple(mapping.file, from, to), ranges_.size());
      if (added) ranges_.push_back({mapping.file, from, to - from});
      window.range = range->second;
      windows_.push_back(window);
    }
  }
  leave_out_ = subtracted(merged(std::move(cleared)), merged(std::move(keep)));
  std::sort(windows_.begin(), windows_.end(), [](const Window& a, const Window& b) {
    return std::tie(a.pid, a.start) < std::tie(b.pid, b.start);
  });
}

std::optional<NamedFunctionSieve> NamedFunctionSieve::make(const PerfDataReader& reader,
                                                           const ProfileOptions& options,
                                                           const std::vector<std::string>& names) {
  if (names.empty()) return std::nullopt;
  NamedFunctionSieve sieve;
  sieve.reader_ = &reader;
  sieve.event_ = options.filter.event;
  sieve.names_ = names;
  RecordedTasks tasks;
  read_recorded_build_ids(reader, tasks);
  sieve.scout_ = std::make_unique<Symbolizer>(options.symbols);
  sieve.scout_->set_kernel_build_id(tasks.kernel_build_id);
  // A damaged file is read the usual way, which says where and why.
  if (!sieve.read_tasks(reader, tasks)) return std::nullopt;
  // Kernel samples are counted toward the totals alone when no kernel symbol can have those
  // names: which names are the kernel's only kallsyms says (its text is searched, not parsed,
  // and only once a kernel sample is met). Which text the kernel is named from depends on the
  // kernel map's _text, which the first pass found.
  sieve.kallsyms_ = sieve.scout_->kallsyms_sources();
  for (const std::string& name : names) sieve.raw_parts_.emplace_back(raw_part_of(name));
  std::vector<std::uint64_t>& references = tasks.kernel_references;
  std::sort(references.begin(), references.end());
  sieve.kernel_reference_ =
      !references.empty() && references.front() == references.back() ? references.front() : 0;

  // With several names, a symbol may match any one of them: no one part is sure to be there.
  std::string_view raw_part = names.size() == 1 ? raw_part_of(names.front()) : std::string_view();
  auto wanted = [&names](std::string_view shown) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& name) { return symbol_names_match(shown, name); });
  };
  for (const PerfDataEventInfo& event : reader.events()) {
    sieve.layouts_.push_back(SampleLayout::of(event.config.sample_type));
  }
  std::vector<std::optional<std::vector<Symbolizer::FunctionFileRange>>> functions(
      sieve.files_.size());
  // Files where two symbols have one name: the profile keeps them as one function that starts
  // where the first one sampled in time does, which only the ordered walk knows.
  std::vector<bool> ambiguous(sieve.files_.size());
  bool found_any = false;
  for (std::size_t i = 0; i < sieve.files_.size(); ++i) {
    functions[i] = sieve.scout_->file_ranges_of_functions(
        sieve.files_[i].path, sieve.files_[i].build_id, raw_part, wanted);
    if (!functions[i] || functions[i]->empty()) continue;
    found_any = true;
    for (const auto& a : *functions[i]) {
      for (const auto& b : *functions[i])
        ambiguous[i] = ambiguous[i] || (a.name == b.name && a.address != b.address);
    }
  }
  if (!found_any) return std::nullopt;

  sieve.plan(tasks, functions, ambiguous);
  return sieve;
}

NamedFunctionSieve::SampleLayout NamedFunctionSieve::SampleLayout::of(std::uint64_t type) {
  // The fields before the first variable-sized one, each one u64 (TID and CPU two u32s).
  constexpr std::uint64_t fixed = sf::identifier | sf::ip | sf::tid | sf::time | sf::addr | sf::id |
                                  sf::stream_id | sf::cpu | sf::period;
  SampleLayout layout;
  std::uint32_t at = abi::record_header_size;
  for (std::uint64_t field : {sf::identifier, sf::ip, sf::tid, sf::time, sf::addr, sf::id,
                              sf::stream_id, sf::cpu, sf::period}) {
    if (!(type & field)) continue;
    if (field == sf::ip) layout.ip = at;
    if (field == sf::tid) layout.pid = at;
    if (field == sf::period) layout.period = at;
    at += 8;
  }
  if ((type & ~fixed) == 0) layout.size = at;
  if (!(type & sf::ip)) layout.ip = absent;
  return layout;
}

NamedFunctionSieve::Tally NamedFunctionSieve::new_tally() const {
  Tally tally;
  tally.hits.resize(ranges_.size());
  for (std::size_t i = 0; i < ranges_.size(); ++i) tally.hits[i].resize(ranges_[i].size);
  return tally;
}

void NamedFunctionSieve::add(Tally& into, const Tally& from) {
  into.samples += from.samples;
  into.period += from.period;
  into.read += from.read;
  into.kernel_samples += from.kernel_samples;
  into.kernel_period += from.kernel_period;
  into.kernel_read += from.kernel_read;
  into.kernel_records.insert(into.kernel_records.end(), from.kernel_records.begin(),
                             from.kernel_records.end());
  for (std::size_t i = 0; i < into.hits.size(); ++i) {
    for (std::size_t j = 0; j < into.hits[i].size(); ++j) {
      into.hits[i][j].samples += from.hits[i][j].samples;
      into.hits[i][j].period += from.hits[i][j].period;
    }
  }
}

void NamedFunctionSieve::decide_kernel() {
  if (kernel_decided_) return;
  std::uint64_t reference = kernel_reference_;
  leave_out_kernel_ =
      !Symbolizer::kallsyms_may_contain(kallsyms_, raw_parts_, [reference] { return reference; });
  kernel_decided_ = true;
}

const NamedFunctionSieve::Window* NamedFunctionSieve::window_of(std::uint32_t pid, std::uint64_t ip,
                                                                std::uint64_t time) const {
  auto in = [&](const Window& window) {
    return (ip - window.start < window.end - window.start) & (window.pid == pid) &
           (time > window.after) & (time < window.before);
  };
  // A few windows (a process or two): all of them, without a branch per window, which the
  // samples of two processes taking turns would mispredict half the time.
  constexpr std::size_t scanned = 16;
  if (windows_.size() <= scanned) {
    std::size_t found = windows_.size();
    for (std::size_t i = 0; i < windows_.size(); ++i) found = in(windows_[i]) ? i : found;
    return found == windows_.size() ? nullptr : &windows_[found];
  }
  auto first = std::lower_bound(
      windows_.begin(), windows_.end(), pid,
      [](const Window& window, std::uint32_t value) { return window.pid < value; });
  for (auto window = first; window != windows_.end() && window->pid == pid; ++window) {
    if (in(*window)) return &*window;
  }
  return nullptr;
}

bool NamedFunctionSieve::left_out(std::uint64_t ip) const {
  // A few ranges (a binary and a library or two): all of them, without a branch per range.
  constexpr std::size_t scanned = 16;
  if (leave_out_.size() <= scanned) {
    bool in = false;
    for (const auto& [start, end] : leave_out_) in |= ip - start < end - start;
    return in;
  }
  auto after = std::upper_bound(
      leave_out_.begin(), leave_out_.end(), ip,
      [](std::uint64_t value, const std::pair<std::uint64_t, std::uint64_t>& range) {
        return value < range.first;
      });
  return after != leave_out_.begin() && ip < std::prev(after)->second;
}

bool NamedFunctionSieve::counts(const PerfDataRecord& record, Tally& tally) const {
  std::uint16_t cpumode = record.view.header.misc & misc::cpumode_mask;
  bool kernel = cpumode == misc::kernel;
  if (cpumode != misc::user && !(kernel && (leave_out_kernel_ || !kernel_decided_))) {
    return false;
  }
  if (record.event >= layouts_.size()) return false;
  const SampleLayout& layout = layouts_[record.event];
  std::uint64_t ip = 0, period = 1;
  std::uint32_t pid = 0;
  bool has_ip = layout.ip != SampleLayout::absent, has_pid = layout.pid != SampleLayout::absent;
  if (layout.size != 0) {
    // Fields at fixed places: the sample decodes exactly when it is that long.
    if (record.view.header.size < layout.size || record.view.bytes.size() < layout.size) {
      return false;
    }
    const std::byte* bytes = record.view.bytes.data();
    if (has_ip) std::memcpy(&ip, bytes + layout.ip, sizeof ip);
    if (has_pid) std::memcpy(&pid, bytes + layout.pid, sizeof pid);
    if (layout.period != SampleLayout::absent) std::memcpy(&period, bytes + layout.period, 8);
  } else {
    DecodeError error;
    SampleRecord& sample = tally.sample;
    if (!decode_sample(record.view, reader_->events()[record.event].config, sample, error)) {
      return false;
    }
    ip = sample.ip, pid = sample.pid;
    if (sample.has(sf::period)) period = sample.period;
  }
  bool of_the_event = !event_ || *event_ == record.event;
  auto count_total = [&] {
    ++tally.read;
    if (of_the_event) {
      ++tally.samples;
      tally.period += period;
    }
    return true;
  };
  if (kernel && !kernel_decided_) {
    // count_samples decides afterwards whether these count or are kept.
    ++tally.kernel_read;
    if (of_the_event) {
      ++tally.kernel_samples;
      tally.kernel_period += period;
    }
    tally.kernel_records.push_back(record.offset);
    return true;
  }
  if (kernel) return count_total();
  if (!has_ip) return false;
  if (has_pid && record.time != 0) {
    const Window* found = window_of(pid, ip, record.time);
    if (found) {
      if (of_the_event) {
        const FileRange& range = ranges_[found->range];
        AddressHits& hits =
            tally.hits[found->range][found->offset_at_start + (ip - found->start) - range.first];
        ++hits.samples;
        hits.period += period;
      }
      return count_total();
    }
  }
  return left_out(ip) && count_total();
}

bool NamedFunctionSieve::keep(const PerfDataRecord& record) {
  if (record.view.header.type != static_cast<std::uint32_t>(abi::RecordType::sample)) return true;
  if ((record.view.header.misc & misc::cpumode_mask) == misc::kernel) decide_kernel();
  if (tally_.hits.size() != ranges_.size()) tally_ = new_tally();
  return !counts(record, tally_);
}

std::optional<std::vector<std::uint64_t>> NamedFunctionSieve::count_samples() {
  if (!offsets_known_) return std::nullopt;
  // Two parts, split at a record the first pass met, each scanned on a thread of its own: the
  // samples need no order to be counted.
  std::uint64_t begin = reader_->data_offset(), end = reader_->data_end();
  std::vector<std::uint64_t> splits{begin};
  if (end - begin >= PerfDataReader::pipelined_min_bytes &&
      std::thread::hardware_concurrency() >= 2 && !other_records_.empty()) {
    auto middle =
        std::lower_bound(other_records_.begin(), other_records_.end(), begin + (end - begin) / 2);
    if (middle != other_records_.end() && *middle > begin) splits.push_back(*middle);
  }
  splits.push_back(end);
  std::size_t parts = splits.size() - 1;
  std::vector<Tally> tallies;
  for (std::size_t i = 0; i < parts; ++i) tallies.push_back(new_tally());
  std::vector<std::vector<std::uint64_t>> kept(parts);
  std::vector<std::optional<PerfDataError>> errors(parts);
  auto scan = [&](std::size_t part) {
    errors[part] = reader_->for_each_sample_between(splits[part], splits[part + 1],
                                                    [&](const PerfDataRecord& record) {
                                                      if (!counts(record, tallies[part]))
                                                        kept[part].push_back(record.offset);
                                                    });
  };
  std::vector<std::thread> threads;
  for (std::size_t part = 1; part < parts; ++part) threads.emplace_back(scan, part);
  scan(0);
  for (std::thread& thread : threads) thread.join();
  // A compressed or unaligned record the first pass did not tell: sieved in the walk instead.
  for (const auto& error : errors) {
    if (error) return std::nullopt;
  }
  tally_ = new_tally();
  for (const Tally& tally : tallies) add(tally_, tally);
  std::vector<std::uint64_t> records = std::move(other_records_);
  auto merge_into_records = [&records](const std::vector<std::uint64_t>& more) {
    std::vector<std::uint64_t> merged_records;
    merged_records.reserve(records.size() + more.size());
    std::merge(records.begin(), records.end(), more.begin(), more.end(),
               std::back_inserter(merged_records));
    records = std::move(merged_records);
  };
  for (const auto& part : kept) merge_into_records(part);
  if (tally_.kernel_read != 0) {
    decide_kernel();
    if (leave_out_kernel_) {
      tally_.samples += tally_.kernel_samples;
      tally_.period += tally_.kernel_period;
      tally_.read += tally_.kernel_read;
    } else {
      merge_into_records(tally_.kernel_records);
    }
  }
  tally_.kernel_records = {};
  return records;
}

std::vector<SievedFunction> NamedFunctionSieve::counted_functions() {
  std::vector<SievedFunction> functions;
  auto wanted = [&](std::string_view shown) {
    return std::any_of(names_.begin(), names_.end(),
                       [&](const std::string& name) { return symbol_names_match(shown, name); });
  };
  if (tally_.hits.size() != ranges_.size()) return functions;  // nothing was counted
  for (std::size_t r = 0; r < ranges_.size(); ++r) {
    const FileRange& range = ranges_[r];
    const MappedFile& file = files_[range.file];
    for (std::size_t i = 0; i < range.size; ++i) {
      const AddressHits& hits = tally_.hits[r][i];
      if (hits.samples == 0) continue;
      std::uint64_t offset = range.first + i;
      // A symbol nested in the function names its own addresses: those samples are another
      // function's, and the totals hold them already.
      SymbolizedAddress symbol = scout_->resolve_file(file.path, offset, file.build_id);
      if (symbol.symbol.empty() || !wanted(symbol.symbol)) continue;
      auto function = std::find_if(
          functions.begin(), functions.end(),
          [&](const SievedFunction& f) { return f.name == symbol.symbol && f.dso == file.path; });
      if (function == functions.end()) {
        function = functions.insert(functions.end(), SievedFunction{});
        function->name = std::string(symbol.symbol);
        function->dso = file.path;
        if (!file.build_id.empty()) function->build_id = build_id_hex(file.build_id);
        function->start = offset - symbol.offset;
      }
      AddressHits& at = function->by_address[offset];
      at.samples += hits.samples;
      at.period += hits.period;
      function->samples += hits.samples;
      function->period += hits.period;
    }
  }
  return functions;
}

}  // namespace perfscope
