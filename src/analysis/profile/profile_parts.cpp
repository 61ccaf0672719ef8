#include "analysis/profile/profile_parts.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/profile/flat_index_map.hpp"
#include "analysis/profile/stack_completeness.hpp"

namespace perfscope {

namespace {

using detail::FlatIndexMap;

// The merged profile's tables, interned as parts are translated into them.
class MergedTables {
 public:
  explicit MergedTables(const ProfileOptions& options) : options_(options) {}

  Profile profile;

  // Per part: its indexes to the merged ones, filled as they are first needed.
  struct PartMaps {
    std::vector<std::uint32_t> dsos, functions, frames, stacks, threads, mappings, groups;
  };
  PartMaps maps_for(const Profile& part) const {
    PartMaps maps;
    maps.dsos.assign(part.dsos.size(), no_index);
    maps.functions.assign(part.functions.size(), no_index);
    maps.frames.assign(part.frames.size(), no_index);
    maps.stacks.assign(part.stacks.size(), no_index);
    maps.threads.assign(part.threads.size(), no_index);
    maps.mappings.assign(part.mappings.size(), no_index);
    maps.groups.assign(part.sample_groups.size(), no_index);
    return maps;
  }

  std::uint32_t stack(const Profile& part, PartMaps& maps, std::uint32_t stack) {
    if (stack == no_index || maps.stacks[stack] != no_index) {
      return stack == no_index ? no_index : maps.stacks[stack];
    }
    // The nodes not merged yet, leaf first, up to the first one that is.
    chain_.clear();
    for (std::uint32_t node = stack; node != no_index && maps.stacks[node] == no_index;
         node = part.stacks[node].parent) {
      chain_.push_back(node);
    }
    // Their frames from the leaf up, each address's run (inlined calls, innermost first, then
    // the function they are inlined into) from the function out, as the builder names them.
    for (std::size_t i = 0; i < chain_.size();) {
      std::size_t end = i;
      while (end + 1 < chain_.size() && part.frames[part.stacks[chain_[end]].frame].inlined &&
             part.frames[part.stacks[chain_[end + 1]].frame].address ==
                 part.frames[part.stacks[chain_[i]].frame].address) {
        ++end;
      }
      for (std::size_t j = end + 1; j-- > i;) frame(part, maps, part.stacks[chain_[j]].frame);
      i = end + 1;
    }
    for (std::size_t i = chain_.size(); i-- > 0;) {
      std::uint32_t node = chain_[i];
      std::uint32_t parent = part.stacks[node].parent;
      std::uint32_t merged_parent = parent == no_index ? no_index : maps.stacks[parent];
      std::uint32_t merged_frame = maps.frames[part.stacks[node].frame];
      auto index = static_cast<std::uint32_t>(profile.stacks.size());
      std::uint32_t found = stack_index_.insert(merged_parent, merged_frame, index);
      if (found == index) profile.stacks.push_back({merged_parent, merged_frame});
      maps.stacks[node] = found;
    }
    return maps.stacks[stack];
  }

  std::uint32_t thread(const Profile& part, PartMaps& maps, std::uint32_t thread) {
    std::uint32_t& merged = maps.threads[thread];
    if (merged != no_index) return merged;
    const ProfileThread& t = part.threads[thread];
    key_.assign(reinterpret_cast<const char*>(&t.pid), sizeof t.pid);
    key_.append(reinterpret_cast<const char*>(&t.tid), sizeof t.tid);
    key_.append(t.comm);
    auto [found, inserted] =
        thread_index_.try_emplace(key_, static_cast<std::uint32_t>(profile.threads.size()));
    if (inserted) profile.threads.push_back(t);
    merged = found->second;
    return merged;
  }

  std::uint32_t group(const Profile& part, PartMaps& maps, std::uint32_t group) {
    std::uint32_t& merged = maps.groups[group];
    if (merged != no_index) return merged;
    ProfileSampleGroup g = part.sample_groups[group];
    g.stack = stack(part, maps, g.stack);
    g.thread = thread(part, maps, g.thread);
    auto index = static_cast<std::uint32_t>(profile.sample_groups.size());
    std::uint64_t b =
        (std::uint64_t{g.event} << 8 | static_cast<std::uint8_t>(g.state)) << 32 | g.cpu;
    merged = group_index_.insert(std::uint64_t{g.stack} << 32 | g.thread, b, index);
    if (merged == index) {
      g.samples = 0;
      g.period = 0;
      profile.sample_groups.push_back(g);
    }
    return merged;
  }

 private:
  std::uint32_t dso(const Profile& part, PartMaps& maps, std::uint32_t dso) {
    if (dso == no_index) return no_index;
    std::uint32_t& merged = maps.dsos[dso];
    if (merged != no_index) return merged;
    const ProfileDso& d = part.dsos[dso];
    auto [found, inserted] =
        dso_index_.try_emplace(d.path, static_cast<std::uint32_t>(profile.dsos.size()));
    if (inserted) profile.dsos.push_back(d);
    merged = found->second;
    return merged;
  }

  // `inlined`: the function of an inlined call (kept apart from a real function of its name).
  std::uint32_t function(const Profile& part, PartMaps& maps, std::uint32_t function,
                         bool inlined) {
    std::uint32_t& merged = maps.functions[function];
    if (merged != no_index) return merged;
    ProfileFunction f = part.functions[function];
    f.dso = dso(part, maps, f.dso);
    key_.assign(f.name);
    key_.push_back('\0');
    key_.append(reinterpret_cast<const char*>(&f.dso), sizeof f.dso);
    if (inlined) {
      key_.push_back('\2');
    } else if (f.resolved && !options_.group_functions_by_name) {
      key_.push_back('\1');
      key_.append(reinterpret_cast<const char*>(&f.start), sizeof f.start);
    } else {
      key_.push_back(f.resolved ? '\3' : '\4');
    }
    auto [found, inserted] =
        function_index_.try_emplace(key_, static_cast<std::uint32_t>(profile.functions.size()));
    if (inserted) profile.functions.push_back(std::move(f));
    merged = found->second;
    return merged;
  }

  std::uint32_t mapping(const Profile& part, PartMaps& maps, std::uint32_t mapping) {
    if (mapping == no_index) return no_index;
    std::uint32_t& merged = maps.mappings[mapping];
    if (merged != no_index) return merged;
    ProfileMapping m = part.mappings[mapping];
    m.dso = dso(part, maps, m.dso);
    auto index = static_cast<std::uint32_t>(profile.mappings.size());
    merged = mapping_index_.insert(m.start, std::uint64_t{m.pid} << 32 | m.dso, index);
    if (merged == index) profile.mappings.push_back(m);
    return merged;
  }

  std::uint32_t frame(const Profile& part, PartMaps& maps, std::uint32_t frame) {
    std::uint32_t& merged = maps.frames[frame];
    if (merged != no_index) return merged;
    const ProfileFrame& source = part.frames[frame];
    std::uint32_t merged_function = function(part, maps, source.function, source.inlined);
    std::uint64_t b = std::uint64_t{merged_function} << 1 | (source.inlined ? 1 : 0);
    auto index = static_cast<std::uint32_t>(profile.frames.size());
    merged = frame_index_.insert(source.address, b, index);
    if (merged == index) {
      // The frame's mapping is the one its first sample found it in: another part's copy of
      // it (met first there in another process) adds no mapping.
      ProfileFrame f = source;
      f.function = merged_function;
      f.mapping = mapping(part, maps, source.mapping);
      profile.frames.push_back(std::move(f));
    }
    return merged;
  }

  const ProfileOptions& options_;
  std::unordered_map<std::string, std::uint32_t> dso_index_, function_index_, thread_index_;
  FlatIndexMap frame_index_, stack_index_, mapping_index_, group_index_;
  std::vector<std::uint32_t> chain_;
  std::string key_;
};

// Items of the parts' lists (warnings, notes, missing files) once each, in the order met.
template <typename T, typename Key>
class FirstSeen {
 public:
  explicit FirstSeen(Key key) : key_(std::move(key)) {}
  void add(const T& item) {
    if (seen_.insert(key_(item)).second) items.push_back(item);
  }
  std::vector<T> items;

 private:
  Key key_;
  std::unordered_set<std::string> seen_;
};

}  // namespace

Profile merge_profile_parts(std::vector<ProfilePart> parts, const ProfileOptions& options) {
  MergedTables merged(options);
  Profile& profile = merged.profile;
  const Profile& first = parts.front().profile;
  profile.events = first.events;
  for (ProfileEvent& event : profile.events) {
    event.samples = 0;
    event.period = 0;
    event.period_read = 0;
    event.samples_read = 0;
  }
  // Every worker saw every record but the samples of other workers' chunks: the counts of the
  // other records are each part's; those of the samples add up.
  ProfileSummary& summary = profile.summary;
  summary.lost = first.summary.lost;
  summary.lost_samples = first.summary.lost_samples;
  summary.throttle = first.summary.throttle;
  summary.unthrottle = first.summary.unthrottle;
  summary.dwarf_unwinding = first.summary.dwarf_unwinding;
  std::uint64_t undecodable = 0;
  bool any_samples = false;
  std::size_t sample_count = 0;
  for (const ProfilePart& part : parts) {
    const ProfileSummary& s = part.profile.summary;
    for (std::size_t e = 0; e < profile.events.size(); ++e) {
      profile.events[e].samples += part.profile.events[e].samples;
      profile.events[e].period += part.profile.events[e].period;
      profile.events[e].period_read += part.profile.events[e].period_read;
      profile.events[e].samples_read += part.profile.events[e].samples_read;
    }
    summary.samples += s.samples;
    summary.samples_read += s.samples_read;
    if (s.samples != 0) {
      summary.first_time = any_samples ? std::min(summary.first_time, s.first_time) : s.first_time;
      summary.last_time = std::max(summary.last_time, s.last_time);
      any_samples = true;
    }
    UnwindStatistics& u = summary.unwinding;
    u.samples += s.unwinding.samples;
    u.complete += s.unwinding.complete;
    u.no_user_regs += s.unwinding.no_user_regs;
    u.unreadable_registers += s.unwinding.unreadable_registers;
    u.truncated += s.unwinding.truncated;
    u.frames += s.unwinding.frames;
    u.by_cached_rules += s.unwinding.by_cached_rules;
    u.jit_unwinding_info += s.unwinding.jit_unwinding_info;
    StackSources& sources = summary.stack_sources;
    sources.frame_pointers += s.stack_sources.frame_pointers;
    sources.dwarf_unwound_here += s.stack_sources.dwarf_unwound_here;
    sources.dwarf_while_recording += s.stack_sources.dwarf_while_recording;
    sources.lbr += s.stack_sources.lbr;
    undecodable += part.undecodable;
    sample_count += part.profile.samples.size();
  }
  // One part (one thread): its samples are translated where they lie, not copied (an export
  // that keeps every sample would hold them twice).
  const bool in_place = parts.size() == 1;
  if (in_place) {
    profile.samples = std::move(parts.front().profile.samples);
  } else {
    profile.samples.reserve(sample_count);
  }

  auto text_key = [](const std::string& text) { return text; };
  FirstSeen<std::string, decltype(text_key)> warnings(text_key), notes(text_key);
  auto missing_key = [](const MissingSymbolFile& file) {
    return file.path + '\0' + file.build_id + '\0' + file.reason;
  };
  FirstSeen<MissingSymbolFile, decltype(missing_key)> missing(missing_key);
  // What a part's symbolizer gave from `from` up to `to` (of its warnings, notes, missing files).
  auto take_messages = [&](const ProfilePart& part, std::size_t warnings_from,
                           std::size_t warnings_to, std::size_t notes_from, std::size_t notes_to,
                           std::size_t missing_from, std::size_t missing_to) {
    for (std::size_t i = warnings_from; i < warnings_to; ++i) warnings.add(part.warnings[i]);
    for (std::size_t i = notes_from; i < notes_to; ++i) notes.add(part.notes[i]);
    for (std::size_t i = missing_from; i < missing_to; ++i) missing.add(part.missing_files[i]);
  };
  // Before the first chunk: what every worker's setup gave.
  for (const ProfilePart& part : parts) {
    const ProfileChunkMark* mark = part.chunks.empty() ? nullptr : &part.chunks.front();
    take_messages(part, 0, mark ? mark->warnings : part.warnings_at_end, 0,
                  mark ? mark->notes : part.notes_at_end, 0,
                  mark ? mark->missing_files : part.missing_files_at_end);
  }

  // The chunks in the walk's order.
  struct ChunkRef {
    std::uint64_t chunk;
    std::size_t part, mark;
  };
  std::vector<ChunkRef> chunks;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (std::size_t m = 0; m < parts[p].chunks.size(); ++m) {
      chunks.push_back({parts[p].chunks[m].chunk, p, m});
    }
  }
  std::sort(chunks.begin(), chunks.end(), [](const ChunkRef& a, const ChunkRef& b) {
    return a.chunk != b.chunk ? a.chunk < b.chunk : a.part < b.part;
  });
  std::vector<MergedTables::PartMaps> maps;
  for (const ProfilePart& part : parts) maps.push_back(merged.maps_for(part.profile));
  for (const ChunkRef& ref : chunks) {
    const ProfilePart& part = parts[ref.part];
    const Profile& source = part.profile;
    MergedTables::PartMaps& part_maps = maps[ref.part];
    const ProfileChunkMark& mark = part.chunks[ref.mark];
    const ProfileChunkMark* next =
        ref.mark + 1 < part.chunks.size() ? &part.chunks[ref.mark + 1] : nullptr;
    std::size_t part_samples = in_place ? profile.samples.size() : source.samples.size();
    std::size_t samples_end = next ? next->samples : part_samples;
    for (std::size_t i = mark.samples; i < samples_end; ++i) {
      ProfileSample sample = in_place ? profile.samples[i] : source.samples[i];
      sample.stack = merged.stack(source, part_maps, sample.stack);
      sample.thread = merged.thread(source, part_maps, sample.thread);
      if (in_place) {
        profile.samples[i] = sample;
      } else {
        profile.samples.push_back(sample);
      }
    }
    std::size_t touched_end = next ? next->touched_groups : part.touched_groups.size();
    for (std::size_t i = mark.touched_groups; i < touched_end; ++i) {
      merged.group(source, part_maps, part.touched_groups[i]);
    }
    // The chunk's groups are numbered: its samples' times after them (one part's afterwards,
    // where they lie).
    if (!in_place) {
      source.timeline.for_each(
          [&](std::uint32_t group, std::uint64_t time, std::uint64_t period) {
            profile.timeline.append(merged.group(source, part_maps, group), time, period);
          },
          mark.timeline, next ? next->timeline : source.timeline.size());
      // Copied out: a part's pages go as the merge passes them (else the samples' times were
      // held twice at the end).
      parts[ref.part].profile.timeline.release_before(next ? next->timeline
                                                           : source.timeline.size());
    }
    take_messages(part, mark.warnings, next ? next->warnings : part.warnings_at_end, mark.notes,
                  next ? next->notes : part.notes_at_end, mark.missing_files,
                  next ? next->missing_files : part.missing_files_at_end);
  }
  // The groups' counts add up; then what naming the kernel's frames gave at each part's end.
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const Profile& source = parts[p].profile;
    for (std::size_t g = 0; g < source.sample_groups.size(); ++g) {
      std::uint32_t index = merged.group(source, maps[p], static_cast<std::uint32_t>(g));
      profile.sample_groups[index].samples += source.sample_groups[g].samples;
      profile.sample_groups[index].period += source.sample_groups[g].period;
    }
  }
  if (in_place) {
    profile.timeline = std::move(parts.front().profile.timeline);
    profile.timeline.remap_groups(maps.front().groups);
  }
  for (const ProfilePart& part : parts) {
    take_messages(part, part.warnings_at_end, part.warnings.size(), part.notes_at_end,
                  part.notes.size(), part.missing_files_at_end, part.missing_files.size());
  }
  parts.clear();

  count_stacks_reaching_start(profile);
  add_profile_warnings(profile, undecodable, warnings.items);
  summary.notes = std::move(notes.items);
  summary.missing_files = std::move(missing.items);
  return profile;
}

}  // namespace perfscope
