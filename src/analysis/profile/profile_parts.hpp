// The profiles of build_profile's workers, each of the samples of its chunks of the walk, and
// their merge into the one Profile a single thread gives: the same tables in the same order
// whatever the number of workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfscope/analysis/profile/profile.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"

namespace perfscope {

// Where one chunk of the walk begins in a worker's profile.
struct ProfileChunkMark {
  std::uint64_t chunk = 0;
  std::size_t samples = 0;         // into Profile::samples
  std::size_t timeline = 0;        // into Profile::timeline
  std::size_t touched_groups = 0;  // into ProfilePart::touched_groups
  std::size_t warnings = 0, notes = 0, missing_files = 0;
};

struct ProfilePart {
  // The worker's samples and tables; the summary's counts of its samples (lost, throttled and
  // the other counts of records every worker saw are every part's), no warnings yet.
  Profile profile;
  std::vector<ProfileChunkMark> chunks;  // ascending
  // Each sample group, listed as the worker made it: a chunk's new groups are those from its
  // mark's index on (a group the worker made in an earlier chunk was met first there).
  std::vector<std::uint32_t> touched_groups;
  // The symbolizer's, in the order it gave them; the marks count how many came before each
  // chunk, `*_at_end` how many before the part was finished (the rest came as kernel frames
  // were named).
  std::vector<std::string> warnings, notes;
  std::vector<MissingSymbolFile> missing_files;
  std::size_t warnings_at_end = 0, notes_at_end = 0, missing_files_at_end = 0;
  std::uint64_t undecodable = 0;
};

// The one profile of the parts, numbered as the walk in order meets what it holds: chunk after
// chunk, each chunk's samples (or groups) in order, and for each new stack its frames from the
// leaf up (an address's inlined calls after the function they are inlined into) before its
// nodes from the root down. Counts of the samples add up; the warnings, notes and missing files
// come once each, in the order of the chunks that first gave them.
Profile merge_profile_parts(std::vector<ProfilePart> parts, const ProfileOptions& options);

// The summary's warnings of a finished profile (ProfileBuilder::finish and the merge): samples
// that could not be decoded, the symbolizer's, off-CPU samples without stacks, lost samples.
void add_profile_warnings(Profile& profile, std::uint64_t undecodable,
                          const std::vector<std::string>& symbolizer_warnings);

}  // namespace perfscope
