// perf probe's argument syntax: "[NAME=]VAR[->F|.F|[N]]...[:TYPE]" and raw fetch arguments.
#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "perfscope/analysis/trace/probe_arguments.hpp"

namespace perfscope {

namespace {

bool is_c_name(std::string_view text) {
  return !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
}

}  // namespace

bool ProbeArgument::is_c_variable() const { return is_c_name(variable); }

std::string ProbeArgument::text() const {
  std::string out = name.empty() ? std::string() : name + "=";
  out += variable;
  for (const Field& field : fields) {
    out += field.index ? field.name : (field.arrow ? "->" : ".") + field.name;
  }
  if (!type.empty()) out += ":" + type;
  return out;
}

ProbeArgument parse_probe_argument(const std::string& text) {
  ProbeArgument argument;
  std::string rest = text;
  if (std::size_t equals = rest.find('='); equals != std::string::npos) {
    argument.name = rest.substr(0, equals);
    rest.erase(0, equals + 1);
  }
  if (rest.ends_with("@user")) {
    throw std::invalid_argument(fmt::format(
        "'{}': @user (user-space access from a kprobe) is for kernel probes, which take no "
        "arguments by name in perfscope yet",
        text));
  }
  if (std::size_t colon = rest.find(':'); colon != std::string::npos) {
    argument.type = rest.substr(colon + 1);
    rest.resize(colon);
  }
  std::size_t at = rest.find_first_of("-.[");
  if (!is_c_name(rest) || at == std::string::npos) {
    argument.variable = rest;
    if (argument.variable.empty()) {
      throw std::invalid_argument(fmt::format("'{}': the argument names nothing", text));
    }
    return argument;
  }
  argument.variable = rest.substr(0, at);
  std::string last_name = argument.variable;
  while (at < rest.size()) {
    ProbeArgument::Field field;
    if (rest[at] == '[') {
      std::size_t close = rest.find(']', at);
      char* end = nullptr;
      field.position = std::strtoll(rest.c_str() + at + 1, &end, 0);
      if (close == std::string::npos || end != rest.c_str() + close || close == at + 1) {
        throw std::invalid_argument(fmt::format("'{}': Array index must be a number.", text));
      }
      field.index = true;
      field.name = rest.substr(at, close + 1 - at);
      argument.fields.push_back(field);
      at = close + 1;
      continue;
    }
    if (rest[at] == '.') {
      at += 1;
    } else if (rest.compare(at, 2, "->") == 0) {
      field.arrow = true;
      at += 2;
    } else {
      throw std::invalid_argument(fmt::format("Argument parse error: {}", text));
    }
    std::size_t end = rest.find_first_of("-.[", at);
    field.name = rest.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (field.name.empty())
      throw std::invalid_argument(fmt::format("Argument parse error: {}", text));
    last_name = field.name;
    argument.fields.push_back(field);
    at = end == std::string::npos ? rest.size() : end;
  }
  if (argument.name.empty()) argument.name = last_name;
  return argument;
}

}  // namespace perfscope
