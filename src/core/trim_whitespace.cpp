#include "perfscope/core/trim_whitespace.hpp"

namespace perfscope {

std::string trim_whitespace(std::string_view text) {
  constexpr std::string_view whitespace = " \t\r\n";
  auto begin = text.find_first_not_of(whitespace);
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(whitespace);
  return std::string(text.substr(begin, end - begin + 1));
}

}  // namespace perfscope
