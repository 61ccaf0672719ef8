// Naming functions on annotate's command line: which sampled functions a name means, and for a
// name that means none, whether the function exists without samples or which names are close.
#pragma once

#include <string>
#include <string_view>

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {

// Whether `asked` names the function shown as `shown`: the same, or the same once parameter
// lists and return types are dropped from either.
bool symbol_names_match(std::string_view shown, std::string_view asked);

// Why nothing matched `asked`: "NAME has no samples: it is in FILE, ..." when a file the
// recording sampled defines it, else "no function NAME ..." with up to five close names (from
// the sampled functions and the symbol tables of the sampled files).
std::string explain_unknown_symbol(const Profile& profile, std::string_view asked,
                                   const std::string& debug_root);

}  // namespace perfscope
