#include "perfscope/analysis/annotate/annotator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

#include "analysis/annotate/named_function_sieve.hpp"
#include "analysis/annotate/symbol_suggestions.hpp"
#include "analysis/path_names.hpp"
#include "analysis/symbols/jit_symbol_map.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/analysis/symbols/vdso_image.hpp"

namespace perfscope {

namespace {

// Adds a sample group to an address's count and to the function's matching total.
void count(AddressHits& at, std::uint64_t& samples, std::uint64_t& period,
           const ProfileSampleGroup& group) {
  at.samples += group.samples;
  at.period += group.period;
  samples += group.samples;
  period += group.period;
}

// The samples of one function, by the address perf prints for them (the file offset for code in
// files, the address itself for kernel and JIT code).
struct FunctionHits {
  std::map<std::uint64_t, AddressHits> by_address;
  std::uint64_t samples = 0, period = 0;
  // With callees: by return address (the address after the call), as the call chains hold them.
  std::map<std::uint64_t, AddressHits> callees_by_return;
  std::uint64_t callee_samples = 0, callee_period = 0;
  std::uint64_t total_period() const { return period + callee_period; }
  bool sampled() const { return samples + callee_samples != 0; }
};

// Recorded build ids sit in 20-byte slots of wider fields: equal when one is the other padded
// with zeros.
bool same_build_id_hex(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  if (b.substr(0, a.size()) != a) return false;
  return b.substr(a.size()).find_first_not_of('0') == std::string_view::npos;
}

std::optional<std::uint64_t> address_of_offset(const ElfImage& image, std::uint64_t offset) {
  for (const ElfImage::Segment& segment : image.segments()) {
    if (offset >= segment.offset && offset - segment.offset < segment.size) {
      return segment.address + (offset - segment.offset);
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> offset_of_address(const ElfImage& image, std::uint64_t address) {
  for (const ElfImage::Segment& segment : image.segments()) {
    if (address >= segment.address && address - segment.address < segment.size) {
      return segment.offset + (address - segment.address);
    }
  }
  return std::nullopt;
}

AnnotatedSource source_of(const SourceLocation& location) {
  return AnnotatedSource{std::string(location.file), location.line};
}

class Annotator {
 public:
  Annotator(const AnnotateOptions& options, const Profile& profile)
      : options_(options), profile_(profile), symbolizer_(symbolizer_options(options)) {}

  void annotate(AnnotatedFunction& out, std::uint32_t function, const FunctionHits& hits) {
    const ProfileFunction& f = profile_.functions[function];
    out.name = f.name;
    out.samples = hits.samples;
    out.period = hits.period;
    out.callee_samples = hits.callee_samples;
    out.callee_period = hits.callee_period;
    if (f.dso != no_index) {
      const ProfileDso& dso = profile_.dsos[f.dso];
      out.dso = dso.path;
      out.build_id = dso.build_id;
      out.kernel = dso.kernel;
    }
    if (!f.resolved) {
      out.no_code_reason =
          "no symbol covers these addresses, so there is no function to "
          "disassemble";
    } else if (f.dso == no_index) {
      out.no_code_reason = "the recording maps no file at these addresses";
    } else if (out.kernel) {
      annotate_kernel(out, f, hits);
      return;
    } else if (is_jitdump_path(out.dso)) {
      annotate_jit(out, f, hits);
      return;
    } else if (is_jit_map_path(out.dso)) {
      out.no_code_reason = fmt::format(
          "no code bytes available: JIT code, named by {}; the recording holds no copy of the "
          "code the runtime generated",
          out.dso);
    } else if (out.dso.starts_with('[') && out.dso != vdso_mapping_name) {
      out.no_code_reason = fmt::format("no file to read {} code from", out.dso);
    } else {
      annotate_file(out, f, hits);
      return;
    }
    list_addresses(out, hits, 0);
  }

  std::vector<std::string> warnings() const { return symbolizer_.warnings(); }
  std::vector<std::string> notes() const { return symbolizer_.notes(); }

  // The vDSO's code comes from the image the recording carries (or this kernel's own).
  void set_recording_files(const PerfDataFeatures& features) {
    symbolizer_.set_recording_files(features);
  }

 private:
  static SymbolizerOptions symbolizer_options(const AnnotateOptions& options) {
    SymbolizerOptions symbols = options.profile.symbols;
    symbols.source_lines = true;
    symbols.inline_frames = true;
    return symbols;
  }

  Disassembler& disassembler(Architecture architecture) {
    auto& slot = disassemblers_[static_cast<int>(architecture)];
    if (!slot) slot = make_disassembler(architecture, options_.syntax);
    return *slot;
  }

  // Without code: one entry per sampled address, `base` added to make it an address.
  // Without code: one entry per sampled address (and, with callees, per return address: the
  // call is somewhere before it), `base` added to make it an address.
  void list_addresses(AnnotatedFunction& out, const FunctionHits& hits, std::uint64_t base) {
    std::map<std::uint64_t, AnnotatedInstruction> entries;
    for (const auto& [address, hit] : hits.by_address) {
      AnnotatedInstruction& entry = entries[address];
      entry.instruction.address = address + base;
      entry.samples = hit.samples;
      entry.period = hit.period;
    }
    for (const auto& [address, hit] : hits.callees_by_return) {
      AnnotatedInstruction& entry = entries[address];
      entry.instruction.address = address + base;
      entry.callee_samples = hit.samples;
      entry.callee_period = hit.period;
    }
    for (auto& [address, entry] : entries) out.instructions.push_back(std::move(entry));
    set_percentages(out);
  }

  void set_percentages(AnnotatedFunction& out) {
    double total = static_cast<double>(out.period + out.callee_period);
    for (AnnotatedInstruction& entry : out.instructions) {
      entry.percent = total == 0 ? 0.0 : 100.0 * static_cast<double>(entry.period) / total;
      entry.callee_percent =
          total == 0 ? 0.0 : 100.0 * static_cast<double>(entry.callee_period) / total;
    }
  }

  void annotate_file(AnnotatedFunction& out, const ProfileFunction& f, const FunctionHits& hits) {
    std::string error;
    // The file that was sampled may be elsewhere now (an extracted archive, a symfs).
    const std::vector<std::uint8_t> recorded = build_id_from_hex(out.build_id);
    LocatedFile where;
    std::optional<ElfImage> image;
    if (out.dso == vdso_mapping_name) {
      image = symbolizer_.vdso_image(recorded, error);
    } else {
      where = symbolizer_.file_locator().locate(out.dso, recorded);
      image = ElfImage::open(where.path, error);
    }
    if (!image) {
      out.no_code_reason = fmt::format("cannot read its code: {}", error);
      list_addresses(out, hits, 0);
      return;
    }
    std::string now =
        build_id_hex(std::vector<std::uint8_t>(image->build_id().begin(), image->build_id().end()));
    if (!out.build_id.empty() && !now.empty() && !same_build_id_hex(out.build_id, now)) {
      throw AnnotateError(fmt::format(
          "{}: build id mismatch: the recording has {}, the file now has {}: it changed since "
          "the recording, and its code would not be the code that was sampled (annotate with "
          "the binary that was recorded, or record again){}",
          out.dso, out.build_id, now,
          where.rejected.empty() ? std::string() : "; " + where.rejected.front()));
    }
    std::optional<std::uint64_t> start = address_of_offset(*image, f.start);
    SymbolizedAddress symbol = symbolizer_.resolve_file(out.dso, f.start, recorded);
    if (!start || symbol.symbol.empty() || symbol.size == 0) {
      out.no_code_reason = fmt::format(
          "cannot find its extent in {}: {}", out.dso,
          symbol.unresolved_reason.empty() ? "no symbol there" : symbol.unresolved_reason);
      list_addresses(out, hits, 0);
      return;
    }
    out.start = *start;
    out.size = symbol.size;
    std::vector<std::uint8_t> code(out.size);
    std::optional<std::uint64_t> end_offset = offset_of_address(*image, out.start + out.size - 1);
    if (!end_offset || *end_offset != f.start + out.size - 1 || !image->read(f.start, code)) {
      out.no_code_reason =
          fmt::format("{} holds no code bytes for it (not in a loaded segment)", out.dso);
      list_addresses(out, hits, 0);
      return;
    }
    out.architecture = architecture_of_elf_machine(image->machine());
    if (!out.architecture) {
      out.no_code_reason =
          fmt::format("no disassembler for ELF machine {} of {}", image->machine(), out.dso);
      list_addresses(out, hits, 0);
      return;
    }
    std::uint64_t file_start = f.start;
    fill(
        out, disassembler(*out.architecture).disassemble(code, out.start), hits,
        [&](std::uint64_t address) { return file_start + (address - out.start); },
        [&](AnnotatedInstruction& entry, std::uint64_t offset, const Instruction& instruction) {
          place_source(entry, symbolizer_.resolve_file(out.dso, offset, recorded));
          if (instruction.target) {
            entry.target_name = target_name(out, *image, *instruction.target);
          }
        });
  }

  // The instructions with their samples (looked up by key_of(address)) and what `describe`
  // adds (source lines, branch target names).
  template <class KeyOf, class Describe>
  void fill(AnnotatedFunction& out, std::vector<Instruction> instructions, const FunctionHits& hits,
            KeyOf key_of, Describe describe) {
    auto hit = hits.by_address.begin();
    auto callee = hits.callees_by_return.begin();
    for (Instruction& instruction : instructions) {
      std::uint64_t key = key_of(instruction.address);
      AnnotatedInstruction entry;
      while (hit != hits.by_address.end() && hit->first < key) {
        out.unplaced_samples += hit->second.samples;
        ++hit;
      }
      if (hit != hits.by_address.end() && hit->first == key) {
        entry.samples = hit->second.samples;
        entry.period = hit->second.period;
        ++hit;
      }
      // A call's return address is where the call instruction ends; DWARF unwinders give the
      // address before it (inside the call, for its line): both are past the call's start.
      std::uint64_t end = key + instruction.size;
      while (callee != hits.callees_by_return.end() && callee->first <= key) {
        out.unplaced_callee_samples += callee->second.samples;
        ++callee;
      }
      for (; callee != hits.callees_by_return.end() && callee->first <= end; ++callee) {
        entry.callee_samples += callee->second.samples;
        entry.callee_period += callee->second.period;
      }
      describe(entry, key, instruction);
      // objdump's layout, as perf annotate shows it: the mnemonic in a column of six.
      entry.text = instruction.operands.empty()
                       ? instruction.mnemonic
                       : fmt::format("{:<6} {}", instruction.mnemonic, instruction.operands);
      if (!entry.target_name.empty()) entry.text += " <" + entry.target_name + ">";
      entry.instruction = std::move(instruction);
      out.instructions.push_back(std::move(entry));
    }
    for (; hit != hits.by_address.end(); ++hit) out.unplaced_samples += hit->second.samples;
    for (; callee != hits.callees_by_return.end(); ++callee) {
      out.unplaced_callee_samples += callee->second.samples;
    }
    set_percentages(out);
  }

  // A destination inside the function itself: "name+0xoff".
  static std::optional<std::string> local_target(const AnnotatedFunction& out,
                                                 std::uint64_t target) {
    if (target < out.start || target >= out.start + out.size) return std::nullopt;
    if (target == out.start) return out.name;
    return fmt::format("{}+{:#x}", out.name, target - out.start);
  }

  static std::string named(const SymbolizedAddress& symbol) {
    if (symbol.symbol.empty()) return {};
    if (symbol.offset == 0) return std::string(symbol.symbol);
    return fmt::format("{}+{:#x}", symbol.symbol, symbol.offset);
  }

  static void place_source(AnnotatedInstruction& entry, const SymbolizedAddress& at) {
    // `inlined` goes innermost first; each call's site is the next one's location, the
    // outermost's is the line in the real function.
    for (std::size_t i = 0; i < at.inlined.size(); ++i) {
      AnnotatedInline call;
      call.function = std::string(at.inlined[i].function);
      call.location = source_of(at.inlined[i].location);
      call.call_site =
          source_of(i + 1 < at.inlined.size() ? at.inlined[i + 1].location : at.source);
      entry.inlined.push_back(std::move(call));
    }
    entry.source = source_of(at.inlined.empty() ? at.source : at.inlined.front().location);
  }

  std::string target_name(const AnnotatedFunction& out, const ElfImage& image,
                          std::uint64_t target) {
    if (auto local = local_target(out, target)) return *local;
    std::optional<std::uint64_t> offset = offset_of_address(image, target);
    return offset ? named(symbolizer_.resolve_file(out.dso, *offset)) : std::string();
  }

  void annotate_kernel(AnnotatedFunction& out, const ProfileFunction& f, const FunctionHits& hits) {
    SymbolizedAddress symbol = symbolizer_.resolve_kernel(f.start);
    out.start = f.start;
    out.size = symbol.size;
    std::string error;
    std::optional<ElfImage> kcore = ElfImage::open(options_.kcore_path, error);
    std::optional<std::uint64_t> offset = kcore ? offset_of_address(*kcore, f.start) : std::nullopt;
    std::vector<std::uint8_t> code(out.size);
    if (!kcore && error.starts_with("file not found")) {
      out.no_code_reason = fmt::format(
          "no kernel code bytes: this kernel has no {} (built without CONFIG_PROC_KCORE)",
          options_.kcore_path);
    } else if (!kcore) {
      out.no_code_reason =
          fmt::format("no kernel code bytes: {} (reading {} takes root, or CAP_SYS_RAWIO)", error,
                      options_.kcore_path);
    } else if (out.size == 0 || symbol.symbol.empty()) {
      out.no_code_reason = "no kernel code bytes: the symbol's extent is unknown";
    } else if (!offset || !kcore->read(*offset, code)) {
      out.no_code_reason = fmt::format(
          "no kernel code bytes: {} does not map {:#x} (a module's code, or a recording of "
          "another boot)",
          options_.kcore_path, f.start);
    } else if (!(out.architecture = architecture_of_elf_machine(kcore->machine()))) {
      out.no_code_reason = fmt::format("no disassembler for ELF machine {}", kcore->machine());
    }
    if (!out.no_code_reason.empty()) {
      list_addresses(out, hits, 0);
      return;
    }
    fill(
        out, disassembler(*out.architecture).disassemble(code, out.start), hits,
        [](std::uint64_t address) { return address; },
        [&](AnnotatedInstruction& entry, std::uint64_t, const Instruction& instruction) {
          if (!instruction.target) return;
          auto local = local_target(out, *instruction.target);
          entry.target_name =
              local ? *local : named(symbolizer_.resolve_kernel(*instruction.target));
        });
  }

  // JIT code named by a jitdump: its bytes as the runtime loaded them, at their run-time
  // addresses (the recording's copy of the dump, else the file).
  void annotate_jit(AnnotatedFunction& out, const ProfileFunction& f, const FunctionHits& hits) {
    std::string_view digits = detail::pid_in_file_name(out.dso, "jit-", ".dump");
    std::uint32_t pid = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    symbolizer_.add_jitdump(pid, out.dso);
    const Jitdump* dump = symbolizer_.jitdump(pid);
    const JitCode* code = nullptr;
    if (dump) {
      // The load at the function's start; of several there (code reused), the one named so.
      for (const JitCode& candidate : dump->code()) {
        if (candidate.start != f.start || candidate.bytes.empty()) continue;
        if (!code ||
            named(symbolizer_.resolve_jit(pid, candidate.start, candidate.from)) == f.name) {
          code = &candidate;
        }
      }
    }
    out.start = f.start;
    if (!dump) {
      out.no_code_reason = fmt::format(
          "no code bytes: {} cannot be read, and the recording "
          "carries no copy of it",
          out.dso);
    } else if (!code) {
      out.no_code_reason =
          fmt::format("no code bytes: {} holds no code loaded at {:#x}", out.dso, f.start);
    } else if (!(out.architecture = architecture_of_elf_machine(dump->elf_machine()))) {
      out.no_code_reason =
          fmt::format("no disassembler for ELF machine {} (the jitdump's)", dump->elf_machine());
    }
    if (!out.no_code_reason.empty()) {
      list_addresses(out, hits, 0);
      return;
    }
    out.size = code->size;
    fill(
        out, disassembler(*out.architecture).disassemble(code->bytes, code->start), hits,
        [](std::uint64_t address) { return address; },
        [&](AnnotatedInstruction& entry, std::uint64_t, const Instruction& instruction) {
          if (!instruction.target) return;
          auto local = local_target(out, *instruction.target);
          entry.target_name =
              local ? *local : named(symbolizer_.resolve_jit(pid, *instruction.target, code->from));
        });
  }

  const AnnotateOptions& options_;
  const Profile& profile_;
  Symbolizer symbolizer_;
  std::unique_ptr<Disassembler> disassemblers_[2];
};

// The functions `name` means: equal to the name shown, or to its short form when the user
// wrote parameter lists.
std::vector<std::uint32_t> functions_named(const Profile& profile,
                                           const std::vector<FunctionHits>& hits,
                                           const std::string& name) {
  std::vector<std::uint32_t> found;
  for (std::uint32_t i = 0; i < profile.functions.size(); ++i) {
    if (!hits[i].sampled() || !profile.functions[i].resolved) continue;
    if (symbol_names_match(profile.functions[i].name, name)) found.push_back(i);
  }
  return found;
}

// The profile's function (and file) that the sieve counted samples of, added when no sample the
// profile holds named it.
std::uint32_t function_of(Profile& profile, const SievedFunction& counted) {
  auto dso = std::find_if(profile.dsos.begin(), profile.dsos.end(), [&](const ProfileDso& file) {
    return !file.kernel && file.path == counted.dso;
  });
  if (dso == profile.dsos.end()) {
    dso = profile.dsos.insert(profile.dsos.end(), ProfileDso{counted.dso, counted.build_id, false});
  }
  auto dso_index = static_cast<std::uint32_t>(dso - profile.dsos.begin());
  for (std::uint32_t i = 0; i < profile.functions.size(); ++i) {
    const ProfileFunction& function = profile.functions[i];
    if (function.dso == dso_index && function.resolved && function.name == counted.name) return i;
  }
  profile.functions.push_back(ProfileFunction{counted.name, dso_index, true, counted.start});
  return static_cast<std::uint32_t>(profile.functions.size() - 1);
}

// The annotation of a profile built with `profile_options`, from which `sieve` (when given) left
// out samples. nullopt where a name matches no sampled function of a sieved profile: the whole
// profile says why (or finds it where the sieve could not look).
std::optional<Annotation> annotate_profile(Profile& profile, const AnnotateOptions& options,
                                           const ProfileOptions& profile_options,
                                           const PerfDataFeatures& features,
                                           NamedFunctionSieve* sieve) {
  Annotation annotation;
  annotation.callees = options.callees;
  std::uint32_t event = profile_options.filter.event.value_or(0);
  if (event < profile.events.size()) annotation.event = profile.events[event].name;
  if (options.callees && event < profile.events.size() && !profile.events[event].has_callchains) {
    throw AnnotateError(fmt::format(
        "callees are counted from call chains, and the {} samples of this recording have none: "
        "record with -g (or --call-graph dwarf), or annotate without --children",
        annotation.event));
  }
  std::vector<FunctionHits> hits(profile.functions.size());
  // The functions met on the way up one stack: a recursive function's callees count once, at
  // its innermost call.
  std::vector<std::uint32_t> seen_in_stack;
  for (const ProfileSampleGroup& group : profile.sample_groups) {
    annotation.total_samples += group.samples;
    annotation.total_period += group.period;
    if (group.stack == no_index) continue;
    const ProfileStack* stack = &profile.stacks[group.stack];
    const ProfileFrame& frame = profile.frames[stack->frame];
    FunctionHits& function = hits[frame.function];
    count(function.by_address[frame.dso_address], function.samples, function.period, group);
    if (!options.callees) continue;
    seen_in_stack.assign(1, frame.function);
    for (std::uint32_t parent = stack->parent; parent != no_index; parent = stack->parent) {
      stack = &profile.stacks[parent];
      const ProfileFrame& caller = profile.frames[stack->frame];
      if (caller.inlined || std::find(seen_in_stack.begin(), seen_in_stack.end(),
                                      caller.function) != seen_in_stack.end()) {
        continue;
      }
      seen_in_stack.push_back(caller.function);
      FunctionHits& calling = hits[caller.function];
      count(calling.callees_by_return[caller.dso_address], calling.callee_samples,
            calling.callee_period, group);
    }
  }
  if (sieve) {
    annotation.sieved_samples = sieve->left_out_read();
    annotation.total_samples += sieve->left_out_samples();
    annotation.total_period += sieve->left_out_period();
    for (const SievedFunction& counted : sieve->counted_functions()) {
      std::uint32_t index = function_of(profile, counted);
      if (index >= hits.size()) hits.resize(index + 1);
      FunctionHits& function = hits[index];
      for (const auto& [offset, at] : counted.by_address) {
        AddressHits& here = function.by_address[offset];
        here.samples += at.samples;
        here.period += at.period;
      }
      function.samples += counted.samples;
      function.period += counted.period;
    }
  }
  if (annotation.total_samples == 0) {
    throw AnnotateError(profile.summary.samples_read == 0
                            ? "the recording has no samples"
                            : fmt::format("none of its {} samples passed the filters (--comms, "
                                          "--pid, --tid, --dsos)",
                                          profile.summary.samples_read));
  }

  std::vector<std::uint32_t> chosen;
  if (options.symbols.empty()) {
    for (std::uint32_t i = 0; i < profile.functions.size(); ++i) {
      double percent = 100.0 * static_cast<double>(hits[i].total_period()) /
                       static_cast<double>(std::max<std::uint64_t>(annotation.total_period, 1));
      if (hits[i].sampled() && percent >= options.percent_limit) chosen.push_back(i);
    }
    if (chosen.empty()) {
      throw AnnotateError(fmt::format(
          "no function has {}% or more of the samples: lower --percent-limit, or name one",
          options.percent_limit));
    }
  } else {
    for (const std::string& name : options.symbols) {
      std::vector<std::uint32_t> found = functions_named(profile, hits, name);
      if (found.empty() && sieve) return std::nullopt;
      if (found.empty()) {
        throw AnnotateError(
            explain_unknown_symbol(profile, name, options.profile.symbols.debug_root));
      }
      for (std::uint32_t index : found) {
        if (std::find(chosen.begin(), chosen.end(), index) == chosen.end()) {
          chosen.push_back(index);
        }
      }
    }
  }
  std::stable_sort(chosen.begin(), chosen.end(), [&](std::uint32_t a, std::uint32_t b) {
    return hits[a].total_period() > hits[b].total_period();
  });

  Annotator annotator(options, profile);
  annotator.set_recording_files(features);
  for (std::uint32_t index : chosen) {
    AnnotatedFunction& out = annotation.functions.emplace_back();
    annotator.annotate(out, index, hits[index]);
    out.percent_of_total = 100.0 * static_cast<double>(out.period + out.callee_period) /
                           static_cast<double>(std::max<std::uint64_t>(annotation.total_period, 1));
  }
  annotation.warnings = profile.summary.warnings;
  annotation.notes = profile.summary.notes;
  annotation.partial_data = profile.summary.partial_data;
  auto add_once = [](std::vector<std::string>& texts, std::vector<std::string> more) {
    for (std::string& text : more) {
      if (std::find(texts.begin(), texts.end(), text) == texts.end()) {
        texts.push_back(std::move(text));
      }
    }
  };
  add_once(annotation.warnings, annotator.warnings());
  add_once(annotation.notes, annotator.notes());
  return annotation;
}

}  // namespace

Annotation annotate(const PerfDataReader& reader, const AnnotateOptions& options) {
  ProfileOptions profile_options = options.profile;
  // The sampled instruction is all annotate counts, unless callees are: only then are call
  // chains kept (and unwound).
  profile_options.callchains = options.callees;
  profile_options.keep_samples = false;
  profile_options.symbols.source_lines = false;
  profile_options.symbols.inline_frames = false;
  if (!profile_options.filter.event && reader.events().size() > 1) profile_options.filter.event = 0;
  // Named functions, their own samples, of every thread: samples elsewhere need only be
  // counted. (The thread, CPU and time filters and callees need every sample resolved.)
  const ProfileFilter& filter = profile_options.filter;
  if (options.sieve_samples && !options.symbols.empty() && !options.callees &&
      filter.comms.empty() && filter.pids.empty() && filter.tids.empty() && filter.dsos.empty() &&
      filter.symbols.empty() && filter.cpus.empty() && filter.times.empty() &&
      !filter.switches.active() && filter.from == 0 && filter.to == ~std::uint64_t{0}) {
    if (auto sieve = NamedFunctionSieve::make(reader, profile_options, options.symbols)) {
      Profile profile;
      if (auto records = sieve->count_samples()) {
        profile = build_profile(
            reader, profile_options,
            [&](const PerfDataReader::Visitor& visit) {
              return reader.for_each_record_ordered_at(*records, visit);
            },
            sieve->left_out_read());
      } else {
        profile = build_profile(reader, profile_options,
                                [&](const PerfDataRecord& record) { return sieve->keep(record); });
      }
      if (auto annotation =
              annotate_profile(profile, options, profile_options, reader.features(), &*sieve)) {
        return std::move(*annotation);
      }
    }
  }
  Profile profile = build_profile(reader, profile_options);
  return *annotate_profile(profile, options, profile_options, reader.features(), nullptr);
}

}  // namespace perfscope
