// Opening a PerfDataReader: a mapped file, a FIFO or device read as it comes, standard input, or
// bytes in memory; errors in the header name where the bytes came from.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "analysis/perf_data/perf_data_stream.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

PerfDataReader PerfDataReader::open(const std::string& path) {
  if (path == "-") {
    return from_bytes(read_perf_data_stream(stdin, "standard input"), "standard input");
  }
  refuse_directory(path);
  PerfDataReader reader;
  int result = reader.map_.map_file(path.c_str());
  if (result == -ENODEV) {
    // A FIFO or a device: its bytes can only be read as they come.
    std::vector<std::byte> bytes;
    result = read_perf_data_path(path, bytes);
    if (result == 0) return from_bytes(std::move(bytes), path);
  }
  if (result < 0) {
    int errnum = -result;
    throw Error(errnum, fmt::format("cannot open {}: {}", path, std::strerror(errnum)),
                errnum == ENOENT ? "record one first (perfscope record -- COMMAND), or give the "
                                   "file with -i FILE."
                                 : "");
  }
  reader.bytes_ = std::span<const std::byte>(static_cast<const std::byte*>(reader.map_.data()),
                                             reader.map_.size());
  reader.source_ = path;
  reader.parse_naming_errors();
  return reader;
}

PerfDataReader PerfDataReader::from_bytes(std::vector<std::byte> bytes, std::string source) {
  PerfDataReader reader;
  reader.owned_ = std::move(bytes);
  reader.bytes_ = reader.owned_;
  reader.source_ = std::move(source);
  reader.parse_naming_errors();
  return reader;
}

void PerfDataReader::parse_naming_errors() {
  if (source_.empty()) return parse();
  try {
    parse();
  } catch (const PerfDataError& error) {
    throw PerfDataError::in_file(source_, error);
  }
}

}  // namespace perfscope
