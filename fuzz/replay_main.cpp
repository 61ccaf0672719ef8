// Runs a fuzz target's entry point on saved inputs, without libFuzzer: the regression tests of
// every build (gcc included, where libFuzzer does not exist). Arguments are files or directories
// (their regular files, in name order); a missing directory is an error, so a renamed corpus is
// not silently skipped. An input that crashes, aborts or trips a sanitizer fails the test, and the
// input being run is printed first so that the failure names it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A private copy of exactly the input's size, as libFuzzer gives: an overread is caught.
  std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
  static std::uint8_t empty = 0;  // libFuzzer never passes a null pointer, even for no bytes
  LLVMFuzzerTestOneInput(input.empty() ? &empty : input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path argument(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(argument, error)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(argument, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        if (!run_file(file)) return 1;
        ++runs;
      }
    } else if (std::filesystem::is_regular_file(argument, error)) {
      if (!run_file(argument)) return 1;
      ++runs;
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 1;
    }
  }
  std::fprintf(stderr, "replay: %zu inputs ran cleanly\n", runs);
  return 0;
}
