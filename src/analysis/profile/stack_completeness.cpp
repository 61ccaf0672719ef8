#include "analysis/profile/stack_completeness.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace perfscope {

namespace {

// A thread's first frame: where a walk that went all the way ends. Go's goroutines start in
// runtime.goexit (the return address their first function returns to), its threads in
// runtime.mstart and the program in runtime.rt0_go, each also as its ABI0 symbol (".abi0").
bool is_thread_start(std::string_view name) noexcept {
  if (name.ends_with(".abi0")) name.remove_suffix(5);
  for (std::string_view start :
       {"_start", "__start", "clone", "__clone", "clone3", "__clone3", "start_thread",
        "thread_start", "ret_from_fork", "ret_from_fork_asm", "runtime.goexit", "runtime.mstart",
        "runtime.rt0_go"}) {
    if (name == start) return true;
  }
  return false;
}

}  // namespace

// Of the samples with call chains, those whose outermost frame is a thread's first frame.
void count_stacks_reaching_start(Profile& profile) {
  // Each node's outermost frame, parents first (a node's parent was made before it).
  std::vector<std::uint8_t> reaches(profile.stacks.size(), 0);
  for (std::size_t i = 0; i < profile.stacks.size(); ++i) {
    const ProfileStack& node = profile.stacks[i];
    if (node.parent != no_index && node.parent < i) {
      reaches[i] = reaches[node.parent];
    } else if (node.parent != no_index) {
      std::uint32_t root = static_cast<std::uint32_t>(i);
      while (profile.stacks[root].parent != no_index) root = profile.stacks[root].parent;
      const ProfileFrame& frame = profile.frames[profile.stacks[root].frame];
      reaches[i] = is_thread_start(profile.functions[frame.function].name) ? 1 : 0;
    } else {
      const ProfileFrame& frame = profile.frames[node.frame];
      reaches[i] = is_thread_start(profile.functions[frame.function].name) ? 1 : 0;
    }
  }
  auto count = [&](std::uint32_t stack, std::uint32_t event, std::uint64_t samples) {
    if (stack == no_index || event >= profile.events.size()) return;
    if (!profile.events[event].has_callchains) return;
    profile.summary.stacks_walked += samples;
    if (reaches[stack]) profile.summary.stacks_reaching_start += samples;
  };
  for (const ProfileSample& sample : profile.samples) count(sample.stack, sample.event, 1);
  for (const ProfileSampleGroup& group : profile.sample_groups) {
    count(group.stack, group.event, group.samples);
  }
}

}  // namespace perfscope
