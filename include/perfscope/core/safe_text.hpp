// Names that come from the measured processes (comm, file paths of their mappings, symbols of
// their files, sysfs event names) made safe for where they are written. Any process names
// itself, so a name may hold terminal escape sequences, bytes that are not UTF-8, or the
// separators of an output format: these functions are the one place that decides what becomes
// of such bytes in each destination.
//
//   terminal  C0 controls (0x00-0x1f), DEL (0x7f) and bytes that start no well-formed UTF-8
//             sequence become \xHH (two lower-case hex digits); C1 controls encoded in UTF-8
//             (U+0080-U+009F) become \u0080-\u009f. Everything else, including valid UTF-8, is
//             kept. A name without such bytes comes out unchanged.
//   UTF-8     (JSON, XML, pprof, gecko, speedscope) each byte that starts no well-formed UTF-8
//             sequence becomes U+FFFD; the format's own escaping follows.
//   CSV       RFC 4180: a field with the separator, a double quote, CR or LF is quoted, its
//             quotes doubled; terminal escaping applies to the rest first.
//   folded    terminal escaping, and ';' (the frame separator) becomes ':' as FlameGraph's
//             stackcollapse scripts do; a newline is already \x0a.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace perfscope {

// The length of the well-formed UTF-8 sequence starting at text[at], or 0 when the bytes there
// are not one (a lone continuation byte, an overlong form, a surrogate, a truncated sequence).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept;

bool is_valid_utf8(std::string_view text) noexcept;

// True when terminal_safe(text) would change nothing: the fast path of the printers.
bool is_terminal_safe(std::string_view text) noexcept;

// Appends `text` with the terminal escaping above.
void append_terminal_safe(std::string& out, std::string_view text);
std::string terminal_safe(std::string_view text);

// Text of several lines that quotes names (an error message, a line of source code): the terminal
// escaping above, except that line feeds and tabs are kept as the layout.
std::string terminal_safe_lines(std::string_view text);

// Appends `text` with every byte that starts no well-formed sequence replaced by `replacement`.
void append_valid_utf8(std::string& out, std::string_view text,
                       std::string_view replacement = "\xef\xbf\xbd");
std::string valid_utf8(std::string_view text);

// One CSV field: terminal-safe, then quoted per RFC 4180 when it holds `separator`, '"', CR or LF.
std::string csv_field(std::string_view text, std::string_view separator = ",");

// A name inside a folded stack line: terminal-safe, with ';' made ':'.
std::string folded_safe(std::string_view text);

}  // namespace perfscope
