// Tracepoint payloads (the RAW data of tracepoint samples) decoded into named fields, from the
// format files tracefs publishes, parsed with libtraceevent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct tep_handle;
struct tep_event;

namespace perfscope {

struct TracepointField {
  std::string name;
  std::string type;  // C type as the format file gives it ("pid_t", "char[16]")
  std::size_t offset = 0;
  std::size_t size = 0;
  bool is_common = false;  // common_type, common_flags, common_preempt_count, common_pid
  bool is_signed = false;
  bool is_array = false;     // fixed-size array (char comm[16])
  bool is_string = false;    // char array or __data_loc char[]
  bool is_dynamic = false;   // __data_loc: a u32 {offset, length} pointing later in the payload
  bool is_relative = false;  // __rel_loc: the offset counts from the end of the field
};

// One decoded field value. Spans and views point into the payload.
struct TracepointValue {
  const TracepointField* field = nullptr;
  std::uint64_t number = 0;          // integers (sign-extended into the u64 when is_signed)
  std::string_view text;             // strings
  std::span<const std::byte> bytes;  // arrays and dynamic data
  std::int64_t as_signed() const noexcept { return static_cast<std::int64_t>(number); }
};

class TracepointFormat {
 public:
  std::uint64_t id() const noexcept { return id_; }
  const std::string& system() const noexcept { return system_; }
  const std::string& name() const noexcept { return name_; }
  const std::vector<TracepointField>& fields() const noexcept { return fields_; }
  const TracepointField* field(std::string_view name) const noexcept;

  // The value of one field of a payload; nullopt when the field is unknown or the payload too
  // short for it.
  std::optional<TracepointValue> value(std::span<const std::byte> payload,
                                       std::string_view field_name) const noexcept;
  std::optional<TracepointValue> value(std::span<const std::byte> payload,
                                       const TracepointField& field) const noexcept;
  // The number in a fixed-size integer field (sign-extended when signed) without building a
  // TracepointValue: for analyses that read a few fields of every sample. nullopt when the
  // field is an array, a string or larger than 8 bytes, or the payload too short for it.
  static std::optional<std::int64_t> integer(std::span<const std::byte> payload,
                                             const TracepointField& field) noexcept {
    if (field.is_dynamic || field.is_array || field.size == 0 || field.size > 8 ||
        field.offset + field.size > payload.size()) {
      return std::nullopt;
    }
    // Fixed sizes, so that the copies compile to plain loads (little-endian hosts).
    const std::byte* at = payload.data() + field.offset;
    std::uint64_t raw = 0;
    switch (field.size) {
      case 1: raw = static_cast<std::uint8_t>(*at); break;
      case 2: {
        std::uint16_t value;
        std::memcpy(&value, at, sizeof value);
        raw = value;
        break;
      }
      case 4: {
        std::uint32_t value;
        std::memcpy(&value, at, sizeof value);
        raw = value;
        break;
      }
      case 8: std::memcpy(&raw, at, sizeof raw); break;
      default: std::memcpy(&raw, at, field.size); break;
    }
    if (field.is_signed && field.size < sizeof raw) {
      unsigned shift = static_cast<unsigned>(64 - 8 * field.size);
      raw = static_cast<std::uint64_t>(static_cast<std::int64_t>(raw << shift) >> shift);
    }
    return static_cast<std::int64_t>(raw);
  }
  // "name=value" pairs of every non-common field, as perf script -F trace prints them raw.
  std::string describe(std::span<const std::byte> payload) const;
  // libtraceevent's parse of the format (its fields' flags, its print fmt's argument tree), for
  // callers that follow perf's use of it (perf's Python scripting).
  tep_event* parsed_event() const noexcept { return event_; }

 private:
  friend class TracepointCatalog;
  std::uint64_t id_ = 0;
  std::string system_;
  std::string name_;
  std::vector<TracepointField> fields_;
  tep_event* event_ = nullptr;
};

// The formats of the tracepoints a session uses, by id.
class TracepointCatalog {
 public:
  TracepointCatalog();
  ~TracepointCatalog();
  TracepointCatalog(const TracepointCatalog&) = delete;
  TracepointCatalog& operator=(const TracepointCatalog&) = delete;

  // Loads events/<system>/<name>/format from tracefs. Throws perfscope::Error when tracefs or
  // the tracepoint is missing, or the format does not parse.
  const TracepointFormat& load(std::string_view system, std::string_view name);
  // Loads a format from its text (as perf.data's tracing data carries it).
  const TracepointFormat& load_text(std::string_view system, std::string_view format_text);
  const TracepointFormat* find(std::uint64_t id) const noexcept;
  // The payload printed with the tracepoint's own print fmt ("prev_comm=sh prev_pid=12 ...").
  std::string print(const TracepointFormat& format, std::span<const std::byte> payload) const;
  // Each of the tracepoint's own fields (not the common_ ones) as libtraceevent prints it alone
  // (tep_print_field: numbers in decimal or as the format's flags say, strings, arrays), in the
  // format's order: perf's data convert --to-json values.
  std::vector<std::pair<std::string, std::string>> print_fields(
      const TracepointFormat& format, std::span<const std::byte> payload) const;

 private:
  tep_handle* tep_ = nullptr;
  std::vector<std::unique_ptr<TracepointFormat>> formats_;
};

}  // namespace perfscope
