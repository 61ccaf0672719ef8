// What this perfscope was built with, under perf's feature names: `version --build-options` and
// `check feature` answer in perf's layout, so that scripts that ask perf ask perfscope alike.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace perfscope::cli {

struct BuildFeature {
  std::string_view name;   // perf's name ("dwarf-unwind")
  std::string_view macro;  // perf's build macro ("HAVE_DWARF_UNWIND_SUPPORT")
  bool on = false;         // what perfscope can do that perf's feature gives perf
};

// perf 6.17's list, in its order.
std::span<const BuildFeature> build_features();
// By name or macro, any case (perf's strcasecmp).
std::optional<BuildFeature> find_build_feature(std::string_view name_or_macro);
// "                 dwarf: [ on  ]  # HAVE_LIBDW_SUPPORT\n"
std::string build_feature_line(const BuildFeature& feature);

}  // namespace perfscope::cli
