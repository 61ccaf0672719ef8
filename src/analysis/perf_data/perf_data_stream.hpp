// Input that cannot be mapped: a pipe, a FIFO or a device read as it comes, and paths that are
// no recording at all (a directory), refused before anything is read.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace perfscope {

// The bytes of `file` to its end; stops after the first eight when they are not perf.data's
// magic (an endless /dev/zero), leaving parse() to say what is wrong. Throws Error on a read
// error.
std::vector<std::byte> read_perf_data_stream(std::FILE* file, const std::string& path);

// Opens `path` and reads it as above into `bytes`; 0, or -errno when it cannot be opened.
int read_perf_data_path(const std::string& path, std::vector<std::byte>& bytes);

// Throws Error (EISDIR) with the hint "-i DIR/perf.data" when `path` is a directory.
void refuse_directory(const std::string& path);

}  // namespace perfscope
