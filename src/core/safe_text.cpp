#include "perfscope/core/safe_text.hpp"

#include <cstdint>

namespace perfscope {

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t min_code = 0;
  if ((lead & 0xe0) == 0xc0) {
    length = 2;
    min_code = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3;
    min_code = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4;
    min_code = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  std::uint32_t code = lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(at + i) & 0x3f);
  }
  if (code < min_code || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

bool is_control(unsigned char c) noexcept { return c < 0x20 || c == 0x7f; }

// A two-byte sequence C2 80..C2 9F encodes a C1 control (U+0080..U+009F).
bool is_c1_control(std::string_view text, std::size_t at, std::size_t length) noexcept {
  return length == 2 && static_cast<unsigned char>(text[at]) == 0xc2 &&
         static_cast<unsigned char>(text[at + 1]) < 0xa0;
}

}  // namespace

bool is_terminal_safe(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (is_control(c)) return false;
      ++i;
      continue;
    }
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0 || is_c1_control(text, i, length)) return false;
    i += length;
  }
  return true;
}

void append_terminal_safe(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : utf8_sequence_length(text, i);
    if (length == 0 || (length == 1 && is_control(c))) {
      out += "\\x";
      out += hex_digits[c >> 4];
      out += hex_digits[c & 0xf];
      ++i;
    } else if (is_c1_control(text, i, length)) {
      auto code = static_cast<unsigned char>(text[i + 1]);
      out += "\\u00";
      out += hex_digits[code >> 4];
      out += hex_digits[code & 0xf];
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_terminal_safe(out, text);
  return out;
}

std::string terminal_safe_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find_first_of("\n\t", start);
    append_terminal_safe(out, text.substr(start, end - start));
    if (end == std::string_view::npos) return out;
    out += text[end];
    start = end + 1;
  }
}

void append_valid_utf8(std::string& out, std::string_view text, std::string_view replacement) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out.append(replacement);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_valid_utf8(out, text);
  return out;
}

std::string csv_field(std::string_view text, std::string_view separator) {
  std::string safe = terminal_safe(text);
  // After terminal escaping no CR or LF is left; a separator or quote still needs the quotes.
  bool quote = safe.find('"') != std::string::npos ||
               (!separator.empty() && safe.find(separator) != std::string::npos);
  if (!quote) return safe;
  std::string out = "\"";
  for (char c : safe) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string folded_safe(std::string_view text) {
  std::string out = terminal_safe(text);
  for (char& c : out) {
    if (c == ';') c = ':';
  }
  return out;
}

}  // namespace perfscope
