#include "perfscope/analysis/unwinding/stack_completion.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <span>

#include "analysis/record_bytes.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/unwinding/dwarf_unwinder.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
namespace cc = abi::callchain_context;

constexpr std::uint64_t copy_fields = sf::regs_user | sf::stack_user;
// Frames a completed chain may hold: perf's default kernel.perf_event_max_stack is 127; a DWARF
// walk of a deep stack copy goes further, as report-time unwinding does.
constexpr std::size_t max_unwound_frames = 1024;
// The CFI steps a frame-pointer gap is looked for in: callers skipped in a row beyond this many
// are left out (the chain then goes on as the kernel walked it).
constexpr std::size_t gap_walk_frames = 16;

using record_bytes::load_u64;

// Where the fields that change lie in a sample's bytes: the call chain (its nr word to its
// end) and the user registers and stack copy (their ABI word to the stack's dyn_size).
struct SampleLayout {
  std::size_t callchain_begin = 0, callchain_end = 0;
  std::size_t copies_begin = 0, copies_end = 0;
};

// Reads the sizes of RAW, BRANCH_STACK, REGS_USER and STACK_USER from the bytes after the
// call chain (whose place the decoder found). False when they run past the record.
bool locate_fields(const RecordView& view, const ParseConfig& config, const SampleRecord& sample,
                   SampleLayout& layout) noexcept {
  const std::byte* base = view.bytes.data();
  const std::size_t size = view.header.size;
  const auto* entries = reinterpret_cast<const std::byte*>(sample.callchain.data());
  layout.callchain_begin = static_cast<std::size_t>(entries - base) - sizeof(std::uint64_t);
  layout.callchain_end = static_cast<std::size_t>(entries - base) + sample.callchain.size_bytes();
  std::size_t at = layout.callchain_end;
  auto fits = [&](std::size_t bytes) { return bytes <= size && at <= size - bytes; };
  if (config.has(sf::raw)) {
    if (!fits(4)) return false;
    std::uint32_t raw_size = 0;
    std::memcpy(&raw_size, base + at, sizeof raw_size);
    std::size_t consumed = 4 + std::size_t{raw_size};
    consumed += (8 - consumed % 8) % 8;
    if (!fits(consumed)) return false;
    at += consumed;
  }
  if (config.has(sf::branch_stack)) {
    if (!fits(8)) return false;
    std::uint64_t count = load_u64(base + at);
    at += 8;
    if (config.branch_sample_type & abi::branch_sample::hw_index) at += 8;
    std::uint64_t per_entry = sizeof(abi::PerfBranchEntry);
    if (config.branch_sample_type & abi::branch_sample::counters) per_entry += 8;
    if (count > size / per_entry || !fits(static_cast<std::size_t>(count * per_entry))) {
      return false;
    }
    at += static_cast<std::size_t>(count * per_entry);
  }
  layout.copies_begin = at;
  if (!fits(8)) return false;
  std::uint64_t abi_word = load_u64(base + at);
  at += 8;
  if (abi_word != 0) {
    std::size_t registers = std::popcount(config.sample_regs_user) * sizeof(std::uint64_t);
    if (!fits(registers)) return false;
    at += registers;
  }
  if (!fits(8)) return false;
  std::uint64_t stack_size = load_u64(base + at);
  at += 8;
  if (stack_size != 0) {
    if (stack_size > size || !fits(static_cast<std::size_t>(stack_size) + 8)) return false;
    at += static_cast<std::size_t>(stack_size) + 8;
  }
  layout.copies_end = at;
  return true;
}

}  // namespace

struct StackCompleter::State {
  State(const TaskMaps& replayed, StackCompletion completion)
      : maps(replayed), mode(completion), unwinder(replayed) {
    unwound.resize(max_unwound_frames);
    chain.reserve(256);
  }
  const TaskMaps& maps;
  StackCompletion mode;
  DwarfUnwinder unwinder;
  StackCompletionStatistics statistics;
  SampleRecord sample;
  std::vector<std::uint64_t> unwound;
  std::vector<std::uint64_t> chain;

  // Builds the completed chain into `chain`; false to keep the sample as it is.
  bool complete_chain() noexcept {
    chain.clear();
    std::span<const std::uint64_t> original = sample.callchain;
    if (mode == StackCompletion::unwind_dwarf) {
      UnwindResult result = unwinder.unwind(sample, unwound);
      if (result.frames == 0 || result.no_module) return false;
      // Its user pc in no recorded mapping: the walk would stop short here but not in a report
      // that has seen the whole recording. The copies stay.
      const std::string* dso = maps.dso_of(sample.pid, unwound[0], abi::record_misc::user);
      if (dso == nullptr) return false;
      // The vDSO has no file to read its CFI from here, but its image can be had (the kernel's
      // own copy, saved build ids): the copies stay for a reader that unwinds through it.
      if (result.frames == 1 && *dso == "[vdso]") return false;
      // The kernel part as the kernel wrote it (perf's dwarf mode excludes the user part).
      for (std::uint64_t ip : original) {
        if (ip == cc::user) break;
        chain.push_back(ip);
      }
      chain.push_back(cc::user);
      chain.push_back(unwound[0]);
      // Callers as the unwinder gives them, return addresses minus one, as perf's libunwind
      // gives the callers of its DWARF files: perf and perfscope name and show each frame of
      // this file as they do the same frame of perf's (a call that ends a function stays in it).
      chain.insert(chain.end(), unwound.begin() + 1, unwound.begin() + result.frames);
      if (result.complete) ++statistics.reached_start;
      return true;
    }
    // Frame-pointer chain: everything up to and including the user pc, then the callers the
    // walk skipped, then the rest of the walk.
    auto user_at = std::find(original.begin(), original.end(), cc::user);
    if (user_at == original.end() || user_at + 1 == original.end()) {
      chain.assign(original.begin(), original.end());
      return true;  // no user part: nothing to fill, the copies still go
    }
    auto pc_at = user_at + 1;
    chain.assign(original.begin(), pc_at + 1);
    std::span<const std::uint64_t> walked(pc_at + 1, original.end());
    // Filling gaps needs the frames up to the walk's first caller, a few steps in: the CFI walk
    // ends there rather than at the end of the copy.
    std::uint64_t first_caller = walked.empty() || walked.front() == 0 ? 0 : walked.front() - 1;
    UnwindResult result =
        unwinder.unwind(sample, std::span(unwound).first(gap_walk_frames), first_caller);
    std::size_t inserted = 0;
    if (result.frames > 1 && !result.no_module && unwound[0] == *pc_at) {
      if (walked.empty()) {
        // The frame-pointer walk found no caller at all: every frame the CFI steps found.
        for (std::size_t i = 1; i < result.frames; ++i) chain.push_back(unwound[i] + 1);
        inserted = result.frames - 1;
      } else {
        // The first caller the walk found, among the CFI steps: those before it were skipped.
        for (std::size_t k = 1; k < result.frames; ++k) {
          if (unwound[k] + 1 != walked.front()) continue;
          for (std::size_t i = 1; i < k; ++i) chain.push_back(unwound[i] + 1);
          inserted = k - 1;
          break;
        }
      }
    }
    chain.insert(chain.end(), walked.begin(), walked.end());
    if (inserted != 0) {
      ++statistics.gaps_filled;
      statistics.frames_inserted += inserted;
    }
    return true;
  }
};

StackCompleter::StackCompleter(const TaskMaps& maps, StackCompletion mode)
    : state_(std::make_unique<State>(maps, mode)) {}

StackCompleter::~StackCompleter() = default;

StackCompletion StackCompleter::mode() const noexcept { return state_->mode; }

const StackCompletionStatistics& StackCompleter::statistics() const noexcept {
  return state_->statistics;
}

ParseConfig StackCompleter::output_config(const ParseConfig& config,
                                          StackCompletion mode) noexcept {
  ParseConfig out = config;
  if (mode == StackCompletion::fill_frame_pointer_gaps && (config.sample_type & copy_fields)) {
    out.sample_type &= ~copy_fields;
    out.sample_regs_user = 0;
  }
  return out;
}

abi::PerfEventAttr StackCompleter::output_attr(const abi::PerfEventAttr& attr,
                                               StackCompletion mode) noexcept {
  abi::PerfEventAttr out = attr;
  // The call chains hold the user frames now: the attr says so (the kernel did not write them,
  // but a reader that takes the flag for "no user part" would look in the copies alone).
  if (mode == StackCompletion::unwind_dwarf && (attr.sample_type & copy_fields) == copy_fields) {
    out.flags &= ~abi::attr_flag::exclude_callchain_user;
  }
  if (mode == StackCompletion::fill_frame_pointer_gaps && (attr.sample_type & copy_fields)) {
    out.sample_type &= ~copy_fields;
    out.sample_regs_user = 0;
    out.sample_stack_user = 0;
  }
  return out;
}

bool StackCompleter::complete(const RecordView& view, const ParseConfig& config,
                              std::vector<std::byte>& out) noexcept {
  return rewrite(view, config, out, true);
}

bool StackCompleter::strip(const RecordView& view, const ParseConfig& config,
                           std::vector<std::byte>& out) noexcept {
  return rewrite(view, config, out, false);
}

bool StackCompleter::rewrite(const RecordView& view, const ParseConfig& config,
                             std::vector<std::byte>& out, bool unwind) noexcept {
  State& state = *state_;
  if ((config.sample_type & copy_fields) != copy_fields || !config.has(sf::callchain)) {
    return false;
  }
  DecodeError error;
  if (!decode_sample(view, config, state.sample, error)) return false;
  SampleLayout layout;
  if (!locate_fields(view, config, state.sample, layout)) return false;
  ++state.statistics.samples;
  state.statistics.stack_copy_bytes =
      std::max<std::uint64_t>(state.statistics.stack_copy_bytes, state.sample.stack_user.size());
  bool dwarf = state.mode == StackCompletion::unwind_dwarf;
  if (state.sample.regs_user.abi == 0) {
    ++state.statistics.without_user_registers;
    if (dwarf) return false;  // nothing to take out
  }
  try {
    bool written = false;
    if (state.sample.regs_user.abi == 0 || (!unwind && !dwarf)) {
      state.chain.assign(state.sample.callchain.begin(), state.sample.callchain.end());
      written = true;
    } else if (unwind) {
      written = state.complete_chain();
    }
    if (!written) {
      ++state.statistics.kept;
      return false;
    }
    const std::byte* base = view.bytes.data();
    std::size_t chain_bytes = (state.chain.size() + 1) * sizeof(std::uint64_t);
    std::size_t total =
        layout.callchain_begin + chain_bytes + (layout.copies_begin - layout.callchain_end) +
        (dwarf ? 2 * sizeof(std::uint64_t) : 0) + (view.header.size - layout.copies_end);
    if (total > 0xffff) {
      // A record's size is 16 bits: a chain this long cannot be written whole.
      ++state.statistics.kept;
      return false;
    }
    // Sized once, without clearing: the bytes are all overwritten, and a buffer that held a
    // sample as large zero-fills nothing.
    out.resize(total);
    std::byte* at = out.data();
    auto copy = [&](const void* from, std::size_t size) {
      std::memcpy(at, from, size);
      at += size;
    };
    auto word = [&](std::uint64_t value) { copy(&value, sizeof value); };
    copy(base, layout.callchain_begin);
    word(state.chain.size());
    copy(state.chain.data(), state.chain.size() * sizeof(std::uint64_t));
    copy(base + layout.callchain_end, layout.copies_begin - layout.callchain_end);
    if (dwarf) {
      word(0);  // registers ABI none
      word(0);  // stack size 0, and so no dyn_size
    }
    copy(base + layout.copies_end, view.header.size - layout.copies_end);
    abi::RecordHeader header = view.header;
    header.size = static_cast<std::uint16_t>(out.size());
    std::memcpy(out.data(), &header, sizeof header);
    ++state.statistics.completed;
    return true;
  } catch (...) {
    ++state.statistics.kept;
    return false;  // allocation: the sample goes as it came
  }
}

}  // namespace perfscope
