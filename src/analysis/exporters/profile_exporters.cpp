#include "perfscope/analysis/exporters/profile_exporters.hpp"

#include <array>
#include <utility>

namespace perfscope {

namespace {

constexpr std::array<std::pair<ExportFormat, std::string_view>, 6> format_names{{
    {ExportFormat::folded, "folded"},
    {ExportFormat::speedscope, "speedscope"},
    {ExportFormat::gecko, "gecko"},
    {ExportFormat::pprof, "pprof"},
    {ExportFormat::json, "json"},
    {ExportFormat::svg, "svg"},
}};

}  // namespace

std::optional<ExportFormat> parse_export_format(std::string_view name) noexcept {
  for (const auto& [format, format_name] : format_names) {
    if (format_name == name) return format;
  }
  return std::nullopt;
}

std::string_view export_format_name(ExportFormat format) noexcept {
  for (const auto& [known, format_name] : format_names) {
    if (known == format) return format_name;
  }
  return "unknown";
}

bool export_needs_each_sample(ExportFormat format) noexcept {
  switch (format) {
    case ExportFormat::speedscope:
    case ExportFormat::gecko: return true;
    case ExportFormat::pprof:
    case ExportFormat::folded:
    case ExportFormat::json:
    case ExportFormat::svg: return false;
  }
  return true;
}

void write_profile(const Profile& profile, ExportFormat format, std::ostream& out) {
  switch (format) {
    case ExportFormat::folded: write_folded(profile, out); return;
    case ExportFormat::speedscope: write_speedscope(profile, out); return;
    case ExportFormat::gecko: write_gecko(profile, out); return;
    case ExportFormat::pprof: write_pprof(profile, out); return;
    case ExportFormat::json: write_profile_json(profile, out); return;
    case ExportFormat::svg: write_flame_graph_svg(profile, out); return;
  }
}

}  // namespace perfscope
