// PERFSCOPE_EXPORT marks the public API. libperfscope is compiled with hidden visibility (see
// CMakeLists.txt), so libperfscope.so exports what carries this mark and nothing else: no fmt, no
// private helpers. The static library is built from the same objects; the mark changes nothing
// there. GCC and clang, the compilers perfscope supports, both take the attribute.
#pragma once

#define PERFSCOPE_EXPORT __attribute__((visibility("default")))
