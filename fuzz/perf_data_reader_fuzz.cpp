// libFuzzer target: arbitrary bytes as a perf.data file. The reader must either reject them with
// a PerfDataError or walk every record (in both orders) without reading out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  try {
    auto reader = perfscope::PerfDataReader::from_bytes(std::move(bytes));
    perfscope::Record record;
    perfscope::DecodeError error;
    auto visit = [&](const perfscope::PerfDataRecord& item) {
      perfscope::decode_record(item.view, reader.events()[item.event].config, record, error);
    };
    reader.for_each_record(visit);
    reader.for_each_record_ordered(visit);
  } catch (const perfscope::PerfDataError&) {
  }
  return 0;
}
