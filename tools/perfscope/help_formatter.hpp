// perfscope's help text: CLI11's layout without its parser's leftovers. An option shows the
// value it takes as one word (N, FILE, TEXT, a set {a,b}), never CLI11's type and validator
// chain ("INT:INT in [1 - 3600]", "TEXT:FILE"), a flag's default ("{false}") or the options it
// needs or excludes (the descriptions say so in words).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace perfscope::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* option) const override;
};

// The one word for a value of CLI11's type name `type` ("INT:INT in [1 - 3600]" is N,
// "TEXT:FILE" is FILE, "TEXT:{pyroscope,parca}" is {pyroscope,parca}).
std::string value_label(const std::string& type);

}  // namespace perfscope::cli
