// NamedFunctionSieve: the samples an annotation of named functions can count without ordering
// and naming each one. Annotating one function of a large recording otherwise orders every
// sample by time and names each through its process's mappings; most samples either lie in
// files where no function of those names is, or in the function itself at an address that
// only one mapping of its process has ever held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

// Samples and period at one address.
struct AddressHits {
  std::uint64_t samples = 0, period = 0;
};

// A function the sieve counted samples of, keyed as the profile keys functions (name and file).
struct SievedFunction {
  std::string name;
  std::string dso;
  std::string build_id;     // hex, as the recording gives it; empty when unknown
  std::uint64_t start = 0;  // file offset of its first byte
  std::map<std::uint64_t, AddressHits> by_address;  // by file offset
  std::uint64_t samples = 0, period = 0;
};

class NamedFunctionSieve {
 public:
  // Reads the recording's MMAP, MMAP2, COMM and FORK records and looks the names up in each
  // mapped file (with a symbolizer of `options`' own). Then, of the samples:
  // - one in user space whose ip lies in a function of those names, after its process mapped
  //   the function's file there and before anything in that process changed the mapping (a
  //   later map over it, an exec), is counted at its address: the function it names is known
  //   without time order;
  // - one in user space whose ip lies only in mappings of files (of the recorded build, or
  //   missing) that hold no function of those names there is counted toward the totals alone;
  // - a kernel sample is counted toward the totals alone when kallsyms has no such name (which
  //   is searched for only once a kernel sample is met: a user-space recording never reads it).
  // Every other sample (hypervisor and guest ones, JIT code, the vDSO, files of another build,
  // no mapping, a time that leaves the mapping open) is kept, to be resolved the usual way. The
  // annotation is the same; warnings about files none of whose samples were resolved (a
  // library not found or stripped, its debug file used) are left out. The windows assume what
  // the ordered walk assumes: the rounds order the records' times. nullopt when no mapped file
  // holds a function of those names (the kernel's, JIT code's, or an unknown name: the whole
  // profile answers that).
  static std::optional<NamedFunctionSieve> make(const PerfDataReader& reader,
                                                const ProfileOptions& options,
                                                const std::vector<std::string>& names);

  // Counts the samples it can (on two threads where the file is large) and gives the offsets
  // of the records the profile still needs, in file order: every record that is not a sample,
  // and the samples it did not count. nullopt for a file whose records have no offsets of
  // their own (compressed): sieve it in the ordered walk with keep() instead.
  std::optional<std::vector<std::uint64_t>> count_samples();
  // PerfDataReader::RecordSieve: false for a sample it counted; every other record is kept. A
  // sample that does not decode is kept too (the profile counts it as undecodable).
  bool keep(const PerfDataRecord& record);

  // The samples it counted, which the profile does not hold: of the event the annotation
  // counts (filter.event, else every event), and of every event (what samples_read counts).
  std::uint64_t left_out_samples() const noexcept { return tally_.samples; }
  std::uint64_t left_out_period() const noexcept { return tally_.period; }
  std::uint64_t left_out_read() const noexcept { return tally_.read; }
  // After the walk: the functions of those names it counted samples of, at their addresses.
  std::vector<SievedFunction> counted_functions();

 private:
  struct FileRange {  // file offsets [first, first + size) that hold a function of those names
    std::size_t file = 0;
    std::uint64_t first = 0, size = 0;
  };
  // What was counted (per thread, then added up).
  struct Tally {
    std::uint64_t samples = 0, period = 0, read = 0;
    std::vector<std::vector<AddressHits>> hits;  // per range, per offset from its first
    SampleRecord sample;                         // decoded into, for layouts that are not fixed
    // Kernel samples met before it was known whether kallsyms has those names: counted apart,
    // then added to the totals or kept (their offsets, in file order).
    std::uint64_t kernel_samples = 0, kernel_period = 0, kernel_read = 0;
    std::vector<std::uint64_t> kernel_records;
  };
  // Where a process's samples name a function of those names: its pid, the addresses, and the
  // times (exclusive) between which the mapping is the one recorded.
  struct Window {
    std::uint32_t pid = 0;
    std::uint64_t start = 0, end = 0;
    std::uint64_t after = 0, before = 0;
    std::uint64_t offset_at_start = 0;  // file offset of `start`
    std::size_t range = 0;              // into ranges_
  };
  struct MappedFile {
    std::string path;
    std::vector<std::uint8_t> build_id;
  };

  // Where a sample's fields are, for an event whose samples hold fixed-size fields only
  // (size != 0); others are decoded.
  struct SampleLayout {
    static constexpr std::uint32_t absent = ~std::uint32_t{0};
    std::uint32_t size = 0;  // of a sample that decodes; 0: the layout is not fixed
    std::uint32_t ip = absent, pid = absent, period = absent;
    static SampleLayout of(std::uint64_t sample_type);
  };

  struct RecordedTasks;

  NamedFunctionSieve() = default;
  // make()'s steps: the build ids the recording lists, the first pass (false: the file is
  // damaged), and the windows and ranges from the names' places in the files.
  static void read_recorded_build_ids(const PerfDataReader& reader, RecordedTasks& tasks);
  bool read_tasks(const PerfDataReader& reader, RecordedTasks& tasks);
  void plan(const RecordedTasks& tasks,
            const std::vector<std::optional<std::vector<Symbolizer::FunctionFileRange>>>& functions,
            const std::vector<bool>& ambiguous);
  Tally new_tally() const;
  static void add(Tally& into, const Tally& from);
  // Whether it counts a sample (then `tally` holds it); false: the profile is to resolve it.
  bool counts(const PerfDataRecord& record, Tally& tally) const;
  // Whether a user sample at `ip` is one to count toward the totals alone (leave_out_).
  bool left_out(std::uint64_t ip) const;
  // The window that holds a sample of `pid` at `ip` and `time`, if any.
  const Window* window_of(std::uint32_t pid, std::uint64_t ip, std::uint64_t time) const;
  // Searches kallsyms for the names (once): whether kernel samples are counted or kept.
  void decide_kernel();

  const PerfDataReader* reader_ = nullptr;
  std::optional<std::uint32_t> event_;
  std::vector<std::string> names_;
  std::vector<MappedFile> files_;
  std::vector<FileRange> ranges_;
  std::vector<Window> windows_;  // by pid, then start
  // Sorted, disjoint [first, second): user addresses whose samples are counted toward the
  // totals alone.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> leave_out_;
  std::vector<SampleLayout> layouts_;  // per event
  // The offsets of the records that are not samples, in file order (offsets_known_ false: a
  // record came out of a compressed one).
  std::vector<std::uint64_t> other_records_;
  bool offsets_known_ = true;
  Tally tally_;
  bool leave_out_kernel_ = false;  // no kernel symbol has those names
  bool kernel_decided_ = false;
  std::unique_ptr<Symbolizer> scout_;  // names the counted addresses afterwards
  // What decide_kernel searches: the texts, the names' raw parts, and the recording's _text.
  Symbolizer::KallsymsSources kallsyms_;
  std::vector<std::string> raw_parts_;
  std::uint64_t kernel_reference_ = 0;
};

}  // namespace perfscope
