#include "help_formatter.hpp"

#include <sstream>

namespace perfscope::cli {

std::string value_label(const std::string& type) {
  std::string label;
  std::size_t start = 0;
  bool first = true;
  while (start <= type.size()) {
    std::size_t end = type.find(':', start);
    if (end == std::string::npos) end = type.size();
    std::string part = type.substr(start, end - start);
    start = end + 1;
    if (first) {
      first = false;
      if (part == "INT" || part == "UINT" || part == "FLOAT" || part == "NUMBER") {
        label = "N";
      } else {
        label = part;
      }
      continue;
    }
    // A set of choices or a file kind says more than the base type; ranges and POSITIVE are in
    // the descriptions.
    if (part.starts_with('{') || part == "FILE" || part == "DIR" || part == "PATH") label = part;
  }
  return label;
}

std::string HelpFormatter::make_option_name(const CLI::Option* option, bool is_positional) const {
  if (is_positional) return option->get_name(true, false);
  // Every name, without the default values CLI11 appends to a flag's ("--no-children{false}").
  std::string names;
  for (const std::string& name : option->get_snames()) names += (names.empty() ? "-" : ",-") + name;
  for (const std::string& name : option->get_lnames()) {
    names += (names.empty() ? "--" : ",--") + name;
  }
  return names;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  if (!option->get_option_text().empty()) return " " + option->get_option_text();
  std::ostringstream out;
  if (option->get_type_size() != 0) {
    if (!option->get_type_name().empty()) out << " " << value_label(option->get_type_name());
    if (!option->get_default_str().empty()) out << "=" << option->get_default_str();
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) {
      out << " ...";
    } else if (option->get_expected_min() > 1) {
      out << " x " << option->get_expected();
    }
    if (option->get_required()) out << " " << get_label("REQUIRED");
  }
  return out.str();
}

}  // namespace perfscope::cli
