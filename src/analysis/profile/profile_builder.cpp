#include "perfscope/analysis/profile/profile_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <variant>

#include "analysis/path_names.hpp"
#include "analysis/profile/flat_index_map.hpp"
#include "analysis/profile/profile_parts.hpp"
#include "analysis/profile/stack_completeness.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/analysis/recording/lost_warning.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace perfscope {

namespace {

// perf's name for an address no symbol covers: "0x" and 16 hex digits ("%#.16llx", so 0 is
// sixteen zeros).
std::string unresolved_function_name(std::uint64_t address) {
  return address == 0 ? std::string(16, '0') : fmt::format("{:#018x}", address);
}

namespace sf = abi::sample_format;
namespace cc = abi::callchain_context;
namespace misc = abi::record_misc;
using detail::FlatIndexMap;

using detail::file_name_of;

}  // namespace

struct ProfileBuilder::State {
  explicit State(ProfileOptions o)
      : options(std::move(o)),
        resolver(StackResolverOptions{options.symbols, options.callchains}) {}

  ProfileOptions options;
  StackResolver resolver;  // the walk of each sample's stack and the naming of its ips
  struct EventState {
    ParseConfig config;
    SampleRecord sample;  // reused: decoding into the same object is the decoder's fast path
  };
  std::vector<EventState> events;
  Profile profile;

  // Interning tables.
  std::unordered_map<std::string, std::uint32_t> dso_index;
  std::unordered_map<std::string, std::uint32_t> function_index;  // name '\0' dso
  FlatIndexMap frame_index;               // (address, function << 1 | inlined) -> frame
  FlatIndexMap address_frames;            // (address, context) -> run in frame_runs
  std::vector<std::uint32_t> frame_runs;  // [count, frame (outermost first)...] per address
  FlatIndexMap stack_index;               // (parent, frame) -> stack
  FlatIndexMap mapping_keys;              // (start, pid << 32 | dso) -> mapping
  FlatIndexMap thread_index;              // (tid, generation of its comm) -> thread
  std::unordered_map<std::string, std::uint32_t> comm_ids;
  std::vector<std::int8_t> function_passes;  // the leaf filters per function: -1 not yet known
  FlatIndexMap group_index;  // (stack << 32 | thread, event << 32 | cpu) -> sample group

  // Kernel frames are named in finish(), kallsyms meanwhile loading on a thread of its own
  // (Symbolizer::prefetch_kernel): reading /proc/kallsyms is a large share of a report's time.
  // The leaf filters need the names at once, so with them frames are named as they come.
  bool defer_kernel = !options.filter.by_leaf_function();
  struct PendingKernelFrame {
    std::uint32_t frame;
    ResolvedAddress where;  // unnamed yet
  };
  std::vector<PendingKernelFrame> pending_kernel;

  // Continuous profiling (finish_interval) runs for as long as the machine does: tasks that
  // exited are forgotten one interval after their EXIT (a sample of the task may still come in
  // the next one), and the resolver's address cache is dropped past a bound, so that memory
  // follows the live tasks, not every task ever seen. A file's replay never forgets.
  static constexpr std::size_t interval_address_cache_limit = std::size_t{1} << 17;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> exited_now, exited_before;  // pid, tid

  // The last answers per thread (by tid, direct-mapped): its thread entry and its process's
  // mappings generation, good until the next COMM, FORK or MMAP record (task_epoch).
  std::uint64_t task_epoch = 0;
  // The group of the last leaf-only sample of a thread at an ip (see observe_sample).
  struct LeafGroupEntry {
    std::uint64_t ip = 0, epoch = 0;
    std::uint32_t pid = 0, tid = 0, cpu = 0, event = 0;
    std::uint32_t group = no_index;
    std::uint16_t cpumode = 0;
  };
  static constexpr unsigned leaf_group_bits = 12;
  std::vector<LeafGroupEntry> leaf_groups = std::vector<LeafGroupEntry>(1u << leaf_group_bits);
  struct TaskCacheEntry {
    std::uint64_t epoch = ~std::uint64_t{0};
    std::uint32_t pid = 0, tid = 0;
    std::uint32_t thread = no_index;
    std::uint64_t maps_generation = 0;
  };
  std::array<TaskCacheEntry, 256> task_cache;

  // Per-sample scratch space, kept between samples.
  std::vector<StackAddress> stack_ips;
  std::vector<std::uint32_t> leaf_first_frames;
  std::string key;

  std::uint64_t undecodable = 0;

  // build_profile's chunks (begin_chunk): where each begins. Each group is listed once, when
  // made: a chunk's new groups are those listed while it was observed (a group this worker made
  // in an earlier chunk was met there first).
  std::vector<ProfileChunkMark> chunk_marks;
  std::vector<std::uint32_t> touched_groups;  // remapped by name_kernel_frames

  std::uint32_t intern_dso(std::string_view path, bool kernel,
                           std::span<const std::uint8_t> build_id) {
    key.assign(path);
    auto found = dso_index.find(key);
    if (found != dso_index.end()) return found->second;
    ProfileDso dso;
    dso.path = std::string(path);
    dso.kernel = kernel;
    if (build_id.empty()) build_id = resolver.recorded_build_id(path);
    if (!build_id.empty()) {
      dso.build_id = build_id_hex(std::vector<std::uint8_t>(build_id.begin(), build_id.end()));
    }
    auto index = static_cast<std::uint32_t>(profile.dsos.size());
    profile.dsos.push_back(std::move(dso));
    dso_index.emplace(profile.dsos.back().path, index);
    return index;
  }

  // A function is its file and symbol start (resolved, not inlined: `start` nonzero), else its
  // file and name (inlined calls, unresolved addresses, --group-by-name).
  std::uint32_t intern_function(std::string_view name, std::uint32_t dso, bool resolved,
                                std::uint64_t start, bool inlined = false) {
    key.assign(name);
    key.push_back('\0');
    key.append(reinterpret_cast<const char*>(&dso), sizeof dso);
    if (resolved && !inlined && !options.group_functions_by_name) {
      key.push_back('\1');
      key.append(reinterpret_cast<const char*>(&start), sizeof start);
    }
    auto found = function_index.find(key);
    if (found != function_index.end()) return found->second;
    auto index = static_cast<std::uint32_t>(profile.functions.size());
    profile.functions.push_back(ProfileFunction{std::string(name), dso, resolved, start});
    function_passes.push_back(-1);
    function_index.emplace(key, index);
    return index;
  }

  std::uint32_t intern_frame(ProfileFrame frame) {
    std::uint64_t b = std::uint64_t{frame.function} << 1 | (frame.inlined ? 1 : 0);
    std::uint32_t found = frame_index.find(frame.address, b);
    if (found != FlatIndexMap::absent) return found;
    auto index = static_cast<std::uint32_t>(profile.frames.size());
    frame_index.insert(frame.address, b, index);
    profile.frames.push_back(std::move(frame));
    return index;
  }

  // The mapping a frame was found in, kept as it is now (the first sample to hit it).
  std::uint32_t intern_mapping(std::uint32_t pid, const TaskMaps::MappingView& mapping,
                               std::uint32_t dso) {
    auto index = static_cast<std::uint32_t>(profile.mappings.size());
    std::uint32_t found = mapping_keys.insert(mapping.start, std::uint64_t{pid} << 32 | dso, index);
    if (found == index) {
      profile.mappings.push_back({pid, dso, mapping.start, mapping.end, mapping.pgoff});
    }
    return found;
  }

  // Names one ip (through the resolver) as frames (the inlined calls there, then the real
  // function) appended to frame_runs; returns the run's offset.
  std::uint32_t resolve(std::uint32_t pid, const StackAddress& ip) {
    const ResolvedAddress& where = resolver.resolve(pid, ip, !defer_kernel);
    if (!where.named) return defer_kernel_frame(where);
    const SymbolizedAddress& symbol = where.symbol;
    // An ELF file's build id: its MMAP2 record's, else the recorded one (intern_dso).
    bool elf_file = !where.kernel && where.mapping && where.dso == *where.mapping->filename &&
                    !is_anonymous_mapping(where.dso) && where.dso.front() != '[';
    std::uint32_t dso = where.dso.empty() ? no_index
                                          : intern_dso(where.dso, where.kernel,
                                                       elf_file ? where.mapping->build_id
                                                                : std::span<const std::uint8_t>());
    std::string_view function_name = symbol.symbol;
    if (function_name.empty()) {
      // One function per address, as perf keeps one row per address: the ip itself where no
      // file maps it, else its offset in the file (the same for sampled ips and callers).
      key = unresolved_function_name(dso == no_index ? ip.ip : where.dso_address);
      function_name = key;
    }
    std::string name_storage(function_name);
    std::uint64_t start = where.dso_address;
    if (!symbol.symbol.empty()) start = where.dso_address - where.function_offset();
    std::uint32_t function = intern_function(name_storage, dso, !symbol.symbol.empty(), start);
    std::uint32_t mapping_index = mapping_of(pid, where, dso);

    auto offset = static_cast<std::uint32_t>(frame_runs.size());
    frame_runs.push_back(static_cast<std::uint32_t>(1 + symbol.inlined.size()));
    ProfileFrame outer;
    outer.function = function;
    outer.address = ip.ip;
    outer.dso_address = where.dso_address;
    outer.kernel = where.kernel;
    outer.source_file = std::string(symbol.source.file);
    outer.line = symbol.source.line;
    outer.mapping = mapping_index;
    frame_runs.push_back(intern_frame(std::move(outer)));
    // Innermost call first in `inlined`: the run goes outermost first, so walk it backwards.
    for (std::size_t i = symbol.inlined.size(); i-- > 0;) {
      const InlinedCall& call = symbol.inlined[i];
      ProfileFrame frame;
      frame.function = intern_function(call.function, dso, true, 0, true);
      frame.address = ip.ip;
      frame.dso_address = where.dso_address;
      frame.kernel = where.kernel;
      frame.source_file = std::string(call.location.file);
      frame.line = call.location.line;
      frame.inlined = true;
      frame.mapping = mapping_index;
      frame_runs.push_back(intern_frame(std::move(frame)));
    }
    return offset;
  }

  // The mapping a frame of `dso` was found in; a kernel module's code lies inside the kernel's
  // mapping but is not the kernel image.
  std::uint32_t mapping_of(std::uint32_t pid, const ResolvedAddress& where, std::uint32_t dso) {
    if (!where.mapping || dso == no_index) return no_index;
    if (where.kernel && profile.dsos[dso].path != *where.mapping->filename) return no_index;
    return intern_mapping(where.kernel ? no_index : pid, *where.mapping, dso);
  }

  // A kernel frame whose name finish() fills in (name_kernel_frames): one per address and way it
  // was reached, as the frames_of cache asks for it once per both.
  std::uint32_t defer_kernel_frame(const ResolvedAddress& where) {
    ProfileFrame frame;
    frame.address = where.address.ip;
    frame.dso_address = where.address.ip;
    frame.kernel = true;
    auto index = static_cast<std::uint32_t>(profile.frames.size());
    profile.frames.push_back(std::move(frame));
    pending_kernel.push_back({index, where});
    auto offset = static_cast<std::uint32_t>(frame_runs.size());
    frame_runs.push_back(1);
    frame_runs.push_back(index);
    return offset;
  }

  // Names the deferred kernel frames, then makes frames that turned out the same (an address
  // met both as a sampled ip and as a return address, naming one function) one again, with
  // the stacks through them, as naming them at once would have.
  void name_kernel_frames() {
    if (pending_kernel.empty()) return;
    for (PendingKernelFrame& pending : pending_kernel) {
      ResolvedAddress& where = pending.where;
      resolver.name_kernel(where);
      const SymbolizedAddress& symbol = where.symbol;
      ProfileFrame& frame = profile.frames[pending.frame];
      // An ip outside every recorded kernel map has no file: [unknown], as in resolve().
      std::uint32_t dso = where.dso.empty() ? no_index : intern_dso(where.dso, true, {});
      std::string function_name = !symbol.symbol.empty() ? std::string(symbol.symbol)
                                                         : unresolved_function_name(frame.address);
      frame.function = intern_function(
          function_name, dso, !symbol.symbol.empty(),
          symbol.symbol.empty() ? frame.address : where.dso_address - where.function_offset());
      frame.source_file = std::string(symbol.source.file);
      frame.line = symbol.source.line;
      frame.mapping = mapping_of(no_index, where, dso);
    }
    pending_kernel.clear();

    std::vector<std::uint32_t> frame_map(profile.frames.size());
    FlatIndexMap canonical(profile.frames.size() * 2);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < profile.frames.size(); ++i) {
      const ProfileFrame& frame = profile.frames[i];
      std::uint64_t b = std::uint64_t{frame.function} << 1 | (frame.inlined ? 1 : 0);
      std::uint32_t found = canonical.insert(frame.address, b, static_cast<std::uint32_t>(kept));
      if (found == kept) {
        if (kept != i) profile.frames[kept] = std::move(profile.frames[i]);
        ++kept;
      }
      frame_map[i] = found;
    }
    if (kept == profile.frames.size()) return;
    profile.frames.resize(kept);
    // A stack's parent comes before it: remapped in order, each parent is final when needed.
    std::vector<std::uint32_t> stack_map(profile.stacks.size());
    FlatIndexMap stacks(profile.stacks.size() * 2);
    std::vector<ProfileStack> merged;
    merged.reserve(profile.stacks.size());
    for (std::size_t i = 0; i < profile.stacks.size(); ++i) {
      ProfileStack stack = profile.stacks[i];
      if (stack.parent != no_index) stack.parent = stack_map[stack.parent];
      stack.frame = frame_map[stack.frame];
      auto index = static_cast<std::uint32_t>(merged.size());
      std::uint32_t found = stacks.insert(stack.parent, stack.frame, index);
      if (found == index) merged.push_back(stack);
      stack_map[i] = found;
    }
    profile.stacks = std::move(merged);
    for (ProfileSample& sample : profile.samples) {
      if (sample.stack != no_index) sample.stack = stack_map[sample.stack];
    }
    std::vector<ProfileSampleGroup> groups = std::move(profile.sample_groups);
    profile.sample_groups.clear();
    group_index = FlatIndexMap(groups.size() * 2);
    std::vector<std::uint32_t> group_map(groups.size());
    std::vector<std::uint32_t> listed = std::move(touched_groups);
    touched_groups.clear();
    for (std::size_t i = 0; i < groups.size(); ++i) {
      ProfileSampleGroup& group = groups[i];
      if (group.stack != no_index) group.stack = stack_map[group.stack];
      group_map[i] = add_to_group(group.stack, group.thread, group.event, group.cpu, group.samples,
                                  group.period, group.state);
    }
    for (std::uint32_t& group : listed) group = group_map[group];
    touched_groups = std::move(listed);
    profile.timeline.remap_groups(group_map);
  }

  std::uint32_t add_to_group(std::uint32_t stack, std::uint32_t thread, std::uint32_t event,
                             std::uint32_t cpu, std::uint64_t samples, std::uint64_t period,
                             ThreadState state) {
    auto index = static_cast<std::uint32_t>(profile.sample_groups.size());
    std::uint64_t b = (std::uint64_t{event} << 8 | static_cast<std::uint8_t>(state)) << 32 | cpu;
    std::uint32_t found = group_index.insert(std::uint64_t{stack} << 32 | thread, b, index);
    if (found == index) {
      profile.sample_groups.push_back({stack, thread, event, cpu, 0, 0, state});
      touched_groups.push_back(index);
    }
    profile.sample_groups[found].samples += samples;
    profile.sample_groups[found].period += period;
    return found;
  }

  TaskCacheEntry& task_of(const SampleRecord& sample) {
    TaskCacheEntry& entry = task_cache[sample.tid % task_cache.size()];
    if (entry.epoch != task_epoch || entry.tid != sample.tid || entry.pid != sample.pid) {
      entry = {task_epoch, sample.pid, sample.tid, no_index,
               resolver.maps().maps_generation(sample.pid)};
    }
    return entry;
  }

  // The frames of one ip, outermost first, from the cache or the symbolizer. `generation`: of
  // the mappings of process `pid`.
  std::span<const std::uint32_t> frames_of(std::uint32_t pid, std::uint64_t generation,
                                           const StackAddress& ip) {
    // Kernel addresses mean the same in every process; user ones are keyed by the process and
    // the version of its mappings (exec and mmap change what an address names).
    std::uint64_t context = is_kernel_cpumode(ip.cpumode)
                                ? 1
                                : ((std::uint64_t{pid} << 32 ^ generation) << 2) | 2 |
                                      (ip.cpumode == misc::user ? 0 : 1ULL << 63);
    context ^= ip.return_address ? 1ULL << 62 : 0;
    std::uint32_t run = address_frames.find(ip.ip, context);
    if (run == FlatIndexMap::absent) {
      run = resolve(pid, ip);
      address_frames.insert(ip.ip, context, run);
    }
    return std::span<const std::uint32_t>(frame_runs).subspan(run + 1, frame_runs[run]);
  }

  std::uint32_t thread_of(const SampleRecord& sample) {
    std::string_view comm = resolver.maps().comm_of(sample.tid);
    std::string unknown;
    if (comm.empty()) {
      unknown = fmt::format(":{}", sample.tid);
      comm = unknown;
    }
    key.assign(comm);
    auto comm_id = comm_ids.find(key);
    auto id =
        comm_id != comm_ids.end()
            ? comm_id->second
            : comm_ids.emplace(key, static_cast<std::uint32_t>(comm_ids.size())).first->second;
    std::uint64_t a = std::uint64_t{sample.pid} << 32 | sample.tid;
    auto index = static_cast<std::uint32_t>(profile.threads.size());
    std::uint32_t found = thread_index.insert(a, id, index);
    if (found == index) profile.threads.push_back({sample.pid, sample.tid, std::string(comm)});
    return found;
  }

  bool thread_passes(const SampleRecord& sample) const {
    const ProfileFilter& filter = options.filter;
    if (!filter.pids.empty() &&
        std::find(filter.pids.begin(), filter.pids.end(), sample.pid) == filter.pids.end()) {
      return false;
    }
    if (!filter.tids.empty() &&
        std::find(filter.tids.begin(), filter.tids.end(), sample.tid) == filter.tids.end()) {
      return false;
    }
    if (!filter.comms.empty()) {
      std::string_view comm = resolver.maps().comm_of(sample.tid);
      if (std::find(filter.comms.begin(), filter.comms.end(), comm) == filter.comms.end()) {
        return false;
      }
    }
    return true;
  }

  bool function_passes_filter(std::uint32_t function) {
    std::int8_t& known = function_passes[function];
    if (known >= 0) return known != 0;
    const ProfileFilter& filter = options.filter;
    const ProfileFunction& f = profile.functions[function];
    bool pass = true;
    if (!filter.symbols.empty()) {
      pass =
          std::find(filter.symbols.begin(), filter.symbols.end(), f.name) != filter.symbols.end();
    }
    if (pass && !filter.symbol_part.empty()) {
      pass = f.name.find(filter.symbol_part) != std::string::npos;
    }
    if (pass && !filter.dsos.empty()) {
      std::string_view path = f.dso == no_index ? std::string_view("[unknown]")
                                                : std::string_view(profile.dsos[f.dso].path);
      pass = std::any_of(filter.dsos.begin(), filter.dsos.end(), [&](const std::string& dso) {
        return dso == path || dso == file_name_of(path) || dso == detail::short_dso_name(path);
      });
    }
    if (pass && filter.resolved_only) pass = f.resolved;
    known = pass ? 1 : 0;
    return pass;
  }

  void observe_sample(const RecordView& view, std::uint32_t event_index) {
    EventState& event = events[event_index];
    SampleRecord& sample = event.sample;
    DecodeError error;
    if (!decode_sample(view, event.config, sample, error)) {
      ++undecodable;
      return;
    }
    ++profile.summary.samples_read;
    if (options.filter.event && *options.filter.event != event_index) return;
    std::uint16_t cpumode = view.header.misc & misc::cpumode_mask;
    bool dwarf = sample.has(sf::regs_user) && sample.has(sf::stack_user);
    // An off-CPU sample's state is the first byte of its RAW payload (off_cpu_state.hpp); Linux
    // perf's own offcpu-time samples have none.
    ThreadState state = ThreadState::on_cpu;
    if (profile.events[event_index].off_cpu) {
      state = sample.has(sf::raw) && !sample.raw.empty()
                  ? thread_state_from_letter(static_cast<char>(sample.raw.front()))
                  : ThreadState::blocked;
    }
    std::uint32_t cpu = sample.has(sf::cpu) ? sample.cpu : no_index;
    std::uint64_t period = sample.has(sf::period) ? sample.period : 1;
    std::uint64_t time = sample.has(sf::time) ? sample.time : 0;
    // An off-CPU interval ends at its time: it is in the range when any of it is.
    std::uint64_t begin = state != ThreadState::on_cpu && time >= period ? time - period : time;
    // perf's --time and --cpu leave samples out of the recording's totals too (the shares are of
    // what they keep); the other filters hide rows, shares staying of the whole event.
    const ProfileFilter& filter = options.filter;
    if (!filter.times.empty() && (!sample.has(sf::time) || !filter.times.overlaps(begin, time))) {
      return;
    }
    if (!filter.cpus.empty() && (cpu >= filter.cpus.size() || !filter.cpus[cpu])) return;
    if (!filter.switches.keeps(event_index, time)) return;
    profile.events[event_index].period_read += sample.has(sf::period) ? sample.period : 1;
    ++profile.events[event_index].samples_read;
    if (!thread_passes(sample)) return;
    if (time < filter.from || begin >= filter.to) return;
    // A sample that is its ip alone, folded into groups: the group of the last sample of this
    // thread at this ip, while no COMM, FORK or MMAP came between, is its group again.
    LeafGroupEntry* leaf_entry = nullptr;
    if (!options.keep_samples && !dwarf && state == ThreadState::on_cpu &&
        !options.filter.by_leaf_function() &&
        !(options.callchains && sample.has(sf::callchain) && !sample.callchain.empty())) {
      std::uint64_t hash = (sample.ip ^ std::uint64_t{sample.tid} << 40) * 0x9e3779b97f4a7c15ULL;
      leaf_entry = &leaf_groups[hash >> (64 - leaf_group_bits)];
      if (leaf_entry->group != no_index && leaf_entry->ip == sample.ip &&
          leaf_entry->epoch == task_epoch && leaf_entry->tid == sample.tid &&
          leaf_entry->pid == sample.pid && leaf_entry->cpu == cpu &&
          leaf_entry->event == event_index && leaf_entry->cpumode == cpumode) {
        ProfileSampleGroup& group = profile.sample_groups[leaf_entry->group];
        ++group.samples;
        group.period += period;
        if (options.keep_sample_times) profile.timeline.append(leaf_entry->group, time, period);
        count_sample(event_index, period, time);
        return;
      }
    }
    resolver.walk_from_sample_ip(sample, cpumode, stack_ips,
                                 events[event_index].config.branch_sample_type);
    if (options.max_stack != 0)
      stack_ips.resize(std::min<std::size_t>(stack_ips.size(), options.max_stack));

    // Frames leaf first: within one ip's run the innermost inlined call is the leaf.
    TaskCacheEntry& task = task_of(sample);
    leaf_first_frames.clear();
    for (const StackAddress& ip : stack_ips) {
      auto run = frames_of(sample.pid, task.maps_generation, ip);
      for (std::size_t i = run.size(); i-- > 0;) leaf_first_frames.push_back(run[i]);
    }
    if (options.filter.by_leaf_function()) {
      if (!function_passes_filter(profile.frames[leaf_first_frames.front()].function)) return;
    }
    std::uint32_t stack = no_index;
    for (std::size_t i = leaf_first_frames.size(); i-- > 0;) {
      auto index = static_cast<std::uint32_t>(profile.stacks.size());
      std::uint32_t found = stack_index.insert(stack, leaf_first_frames[i], index);
      if (found == index) profile.stacks.push_back({stack, leaf_first_frames[i]});
      stack = found;
    }

    ProfileSample out;
    out.stack = stack;
    if (task.thread == no_index) task.thread = thread_of(sample);
    out.thread = task.thread;
    out.event = event_index;
    out.cpu = cpu;
    out.time = time;
    out.period = period;
    out.state = state;
    if (options.keep_samples) {
      profile.samples.push_back(out);
    } else {
      std::uint32_t group =
          add_to_group(out.stack, out.thread, out.event, out.cpu, 1, out.period, out.state);
      if (options.keep_sample_times) profile.timeline.append(group, time, period);
      if (leaf_entry) {
        *leaf_entry = {sample.ip, task_epoch,  sample.pid, sample.tid,
                       cpu,       event_index, group,      cpumode};
      }
    }
    count_sample(event_index, period, time);
  }

  void count_sample(std::uint32_t event_index, std::uint64_t period, std::uint64_t time) {
    ProfileEvent& summary_event = profile.events[event_index];
    ++summary_event.samples;
    summary_event.period += period;
    ProfileSummary& summary = profile.summary;
    if (summary.samples == 0 || time < summary.first_time) summary.first_time = time;
    summary.last_time = std::max(summary.last_time, time);
    ++summary.samples;
  }

  // PERF_RECORD_HEADER_BUILD_ID (pipe-mode files, and the BUILD_ID feature replayed by
  // build_profile): the build id a file had when it was recorded.
  void observe_build_id(const RecordView& view) {
    if (view.bytes.size() < sizeof(perf_data::BuildIdHead)) return;
    perf_data::BuildIdHead head;
    std::memcpy(&head, view.bytes.data(), sizeof head);
    std::size_t size = perf_data::build_id_max;
    if ((head.header.misc & perf_data::build_id_size_misc) != 0) {
      size = std::min<std::size_t>(head.build_id[20], perf_data::build_id_max);
    } else {
      // Without the size byte the id is zero-padded to 20: trim the padding of shorter ids.
      while (size > 0 && head.build_id[size - 1] == 0) --size;
    }
    auto name_bytes = view.bytes.subspan(sizeof head);
    const char* name = reinterpret_cast<const char*>(name_bytes.data());
    std::string filename(name, strnlen(name, name_bytes.size()));
    if (filename.empty() || size == 0) return;
    bool kernel = (head.header.misc & misc::cpumode_mask) == misc::kernel;
    if (kernel && filename.starts_with(kernel_dso_name)) filename = std::string(kernel_dso_name);
    resolver.add_recorded_build_id(filename, std::span(head.build_id, size));
  }

  // Starts a new profile for finish_interval(): the interning tables index the profile just
  // handed out, so they go with it; the tasks, mappings and symbol caches of the resolver stay.
  void start_next_interval(const Profile& finished) {
    profile = Profile{};
    for (const ProfileEvent& event : finished.events) {
      ProfileEvent fresh;
      fresh.name = event.name;
      fresh.has_callchains = event.has_callchains;
      profile.events.push_back(std::move(fresh));
    }
    profile.summary.dwarf_unwinding = finished.summary.dwarf_unwinding;
    dso_index.clear();
    function_index.clear();
    frame_index = FlatIndexMap();
    address_frames = FlatIndexMap();
    frame_runs.clear();
    stack_index = FlatIndexMap();
    mapping_keys = FlatIndexMap();
    thread_index = FlatIndexMap();
    comm_ids.clear();
    function_passes.clear();
    group_index = FlatIndexMap();
    // The finished profile's groups are gone: name_kernel_frames remaps the new ones only (a stale
    // index read past the new group map: an ASan report in a push run beside a compile).
    touched_groups.clear();
    std::fill(leaf_groups.begin(), leaf_groups.end(), LeafGroupEntry{});
    ++task_epoch;  // the task cache's thread indexes are the old profile's
    undecodable = 0;
    for (const auto& [pid, tid] : exited_before) resolver.forget_task(pid, tid);
    exited_before.swap(exited_now);
    exited_now.clear();
    // The kernel frames of the finished profile were named (finish_interval): no pending one
    // holds a resolution the cache owns.
    if (resolver.cached_addresses() > interval_address_cache_limit) resolver.clear_address_cache();
  }

  void observe(const RecordView& view, std::uint32_t event_index) {
    auto type = static_cast<abi::RecordType>(view.header.type);
    if (view.header.type == static_cast<std::uint32_t>(abi::UserRecordType::header_build_id)) {
      observe_build_id(view);
      return;
    }
    if (event_index >= events.size()) return;
    switch (type) {
      case abi::RecordType::sample: observe_sample(view, event_index); return;
      case abi::RecordType::comm:
      case abi::RecordType::fork:
      case abi::RecordType::mmap:
      case abi::RecordType::mmap2:
        resolver.observe(view, events[event_index].config);
        ++task_epoch;
        return;
      case abi::RecordType::exit: {
        // pid, ppid, tid, ptid (u32 each) after the header.
        std::uint32_t ids[3];
        if (view.bytes.size() < sizeof(abi::RecordHeader) + sizeof ids) return;
        std::memcpy(ids, view.bytes.data() + sizeof(abi::RecordHeader), sizeof ids);
        exited_now.emplace_back(ids[0], ids[2]);
        return;
      }
      case abi::RecordType::throttle: ++profile.summary.throttle; return;
      case abi::RecordType::unthrottle: ++profile.summary.unthrottle; return;
      case abi::RecordType::lost:
      case abi::RecordType::lost_samples: {
        // Both carry the count as the last u64 before the sample_id trailer: lost records have
        // an id first, lost samples do not.
        std::size_t offset = sizeof(abi::RecordHeader) + (type == abi::RecordType::lost ? 8 : 0);
        if (view.bytes.size() < offset + 8) return;
        std::uint64_t count;
        std::memcpy(&count, view.bytes.data() + offset, sizeof count);
        (type == abi::RecordType::lost ? profile.summary.lost : profile.summary.lost_samples) +=
            count;
        return;
      }
      default: return;
    }
  }
};

ProfileBuilder::ProfileBuilder(ProfileOptions options)
    : state_(std::make_unique<State>(std::move(options))) {
  state_->stack_ips.reserve(256);
  state_->leaf_first_frames.reserve(256);
}

ProfileBuilder::~ProfileBuilder() = default;

void ProfileBuilder::add_event(std::string name, const ParseConfig& config) {
  State& state = *state_;
  State::EventState event;
  event.config = config;
  state.events.push_back(std::move(event));
  ProfileEvent summary;
  summary.name = std::move(name);
  summary.off_cpu = summary.name == off_cpu_event_name;
  summary.has_callchains =
      state.options.callchains &&
      (config.has(sf::callchain) || (config.has(sf::regs_user) && config.has(sf::stack_user)));
  if (config.has(sf::regs_user) && config.has(sf::stack_user)) {
    state.profile.summary.dwarf_unwinding = true;
  }
  state.profile.events.push_back(std::move(summary));
}

void ProfileBuilder::observe(const RecordView& view, std::uint32_t event) {
  state_->observe(view, event);
}

void ProfileBuilder::set_recording_files(const PerfDataFeatures& features) {
  state_->resolver.set_recording_files(features);
}

void ProfileBuilder::set_sample_clock(std::span<const abi::PerfEventAttr> attrs) {
  state_->resolver.set_sample_clock(attrs);
}

void ProfileBuilder::add_samples_read(std::uint64_t count) noexcept {
  state_->profile.summary.samples_read += count;
}

void ProfileBuilder::begin_chunk(std::uint64_t chunk) {
  State& state = *state_;
  Symbolizer& symbolizer = state.resolver.symbolizer();
  state.chunk_marks.push_back({chunk, state.profile.samples.size(), state.profile.timeline.size(),
                               state.touched_groups.size(), symbolizer.warnings().size(),
                               symbolizer.notes().size(), symbolizer.missing_files().size()});
}

ProfilePart ProfileBuilder::finish_part() {
  State& state = *state_;
  ProfilePart part;
  Symbolizer& symbolizer = state.resolver.symbolizer();
  part.warnings_at_end = symbolizer.warnings().size();
  part.notes_at_end = symbolizer.notes().size();
  part.missing_files_at_end = symbolizer.missing_files().size();
  state.name_kernel_frames();
  part.profile = std::move(state.profile);
  if (const UnwindStatistics* unwinding = state.resolver.unwind_statistics()) {
    part.profile.summary.unwinding = *unwinding;
  }
  part.profile.summary.stack_sources = state.resolver.stack_sources();
  part.chunks = std::move(state.chunk_marks);
  part.touched_groups = std::move(state.touched_groups);
  part.warnings = symbolizer.warnings();
  part.notes = symbolizer.notes();
  part.missing_files = symbolizer.missing_files();
  part.undecodable = state.undecodable;
  state_.reset();
  return part;
}

void add_profile_warnings(Profile& profile, std::uint64_t undecodable,
                          const std::vector<std::string>& symbolizer_warnings) {
  auto warn = [&](std::string text) {
    if (std::find(profile.summary.warnings.begin(), profile.summary.warnings.end(), text) ==
        profile.summary.warnings.end()) {
      profile.summary.warnings.push_back(std::move(text));
    }
  };
  if (undecodable != 0) {
    warn(fmt::format("{} samples could not be decoded and were left out", undecodable));
  }
  for (const auto& warning : symbolizer_warnings) warn(warning);
  for (const ProfileEvent& event : profile.events) {
    if (event.off_cpu && event.samples != 0 && !event.has_callchains) {
      warn(
          "off-CPU samples without stacks: recorded from switch records only (no kernel "
          "context for the recording user); their time per thread is exact, where they waited "
          "is unknown. For stacks record as root or with CAP_PERFMON (or "
          "kernel.perf_event_paranoid=1)");
    }
  }
  // LOST_SAMPLES counts most of what LOST records count again: the larger is the loss.
  const ProfileSummary& summary = profile.summary;
  if (auto lost = lost_samples_warning(summary.samples_read,
                                       std::max(summary.lost, summary.lost_samples))) {
    warn(std::move(*lost));
  }
}

Profile ProfileBuilder::finish() {
  State& state = *state_;
  state.name_kernel_frames();
  Profile profile = std::move(state.profile);
  if (const UnwindStatistics* unwinding = state.resolver.unwind_statistics()) {
    profile.summary.unwinding = *unwinding;
  }
  profile.summary.stack_sources = state.resolver.stack_sources();
  count_stacks_reaching_start(profile);
  add_profile_warnings(profile, state.undecodable, state.resolver.symbolizer().warnings());
  profile.summary.notes = state.resolver.symbolizer().notes();
  profile.summary.missing_files = state.resolver.symbolizer().missing_files();
  state_.reset();
  return profile;
}

Profile ProfileBuilder::finish_interval() {
  State& state = *state_;
  state.name_kernel_frames();
  Profile profile = std::move(state.profile);
  if (state.undecodable != 0) {
    profile.summary.warnings.push_back(
        fmt::format("{} samples could not be decoded and were left out", state.undecodable));
  }
  const ProfileSummary& summary = profile.summary;
  if (auto lost = lost_samples_warning(summary.samples_read,
                                       std::max(summary.lost, summary.lost_samples))) {
    profile.summary.warnings.push_back(std::move(*lost));
  }
  state.start_next_interval(profile);
  return profile;
}

}  // namespace perfscope
