#include "analysis/symbols/demangler.hpp"

// libiberty.h declares basename() unless told the C library has it (glibc's <string.h> does,
// with another signature).
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

#include <cstdlib>
#include <memory>

namespace perfscope {

bool looks_mangled(std::string_view name) noexcept {
  return name.size() > 2 && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

std::string demangle_symbol(const char* name, DemangledForm form) {
  if (!looks_mangled(name)) return {};
  // perf's flags: none by default, DMGL_PARAMS | DMGL_ANSI under -v. The style is libiberty's
  // automatic one: Rust first (legacy Rust names are Itanium-shaped), then C++.
  int options = form == DemangledForm::full ? DMGL_PARAMS | DMGL_ANSI : DMGL_NO_OPTS;
  std::unique_ptr<char, decltype(&std::free)> out(::cplus_demangle(name, options), &std::free);
  return out ? std::string(out.get()) : std::string();
}

}  // namespace perfscope
