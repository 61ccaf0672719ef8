// perf's `param_dict` for a sample (process_event's argument, a tracepoint handler's optional
// perf_sample_dict) and its `callchain` list, built as perf's Python engine builds them: the
// same keys in the same order, present where perf's are, with perf's value types.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/core/records.hpp"
#include "python_api.hpp"

namespace perfscope::python {

// The build id of the file `where` lies in, as perf's scripts get it (lowercase hex): its
// mapping's, else the recording's, else read from the file (cached in `files`); "" when none.
std::string build_id_text(const StackResolver& resolver, const ResolvedAddress& where,
                          std::unordered_map<std::string, std::string>& files);

class SampleDictBuilder {
 public:
  // `max_stack`: the most callchain entries (perf script --max-stack, 127 by default);
  // `callchains` false leaves every callchain empty (perf script -G/--hide-call-graph).
  SampleDictBuilder(const PerfDataReader& reader, StackResolver& resolver, std::size_t max_stack,
                    bool callchains);
  ~SampleDictBuilder();

  // The list of the sample's frames, leaf first (a new reference); [] without a call chain.
  PyObject* callchain(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event);
  // The whole dict (a new reference); `callchain` is the list above, which it takes over.
  PyObject* sample_dict(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event,
                        PyObject* callchain);
  // The comm of `tid` as a str (a new reference): ":TID" for a thread no record named.
  PyObject* comm(std::uint32_t tid);

 private:
  struct AddressStrings;
  PyObject* cached_string(std::vector<Ref>& cache, std::uint32_t id, std::string_view text);
  void set_location(PyObject* dict, const ResolvedAddress& where, bool addr_keys);
  PyObject* frame_dict(const StackFrame& frame);
  PyObject* sample_values(const SampleRecord& sample, std::size_t event);
  PyObject* branch_lists(const SampleRecord& sample, std::uint16_t cpumode, PyObject** symbols);
  std::string registers_text(const RegisterSet& set) const;

  const PerfDataReader& reader_;
  StackResolver& resolver_;
  std::size_t max_stack_;
  bool callchains_;
  bool arm64_ = false;
  std::vector<StackFrame> frames_;
  std::vector<Reading> readings_;  // a sample's PERF_SAMPLE_READ values, decoded
  // Python strings per ResolvedAddress::id: its file, its function, its file's build id.
  std::vector<Ref> dso_strings_, symbol_strings_, build_id_strings_;
  // Per ResolvedAddress::id: its callchain entry and 'sym' dict, copied for each sample.
  struct FrameTemplate {
    Ref frame, sym;
  };
  std::vector<FrameTemplate> frame_templates_;
  struct CachedComm {
    std::string text;
    Ref object;
  };
  std::unordered_map<std::uint32_t, CachedComm> comms_;
  // The last int made for a field whose value tends to repeat.
  struct RepeatedNumber {
    std::uint64_t value = 0;
    Ref object;
  };
  PyObject* repeated(RepeatedNumber& last, std::uint64_t value);
  RepeatedNumber last_pid_, last_tid_, last_period_, last_data_source_;
  std::uint64_t data_source_value_ = 0;
  Ref data_source_text_, empty_text_, zero_reading_;
  std::unordered_map<std::string, std::string> file_build_ids_;  // read from the files
  std::vector<Ref> event_names_, attrs_;                         // by event index
  std::vector<bool> addr_correlates_;  // by event index: addr names code or data perf resolves
};

}  // namespace perfscope::python
