// The source of the targets that build the tests' precompiled headers (tests/CMakeLists.txt):
// CMake compiles the header set for a target, and a target needs a source of its own.
