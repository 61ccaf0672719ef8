// Writers of a Profile in the formats other tools open. Each writes to a stream and throws
// std::runtime_error only when the stream fails.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

#include "perfscope/analysis/profile/profile_builder.hpp"

namespace perfscope {

enum class ExportFormat { folded, speedscope, gecko, pprof, json, svg };

// "folded", "speedscope", "gecko", "pprof", "json", "svg"; nullopt for anything else.
std::optional<ExportFormat> parse_export_format(std::string_view name) noexcept;
std::string_view export_format_name(ExportFormat format) noexcept;

// Brendan Gregg's folded stacks (FlameGraph / inferno input): "comm;caller;...;leaf count" per
// distinct stack, weighted by sample count; with samples of several events, each line starts
// with its "[event]" (counts of different events do not add up).
void write_folded(const Profile& profile, std::ostream& out);
// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one sampled
// profile per thread and event.
void write_speedscope(const Profile& profile, std::ostream& out);
// The Gecko profile format the Firefox Profiler imports (format version 27): one process profile
// per process with its libraries (the recorded mappings), one thread per thread and event, each
// with its sample, stack, frame and string tables; frames presymbolicated; dated by the
// recording's wall clock when it has one.
void write_gecko(const Profile& profile, std::ostream& out);
// pprof's profile.proto, gzipped (go tool pprof reads it), with the recorded mappings and, when
// the recording has a wall clock, time_nanos.
void write_pprof(const Profile& profile, std::ostream& out);
// perfscope's own aggregated-profile JSON (schema in docs/PROFILE_JSON.md, versioned).
void write_profile_json(const Profile& profile, std::ostream& out);
// A self-contained interactive flame graph (SVG with embedded script: search, zoom).
void write_flame_graph_svg(const Profile& profile, std::ostream& out);

void write_profile(const Profile& profile, ExportFormat format, std::ostream& out);

// Whether `format` needs each sample (ProfileOptions::keep_samples): speedscope and gecko lay
// samples out in time. folded, json, svg and pprof take the folded sample groups too, so that
// their memory does not grow with the recording.
bool export_needs_each_sample(ExportFormat format) noexcept;

}  // namespace perfscope
