// Names of mangled symbols as perf shows them: libiberty's demangler, the one perf itself links,
// for C++ (Itanium ABI) and Rust (legacy and v0) alike. LLVM's demangler spells some C++ names
// otherwise ("'lambda'()" for "{lambda()#1}", ">>" for "> >") and has no legacy Rust.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace perfscope {

enum class DemangledForm : std::uint8_t {
  // perf's default: no parameter lists, return types or clone suffixes ("X::f",
  // "Big::operator long long", "std::operator+<char, std::char_traits<char>, std::allocator<char>
  // >"); a thunk keeps its target's parameters ("non-virtual thunk to X::f(long)").
  short_name,
  // perf -v: all of it ("X::f(int) const", "f() [clone .cold]").
  full,
};

// Whether `name` is spelled as a mangled C++ or Rust name ("_Z...", "_R...").
bool looks_mangled(std::string_view name) noexcept;
// `name` demangled in `form`; empty when it is not a mangled name.
std::string demangle_symbol(const char* name, DemangledForm form = DemangledForm::full);

}  // namespace perfscope
