// perf's commands that perfscope does not have: each answers with what perf does there and what
// perfscope offers instead, never "is not a perfscope command" for a name perf has.
#pragma once

#include <optional>
#include <string_view>

namespace perfscope::cli {

// The sentence for perf command `name`; nullopt when perf has no such command or perfscope has it.
std::optional<std::string_view> perf_command_elsewhere(std::string_view name);

}  // namespace perfscope::cli
