// libFuzzer target for what `perfscope report` does with a file from elsewhere: arbitrary bytes
// as a perf.data file, through the reader, build_profile (maps, symbols, call chains) and every
// exporter. Bad input must end in a PerfDataError or in a profile every exporter writes; nothing
// else may be thrown, and nothing may read out of bounds. Symbols come from the files the
// recording names (the seeds name this machine's), never from this machine's kernel or JIT maps,
// so that a run does not depend on who runs it. Names in the input are arbitrary bytes: every
// output must still be what its format requires (issue #22): valid UTF-8 in the JSON formats, the
// SVG and pprof's string table, and one stack a line in folded, without raw control bytes.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/core/safe_text.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();  // libFuzzer reports the input
}

std::string gunzip(const std::string& compressed) {
  z_stream stream{};
  require(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[1 << 14];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  inflateEnd(&stream);
  require(status == Z_STREAM_END);
  return out;
}

std::uint64_t varint(const std::string& bytes, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    require(at < bytes.size());
    auto byte = static_cast<unsigned char>(bytes[at++]);
    value |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
  std::abort();
}

// Walks the top level of a serialized perftools.profiles.Profile: every string_table entry
// (field 6) must be UTF-8, which proto3 requires and strict decoders check.
void check_pprof_strings(const std::string& message) {
  for (std::size_t at = 0; at < message.size();) {
    std::uint64_t tag = varint(message, at);
    switch (tag & 7) {
      case 0: varint(message, at); break;
      case 1: at += 8; break;
      case 5: at += 4; break;
      case 2: {
        std::uint64_t length = varint(message, at);
        require(length <= message.size() - at);
        if ((tag >> 3) == 6) require(perfscope::is_valid_utf8(message.substr(at, length)));
        at += length;
        break;
      }
      default: std::abort();
    }
    require(at <= message.size());
  }
}

void check_folded(const std::string& text) {
  require(perfscope::is_valid_utf8(text));
  for (std::size_t line = 0; line < text.size();) {
    std::size_t end = text.find('\n', line);
    require(end != std::string::npos);
    // "frames COUNT": digits after the last space, no control byte anywhere.
    std::size_t space = text.rfind(' ', end);
    require(space != std::string::npos && space >= line && space + 1 < end);
    for (std::size_t i = space + 1; i < end; ++i) require(text[i] >= '0' && text[i] <= '9');
    for (std::size_t i = line; i < end; ++i) {
      auto c = static_cast<unsigned char>(text[i]);
      require(c >= 0x20 && c != 0x7f);
    }
    line = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  perfscope::ProfileOptions options;
  options.symbols.kallsyms_path = "/nonexistent/kallsyms";
  options.symbols.jit_map_dir = "/nonexistent";
  options.symbols.debug_root = "/nonexistent";
  try {
    auto reader = perfscope::PerfDataReader::from_bytes(std::move(bytes));
    perfscope::Profile profile = perfscope::build_profile(reader, options);
    for (auto format : {perfscope::ExportFormat::folded, perfscope::ExportFormat::speedscope,
                        perfscope::ExportFormat::gecko, perfscope::ExportFormat::pprof,
                        perfscope::ExportFormat::json, perfscope::ExportFormat::svg}) {
      std::ostringstream out;
      perfscope::write_profile(profile, format, out);
      std::string text = out.str();
      if (format == perfscope::ExportFormat::pprof) {
        check_pprof_strings(gunzip(text));
      } else if (format == perfscope::ExportFormat::folded) {
        check_folded(text);
      } else {
        require(perfscope::is_valid_utf8(text));
      }
    }
  } catch (const perfscope::PerfDataError&) {
  }
  return 0;
}
