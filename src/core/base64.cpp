#include "perfscope/core/base64.hpp"

#include <cstdint>

namespace perfscope {

std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                      static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                      static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
    out.push_back(alphabet[v & 63]);
  }
  std::size_t left = bytes.size() - i;
  if (left > 0) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (left == 2) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out.push_back(alphabet[v >> 18]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(left == 2 ? alphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace perfscope
