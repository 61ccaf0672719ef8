#include "analysis/symbols/short_function_name.hpp"

#include <array>

namespace perfscope {

namespace {

constexpr std::string_view operator_keyword = "operator";

bool is_operator_symbol(char c) {
  constexpr std::string_view symbols = "<>=!+-*/%^&|~[](),";
  return symbols.find(c) != std::string_view::npos;
}

// Drops " [clone .isra.0]" suffixes and the qualifiers written after a parameter list.
std::string_view without_suffixes(std::string_view name) {
  constexpr std::array<std::string_view, 5> qualifiers = {" const", " volatile", " &&", " &",
                                                          " noexcept"};
  for (bool stripped = true; stripped;) {
    stripped = false;
    if (name.ends_with(']')) {
      auto clone = name.rfind(" [clone ");
      if (clone != std::string_view::npos) {
        name = name.substr(0, clone);
        stripped = true;
      }
    }
    for (std::string_view qualifier : qualifiers) {
      if (name.ends_with(qualifier)) {
        name.remove_suffix(qualifier.size());
        stripped = true;
      }
    }
  }
  return name;
}

}  // namespace

std::string_view without_symbol_version(std::string_view name) noexcept {
  auto at = name.find('@');
  if (at == 0 || at == std::string_view::npos) return name;
  std::string_view version = name.substr(at + 1);
  if (version.starts_with('@')) version.remove_prefix(1);
  // A version is one word ("GLIBC_2.34"); "@plt" is perfscope's own suffix, kept.
  if (version.empty() || version == "plt" ||
      version.find_first_of("@ ()<>:") != std::string_view::npos) {
    return name;
  }
  return name.substr(0, at);
}

std::string_view short_function_name(std::string_view demangled) noexcept {
  std::string_view name = without_suffixes(demangled);
  if (!name.ends_with(')')) return name;
  // The parameter list: the parenthesis group at the end, matched backwards.
  int depth = 0;
  std::size_t open = name.size();
  while (open > 0) {
    char c = name[--open];
    if (c == ')') ++depth;
    if (c == '(' && --depth == 0) break;
  }
  if (depth != 0 || open == 0) return demangled;  // unbalanced: not a name this can shorten
  std::string_view head = name.substr(0, open);
  // A return type (templates have one) ends at the last space outside <> and (); the spaces of
  // "operator new" or "operator delete[]" belong to the name.
  int angles = 0, parentheses = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head.compare(i, operator_keyword.size(), operator_keyword) == 0) {
      i += operator_keyword.size();
      while (i < head.size() && is_operator_symbol(head[i])) ++i;
      if (i >= head.size()) break;
      if (head[i] != ' ') continue;
      // "operator new": the space is part of the name.
      continue;
    }
    char c = head[i];
    if (c == '<') {
      ++angles;
    } else if (c == '>') {
      if (angles > 0) --angles;
    } else if (c == '(') {
      ++parentheses;
    } else if (c == ')') {
      if (parentheses > 0) --parentheses;
    } else if (c == ' ' && angles == 0 && parentheses == 0) {
      start = i + 1;
    }
  }
  std::string_view result = head.substr(start);
  return result.empty() ? demangled : result;
}

}  // namespace perfscope
