#include "perfscope/analysis/perf_data/tracepoint_format.hpp"

#include <fmt/format.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

const TracepointField* TracepointFormat::field(std::string_view name) const noexcept {
  for (const auto& candidate : fields_) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

std::optional<TracepointValue> TracepointFormat::value(std::span<const std::byte> payload,
                                                       std::string_view field_name) const noexcept {
  const TracepointField* found = field(field_name);
  if (!found) return std::nullopt;
  return value(payload, *found);
}

std::optional<TracepointValue> TracepointFormat::value(std::span<const std::byte> payload,
                                                       const TracepointField& f) const noexcept {
  if (f.offset + f.size > payload.size()) return std::nullopt;
  TracepointValue result;
  result.field = &f;
  const std::byte* at = payload.data() + f.offset;
  if (f.is_dynamic) {
    std::uint32_t location = 0;
    if (f.size < sizeof location) return std::nullopt;
    std::memcpy(&location, at, sizeof location);
    std::size_t offset = location & 0xffff;
    std::size_t length = location >> 16;
    if (f.is_relative) offset += f.offset + f.size;
    if (offset + length > payload.size()) return std::nullopt;
    result.bytes = payload.subspan(offset, length);
    if (f.is_string) {
      const char* text = reinterpret_cast<const char*>(result.bytes.data());
      result.text = {text, ::strnlen(text, length)};
    }
    return result;
  }
  if (f.is_array || f.size > sizeof(std::uint64_t)) {
    result.bytes = payload.subspan(f.offset, f.size);
    if (f.is_string) {
      const char* text = reinterpret_cast<const char*>(at);
      result.text = {text, ::strnlen(text, f.size)};
    }
    return result;
  }
  result.number = static_cast<std::uint64_t>(integer(payload, f).value_or(0));
  result.bytes = payload.subspan(f.offset, f.size);
  return result;
}

std::string TracepointFormat::describe(std::span<const std::byte> payload) const {
  std::string text;
  for (const auto& f : fields_) {
    if (f.is_common) continue;
    auto v = value(payload, f);
    if (!text.empty()) text += ' ';
    text += f.name + '=';
    if (!v) {
      text += "<truncated>";
    } else if (f.is_string) {
      text += v->text;
    } else if (f.is_array || f.is_dynamic || f.size > sizeof(std::uint64_t)) {
      text += fmt::format("<{} bytes>", v->bytes.size());
    } else if (f.is_signed) {
      text += std::to_string(v->as_signed());
    } else {
      text += fmt::format("{:#x}", v->number);
    }
  }
  return text;
}

TracepointCatalog::TracepointCatalog() : tep_(tep_alloc()) {
  if (tep_) {
    tep_set_long_size(tep_, sizeof(long));
    tep_set_page_size(tep_, static_cast<int>(::sysconf(_SC_PAGESIZE)));
  }
}

TracepointCatalog::~TracepointCatalog() {
  if (tep_) tep_free(tep_);
}

const TracepointFormat& TracepointCatalog::load(std::string_view system, std::string_view name) {
  auto root = sys::tracefs_root();
  if (!root) {
    throw Error(ENODEV, "tracefs is not available",
                "mount it (mount -t tracefs nodev /sys/kernel/tracing) as root.");
  }
  std::string path = fmt::format("{}/events/{}/{}/format", *root, system, name);
  auto text = sys::read_text_file(path);
  if (!text) {
    int errnum = errno ? errno : ENOENT;
    throw Error(errnum,
                fmt::format("cannot read the format of tracepoint {}:{} ({}): {}", system, name,
                            path, std::strerror(errnum)),
                errnum == EACCES ? "tracefs is readable by root only on this system."
                                 : "check the name in available_events.");
  }
  return load_text(system, *text);
}

const TracepointFormat& TracepointCatalog::load_text(std::string_view system,
                                                     std::string_view format_text) {
  if (!tep_) throw Error(ENOMEM, "libtraceevent could not allocate its handle");
  std::string system_name(system);
  // The id is needed to find the event again: tep_parse_event registers the event with the
  // handle (tep_print_event looks events up there) but does not return it.
  auto id_at = format_text.find("\nID:");
  if (format_text.rfind("ID:", 0) == 0) id_at = 0;
  long long id = -1;
  if (id_at != std::string_view::npos) {
    std::string id_text(format_text.substr(format_text.find(':', id_at) + 1, 24));
    id = std::strtoll(id_text.c_str(), nullptr, 10);
  }
  if (id < 0) {
    throw Error(EINVAL, fmt::format("tracepoint format of '{}' has no ID line", system),
                "the format text is not what tracefs writes (events/SYS/NAME/format).");
  }
  if (const auto* existing = find(static_cast<std::uint64_t>(id))) return *existing;
  tep_errno result =
      tep_parse_event(tep_, format_text.data(), format_text.size(), system_name.c_str());
  tep_event* event = tep_find_event(tep_, static_cast<int>(id));
  if (result != 0 || !event) {
    char message[256] = "unknown error";
    tep_strerror(tep_, result, message, sizeof message);
    throw Error(EINVAL,
                fmt::format("cannot parse a tracepoint format of '{}': {}", system, message),
                "the format text is not what tracefs writes (events/SYS/NAME/format).");
  }
  if (const auto* existing = find(static_cast<std::uint64_t>(event->id))) return *existing;
  auto format = std::make_unique<TracepointFormat>();
  format->id_ = static_cast<std::uint64_t>(event->id);
  format->system_ = event->system ? event->system : system_name;
  format->name_ = event->name ? event->name : "";
  format->event_ = event;
  auto add_fields = [&](tep_format_field* f, bool common) {
    for (; f; f = f->next) {
      TracepointField field;
      field.name = f->name ? f->name : "";
      field.type = f->type ? f->type : "";
      field.offset = static_cast<std::size_t>(f->offset);
      field.size = static_cast<std::size_t>(f->size);
      field.is_common = common;
      field.is_signed = (f->flags & TEP_FIELD_IS_SIGNED) != 0;
      field.is_array = (f->flags & TEP_FIELD_IS_ARRAY) != 0;
      field.is_string = (f->flags & TEP_FIELD_IS_STRING) != 0;
      field.is_dynamic = (f->flags & TEP_FIELD_IS_DYNAMIC) != 0;
      field.is_relative = (f->flags & TEP_FIELD_IS_RELATIVE) != 0;
      format->fields_.push_back(std::move(field));
    }
  };
  add_fields(event->format.common_fields, true);
  add_fields(event->format.fields, false);
  formats_.push_back(std::move(format));
  return *formats_.back();
}

const TracepointFormat* TracepointCatalog::find(std::uint64_t id) const noexcept {
  for (const auto& format : formats_) {
    if (format->id() == id) return format.get();
  }
  return nullptr;
}

std::string TracepointCatalog::print(const TracepointFormat& format,
                                     std::span<const std::byte> payload) const {
  if (!tep_ || !format.event_) return format.describe(payload);
  tep_record record{};
  record.data = const_cast<std::byte*>(payload.data());
  record.size = static_cast<int>(payload.size());
  trace_seq sequence;
  trace_seq_init(&sequence);
  tep_print_event(tep_, &sequence, &record, "%s", TEP_PRINT_INFO);
  trace_seq_terminate(&sequence);
  std::string text(sequence.buffer ? sequence.buffer : "", sequence.len);
  trace_seq_destroy(&sequence);
  return text;
}

std::vector<std::pair<std::string, std::string>> TracepointCatalog::print_fields(
    const TracepointFormat& format, std::span<const std::byte> payload) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!tep_ || !format.event_) return out;
  for (tep_format_field* field = format.event_->format.fields; field != nullptr;
       field = field->next) {
    // A field the payload ends before (or whose __data_loc points past its end) prints nothing
    // rather than reading past it.
    std::size_t end =
        static_cast<std::size_t>(field->offset) + static_cast<std::size_t>(field->size);
    bool inside = end <= payload.size();
    if (inside && (field->flags & TEP_FIELD_IS_DYNAMIC) != 0 && field->size == 4) {
      std::uint32_t location = 0;
      std::memcpy(&location, payload.data() + field->offset, sizeof location);
      std::size_t start = location & 0xffffu;
      if ((field->flags & TEP_FIELD_IS_RELATIVE) != 0) start += end;
      inside = start + (location >> 16) <= payload.size();
    }
    if (!inside) {
      out.emplace_back(field->name, std::string());
      continue;
    }
    trace_seq sequence;
    trace_seq_init(&sequence);
    tep_print_field(&sequence, const_cast<std::byte*>(payload.data()), field);
    trace_seq_terminate(&sequence);
    out.emplace_back(field->name,
                     std::string(sequence.buffer ? sequence.buffer : "", sequence.len));
    trace_seq_destroy(&sequence);
  }
  return out;
}

}  // namespace perfscope
