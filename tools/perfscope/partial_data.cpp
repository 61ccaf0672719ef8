#include "partial_data.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "perfscope/core/safe_text.hpp"

namespace perfscope::cli {

void print_partial_data_warning(const std::string& warning) {
  if (warning.empty()) return;
  std::fflush(stdout);  // after the output it qualifies
  fmt::print(stderr, "perfscope: warning: {}\n", terminal_safe_lines(warning));
}

void print_partial_data_warning(const PerfDataReader& reader, const PerfDataError& error) {
  print_partial_data_warning(partial_data_warning(reader, error));
}

}  // namespace perfscope::cli
