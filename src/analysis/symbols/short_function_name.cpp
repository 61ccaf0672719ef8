#include "analysis/symbols/short_function_name.hpp"

#include <array>

namespace perfscope {

namespace {

constexpr std::string_view operator_keyword = "operator";

// The symbolic operators, longest first so that "<<=" is not taken for "<".
constexpr std::array<std::string_view, 39> symbolic_operators = {
    "->*", "<=>", "<<=", ">>=", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=",
    "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "+",
    "-",   "*",   "/",   "%",   "^",  "&",  "|",  "~",  "!",  "=",  "<",  ">",  ","};

// libiberty's special names, which it prints whole (parameters and all) without DMGL_PARAMS too.
constexpr std::array<std::string_view, 17> special_name_prefixes = {"non-virtual thunk to ",
                                                                    "virtual thunk to ",
                                                                    "covariant return thunk to ",
                                                                    "transaction clone for ",
                                                                    "non-transaction clone for ",
                                                                    "vtable for ",
                                                                    "VTT for ",
                                                                    "construction vtable for ",
                                                                    "typeinfo for ",
                                                                    "typeinfo name for ",
                                                                    "typeinfo fn for ",
                                                                    "guard variable for ",
                                                                    "TLS init function for ",
                                                                    "TLS wrapper function for ",
                                                                    "reference temporary #",
                                                                    "hidden alias for ",
                                                                    "java Class for "};

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Drops " [clone .isra.0]" suffixes and the qualifiers written after a parameter list.
std::string_view without_suffixes(std::string_view name) {
  constexpr std::array<std::string_view, 6> qualifiers = {
      " const", " volatile", " &&", " &", " noexcept", " transaction_safe"};
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

// Whether "operator" starts at `at` as the keyword (not inside "my_operator").
bool operator_keyword_at(std::string_view text, std::size_t at) {
  return text.compare(at, operator_keyword.size(), operator_keyword) == 0 &&
         (at == 0 || !identifier_char(text[at - 1])) &&
         (at + operator_keyword.size() >= text.size() ||
          !identifier_char(text[at + operator_keyword.size()]));
}

// Past the operator named at `at` (the keyword's start): a symbolic operator ("operator<<",
// and libiberty's space before template arguments that follow one: "operator< <int>"), new and
// delete ("operator new[]"), a literal operator ("operator\"\" _w"). npos for a conversion
// operator ("operator long long", "operator void (X::*)()"): its type runs to the parameters.
std::size_t past_operator(std::string_view text, std::size_t at) {
  std::size_t i = at + operator_keyword.size();
  for (std::string_view symbol : symbolic_operators) {
    if (text.compare(i, symbol.size(), symbol) == 0) {
      i += symbol.size();
      if (text.compare(i, 2, " <") == 0) ++i;
      return i;
    }
  }
  if (text.compare(i, 3, "\"\" ") == 0) {  // a literal operator: "operator\"\" _w"
    i += 3;
    while (i < text.size() && identifier_char(text[i])) ++i;
    return i;
  }
  if (i >= text.size() || text[i] != ' ') return i;
  ++i;
  for (std::string_view word : {std::string_view("new"), std::string_view("delete")}) {
    if (text.compare(i, word.size(), word) == 0 &&
        (i + word.size() >= text.size() || !identifier_char(text[i + word.size()]))) {
      i += word.size();
      if (text.compare(i, 2, "[]") == 0) i += 2;
      return i;
    }
  }
  if (text.compare(i, 8, "co_await") == 0) return i + 8;
  return std::string_view::npos;
}

// The parameter list's "(" of a name ending in ")": the group at the end, matched backwards.
// npos when there is none: unbalanced, or the "()" of "operator()" itself (a short name).
std::size_t parameter_list_start(std::string_view name) {
  int depth = 0;
  std::size_t open = name.size();
  while (open > 0) {
    char c = name[--open];
    if (c == ')') ++depth;
    if (c == '(' && --depth == 0) break;
  }
  if (depth != 0 || open == 0) return std::string_view::npos;
  if (name.substr(0, open).ends_with(operator_keyword) &&
      open + 2 == name.size()) {  // "X::operator()" (short already)
    return std::string_view::npos;
  }
  return open;
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
  for (std::string_view prefix : special_name_prefixes) {
    if (demangled.starts_with(prefix)) return demangled;
  }
  std::string_view name = without_suffixes(demangled);
  std::string_view head = name;
  if (name.ends_with(')')) {
    std::size_t open = parameter_list_start(name);
    if (open == std::string_view::npos) return name;
    head = name.substr(0, open);
  }
  // A return type (templates have one) ends at the last space outside <>, (), [] and {}; the
  // spaces of operator names ("operator new", "operator long long") belong to the name.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == 'o' && operator_keyword_at(head, i)) {
      std::size_t after = past_operator(head, i);
      if (after == std::string_view::npos) {
        if (depth == 0) break;  // a conversion operator: its type is the rest of the name
        i += operator_keyword.size();
        continue;
      }
      i = after - 1;
      continue;
    }
    char c = head[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == ' ' && depth == 0) {
      start = i + 1;
    }
  }
  std::string_view result = head.substr(start);
  return result.empty() ? name : result;
}

}  // namespace perfscope
