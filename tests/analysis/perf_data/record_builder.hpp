// Builds perf.data records and files byte by byte, for tests of what this machine cannot record
// (AUXTRACE, simpleperf's records, foreign features).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"

namespace perfscope::test {

class RecordBuilder {
 public:
  explicit RecordBuilder(std::uint32_t type) { add(abi::RecordHeader{type, 0, 0}); }
  template <class T>
  RecordBuilder& add(const T& value) {
    auto at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
    return *this;
  }
  RecordBuilder& misc(std::uint16_t value) {
    std::memcpy(bytes_.data() + offsetof(abi::RecordHeader, misc), &value, sizeof value);
    return *this;
  }
  RecordBuilder& text(std::string_view value) {
    bytes_.insert(bytes_.end(), reinterpret_cast<const std::byte*>(value.data()),
                  reinterpret_cast<const std::byte*>(value.data() + value.size()));
    bytes_.push_back(std::byte{0});
    return *this;
  }
  // Zeros up to the next 8 bytes (after a string a trailer follows).
  RecordBuilder& pad() {
    bytes_.resize((bytes_.size() + 7) & ~std::size_t{7});
    return *this;
  }
  // Pads to 8 bytes and sets the header's size.
  std::vector<std::byte> done() {
    bytes_.resize((bytes_.size() + 7) & ~std::size_t{7});
    auto size = static_cast<std::uint16_t>(bytes_.size());
    std::memcpy(bytes_.data() + offsetof(abi::RecordHeader, size), &size, sizeof size);
    return bytes_;
  }

 private:
  std::vector<std::byte> bytes_;
};

inline std::uint32_t user_type(abi::UserRecordType type) {
  return static_cast<std::uint32_t>(type);
}

// A pipe-mode perf.data: the 16-byte header, then the records (and whatever follows them).
inline std::vector<std::byte> pipe_file(const std::vector<std::vector<std::byte>>& parts) {
  perf_data::PipeHeader header;
  std::vector<std::byte> bytes(sizeof header);
  std::memcpy(bytes.data(), &header, sizeof header);
  for (const auto& part : parts) bytes.insert(bytes.end(), part.begin(), part.end());
  return bytes;
}

// A file-mode perf.data assembled from its parts: one attr per event (its ids after the attrs),
// the data records as given, then the feature sections in bit order.
struct FileBuilder {
  std::uint32_t attr_size = abi::attr_size::ver7;
  std::vector<std::pair<abi::PerfEventAttr, std::vector<std::uint64_t>>> events;
  std::vector<std::byte> data;
  std::vector<std::pair<unsigned, std::vector<std::byte>>> features;  // ascending bits

  void append(const std::vector<std::byte>& bytes) {
    data.insert(data.end(), bytes.begin(), bytes.end());
  }

  std::vector<std::byte> bytes() const {
    perf_data::FileHeader header;
    header.size = sizeof header;
    header.attr_size = attr_size + sizeof(perf_data::FileSection);
    header.attrs = {sizeof header, events.size() * header.attr_size};
    std::vector<std::byte> out(sizeof header);
    auto put = [&](const void* at, std::size_t size) {
      const auto* bytes = static_cast<const std::byte*>(at);
      out.insert(out.end(), bytes, bytes + size);
    };
    std::uint64_t ids_at = header.attrs.offset + header.attrs.size;
    for (const auto& [attr, ids] : events) {
      abi::PerfEventAttr copy = attr;
      copy.size = attr_size;
      put(&copy, attr_size);
      perf_data::FileSection section{ids_at, ids.size() * 8};
      put(&section, sizeof section);
      ids_at += section.size;
    }
    for (const auto& event : events) put(event.second.data(), event.second.size() * 8);
    header.data = {out.size(), data.size()};
    put(data.data(), data.size());
    std::uint64_t contents_at = out.size() + features.size() * sizeof(perf_data::FileSection);
    for (const auto& [bit, contents] : features) {
      header.set_feature(bit);
      perf_data::FileSection section{contents_at, contents.size()};
      put(&section, sizeof section);
      contents_at += contents.size();
    }
    for (const auto& feature : features) put(feature.second.data(), feature.second.size());
    std::memcpy(out.data(), &header, sizeof header);
    return out;
  }
};

}  // namespace perfscope::test
