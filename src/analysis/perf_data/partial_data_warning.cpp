#include <fmt/format.h>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

std::string partial_data_warning(const PerfDataReader& reader, const PerfDataError& error) {
  return fmt::format("{}{}{}; what follows covers the records before it", reader.source(),
                     reader.source().empty() ? "" : ": ", error.what());
}

}  // namespace perfscope
