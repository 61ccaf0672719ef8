// perf script --dlfilter: a filter shared object compiled against perf's perf_dlfilter.h, loaded
// and driven as perf drives it (start, filter_event_early, filter_event, stop, and the
// perf_dlfilter_fns callbacks), so that a filter written for perf works unchanged on perfscope.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "perfscope/abi/perf_dlfilter.hpp"
#include "script_sample_filter.hpp"

namespace perfscope::cli {

class DlFilter final : public SampleFilter {
 public:
  // Loads `path` (a name without '/' is looked for in the working directory, then in perf's
  // dlfilters directory, as perf looks) and runs its start(). Throws std::runtime_error saying
  // what failed.
  DlFilter(const std::string& path, std::vector<std::string> arguments);
  ~DlFilter() override;
  DlFilter(const DlFilter&) = delete;
  DlFilter& operator=(const DlFilter&) = delete;

  bool keep_early(const SampleFilterInput& input) override;
  bool keep(const SampleFilterInput& input) override;
  bool has_pending_output() const override;
  void write_pending_output() override;
  // Runs the filter's stop(); false (with `error` saying why) when it fails.
  bool finish(std::string& error);

  // Each callback's context: what the sample being filtered resolves to.
  struct Context;

 private:
  bool call(int (*function)(void*, const abi::dlfilter::Sample*, void*),
            const SampleFilterInput& input, const char* name);

  std::string path_;
  void* handle_ = nullptr;
  void* data_ = nullptr;
  abi::dlfilter::FilterFunction filter_event_ = nullptr, filter_event_early_ = nullptr;
  abi::dlfilter::StopFunction stop_ = nullptr;
  // The filter's own C library's stdout, which is not perfscope's when perfscope is linked
  // statically: its buffer is written out between the samples' text, where perf's would be.
  std::FILE** filter_stdout_ = nullptr;
  std::size_t (*filter_fpending_)(std::FILE*) = nullptr;
  int (*filter_fflush_)(std::FILE*) = nullptr;
  std::unique_ptr<Context> context_;
};

// perf's --list-dlfilters: each filter in perf's dlfilters directory with its description.
std::string list_dlfilters();

}  // namespace perfscope::cli
