// `script --json`: one JSON object per perf.data record, every decoded field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::cli {

// `record` of `reader` with its offset, type, misc and size, then its decoded fields (samples:
// every field of their sample_type; other kernel records: their fields and sample_id trailer;
// perf's own records: their payload as hex). `names`: the events' names, by event index.
nlohmann::json record_json(const PerfDataRecord& record, const PerfDataReader& reader,
                           const std::vector<std::string>& names);

}  // namespace perfscope::cli
