#include "script_tracepoints.hpp"

#include <fmt/format.h>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope::cli {

ScriptTracepoints::ScriptTracepoints(const PerfDataReader& reader) {
  const auto tracepoint = static_cast<std::uint32_t>(abi::EventType::tracepoint);
  formats_.assign(reader.events().size(), nullptr);
  bool any = false;
  for (const auto& event : reader.events()) any |= event.attr.type == tracepoint;
  if (!any) return;
  if (const auto& section = reader.features().tracing_data) {
    std::string error;
    for (const auto& format : tracing_data_formats(*section, &error)) {
      try {
        catalog_.load_text(format.system, format.text);
      } catch (const Error& failure) {
        notes_.push_back(failure.what());
      }
    }
    if (!error.empty()) notes_.push_back(error);
  }
  for (std::size_t i = 0; i < reader.events().size(); ++i) {
    const auto& event = reader.events()[i];
    if (event.attr.type != tracepoint) continue;
    formats_[i] = catalog_.find(event.attr.config);
    if (formats_[i] != nullptr) continue;
    // No format in the recording: this machine's, when the name says which.
    std::string_view name = event.name;
    std::size_t colon = name.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view system = name.substr(0, colon), short_name = name.substr(colon + 1);
    short_name = short_name.substr(0, short_name.find(':'));  // "sched:sched_switch:u"
    try {
      formats_[i] = &catalog_.load(system, short_name);
      notes_.push_back(
          fmt::format("{}: the recording has no format for it (no tracing data); "
                      "decoded with this machine's",
                      event.name));
    } catch (const Error& failure) {
      notes_.push_back(
          fmt::format("{}: its payload is not decoded: {}", event.name, failure.what()));
    }
  }
}

std::string ScriptTracepoints::text(std::size_t event, std::span<const std::byte> payload) const {
  return catalog_.print(*formats_[event], payload);
}

nlohmann::json ScriptTracepoints::fields(std::size_t event,
                                         std::span<const std::byte> payload) const {
  nlohmann::json out = nlohmann::json::object();
  const TracepointFormat& format = *formats_[event];
  for (const TracepointField& field : format.fields()) {
    if (field.is_common) continue;
    auto value = format.value(payload, field);
    if (!value) {
      out[field.name] = nullptr;  // the payload ends before it
    } else if (field.is_string) {
      out[field.name] = std::string(value->text);
    } else if (field.is_array || field.is_dynamic || field.size > sizeof(std::uint64_t)) {
      std::string hex;
      for (std::byte b : value->bytes) hex += fmt::format("{:02x}", static_cast<unsigned>(b));
      out[field.name] = hex;
    } else if (field.is_signed) {
      out[field.name] = value->as_signed();
    } else {
      out[field.name] = value->number;
    }
  }
  return out;
}

}  // namespace perfscope::cli
