// Internal to the exporters: a buffered text sink over an ostream with the escaping JSON and XML
// need (invalid UTF-8 replaced by the rule of core/safe_text.hpp), and the names frames get in text
// formats. Every text exporter streams through it so that memory stays bounded by the buffer, not
// by the output.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/path_names.hpp"
#include "perfscope/analysis/profile/off_cpu_profile.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/core/safe_text.hpp"

namespace perfscope::export_detail {

// UTF-8 validity is decided in one place for every destination (core/safe_text.hpp).
using ::perfscope::utf8_sequence_length;

class TextSink {
 public:
  explicit TextSink(std::ostream& out) : out_(out) { text_.reserve(flush_at + 4096); }
  TextSink(const TextSink&) = delete;
  TextSink& operator=(const TextSink&) = delete;

  std::string& text() noexcept { return text_; }

  void put(char c) {
    text_.push_back(c);
    maybe_flush();
  }
  void append(std::string_view s) {
    text_.append(s);
    maybe_flush();
  }
  template <typename... Args>
  void format(fmt::format_string<Args...> pattern, Args&&... args) {
    fmt::format_to(std::back_inserter(text_), pattern, std::forward<Args>(args)...);
    maybe_flush();
  }

  // A quoted JSON string. Bytes that are not UTF-8 (symbol names are raw bytes from ELF files)
  // become U+FFFD so that every JSON parser accepts the output.
  void json_string(std::string_view s) {
    text_.push_back('"');
    utf8_escaped(s, "\xef\xbf\xbd", [this](unsigned char c) {
      switch (c) {
        case '"': text_.append("\\\""); break;
        case '\\': text_.append("\\\\"); break;
        case '\n': text_.append("\\n"); break;
        case '\t': text_.append("\\t"); break;
        case '\r': text_.append("\\r"); break;
        default:
          if (c < 0x20) {
            fmt::format_to(std::back_inserter(text_), "\\u{:04x}", c);
          } else {
            text_.push_back(static_cast<char>(c));
          }
      }
    });
    text_.push_back('"');
    maybe_flush();
  }

  // Text for XML content or a quoted attribute. Characters XML 1.0 forbids (controls, and
  // U+FFFE and U+FFFF: valid UTF-8 that a file name or comm may hold, on which a browser stops
  // drawing the whole SVG) and bytes that are not UTF-8 become '?'.
  void xml_text(std::string_view s) {
    utf8_escaped(
        s, "?",
        [this](unsigned char c) {
          switch (c) {
            case '&': text_.append("&amp;"); break;
            case '<': text_.append("&lt;"); break;
            case '>': text_.append("&gt;"); break;
            case '"': text_.append("&quot;"); break;
            case '\'': text_.append("&apos;"); break;
            default:
              text_.push_back(c < 0x20 && c != '\t' && c != '\n' ? '?' : static_cast<char>(c));
          }
        },
        [](std::string_view sequence) {
          return sequence == "\xef\xbf\xbe" || sequence == "\xef\xbf\xbf";
        });
    maybe_flush();
  }

 private:
  // Copies the valid UTF-8 sequences of `s` (but writes `invalid` for those `refused` names),
  // writes `invalid` for each byte that starts none, and hands every ASCII byte to `ascii` to
  // escape.
  template <typename Ascii>
  void utf8_escaped(std::string_view s, std::string_view invalid, Ascii&& ascii,
                    bool (*refused)(std::string_view) = nullptr) {
    for (std::size_t i = 0; i < s.size();) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        ascii(c);
        ++i;
        continue;
      }
      std::size_t length = utf8_sequence_length(s, i);
      if (length == 0) {
        text_.append(invalid);
        ++i;
      } else {
        std::string_view sequence = s.substr(i, length);
        text_.append(refused != nullptr && refused(sequence) ? invalid : sequence);
        i += length;
      }
    }
  }

 public:
  // Writes what is buffered and checks the stream; call once at the end.
  void finish() { flush(); }

 private:
  static constexpr std::size_t flush_at = 1 << 16;

  void maybe_flush() {
    if (text_.size() >= flush_at) flush();
  }
  void flush() {
    out_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
    if (!out_) {
      throw std::runtime_error(
          "writing the exported profile failed (disk full, or the output closed?)");
    }
  }

  std::ostream& out_;
  std::string text_;
};

using detail::file_name_of;

// A frame's name for people: the function, or for an unresolved address its DSO and the
// address in it ("[libc.so.6]+0x1139"), or "[unknown]".
inline std::string readable_frame_name(const Profile& profile, const ProfileFrame& frame) {
  const ProfileFunction& function = profile.functions[frame.function];
  if (function.resolved || function.dso == no_index) return function.name;
  std::string name = "[";
  name += detail::short_dso_name(profile.dsos[function.dso].path);
  name += "]+";
  name += function.name;
  return name;
}

// Visits the profile's samples as groups: each kept sample as a group of one, then the folded
// groups of a profile built with ProfileOptions::keep_samples false. Exporters that need no
// sample times read either kind of profile through this.
template <typename Visit>
void for_each_sample_group(const Profile& profile, Visit&& visit) {
  for (const ProfileSample& sample : profile.samples) {
    visit(ProfileSampleGroup{sample.stack, sample.thread, sample.event, sample.cpu, 1,
                             sample.period, sample.state});
  }
  for (const ProfileSampleGroup& group : profile.sample_groups) visit(group);
}

// How many of the profile's events have samples: with more than one, outputs that cannot hold
// several sample types keep them apart.
inline std::size_t events_with_samples(const Profile& profile) {
  std::vector<bool> seen(profile.events.size() + 1, false);
  std::size_t count = 0;
  for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    std::size_t event = std::min<std::size_t>(group.event, profile.events.size());
    if (!seen[event]) {
      seen[event] = true;
      ++count;
    }
  });
  return count;
}

// The unit of an event's periods: nanoseconds for the software clocks, off-CPU and wall time,
// event counts otherwise (off_cpu_profile.hpp holds the rule).
inline bool is_clock_event(std::string_view event_name) noexcept {
  return event_period_is_ns(event_name);
}

// True when some sample of the profile is an off-CPU one: the exporters then weigh time events
// by their nanoseconds, so that on- and off-CPU time compare.
inline bool has_off_cpu_samples(const Profile& profile) noexcept {
  return profile_has_off_cpu(profile);
}

// The profile's missing files as a JSON array of {"path","buildId","reason","detail"}: a viewer
// of an export made elsewhere can tell unresolved frames of a missing file from code without
// symbols.
inline void write_missing_files_json(const Profile& profile, TextSink& sink) {
  sink.put('[');
  bool first = true;
  for (const MissingSymbolFile& missing : profile.summary.missing_files) {
    sink.append(first ? "{\"path\":" : ",{\"path\":");
    first = false;
    sink.json_string(missing.path);
    sink.append(",\"buildId\":");
    sink.json_string(missing.build_id);
    sink.append(",\"reason\":");
    sink.json_string(missing.reason);
    sink.append(",\"detail\":");
    sink.json_string(missing.detail);
    sink.put('}');
  }
  sink.put(']');
}

}  // namespace perfscope::export_detail
