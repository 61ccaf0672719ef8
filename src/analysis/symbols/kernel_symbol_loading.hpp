// Kernel symbols for a symbolizer: where they come from (a kallsyms file, the copy of the
// recording's that the build-id cache or an archive holds) and what reading them gave, read once
// per symbolizer or once for several (SharedKernelSymbols).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "analysis/symbols/kernel_symbols.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace perfscope {

namespace detail {

// Where kernel symbols come from: SymbolizerOptions' kernel fields, copied for the loader thread.
struct KernelSource {
  std::string kallsyms_path;
  std::string cache_dir;
  std::vector<std::string> archived_copies;  // the lookup roots' copies, tried first
  std::vector<std::uint8_t> build_id;
  std::uint64_t reference_address = 0;
  std::string vmlinux_path;     // chosen by the user: read, whatever its build id
  bool search_vmlinux = false;  // look where perf looks for one of the recording's build id
  std::string release;          // the recording kernel's release, for the search paths
  std::string symfs;            // looked under first
};

// What a kallsyms file gave: read once per symbolizer, or once for several (SharedKernelSymbols).
struct LoadedKernel {
  bool read = false;  // a kallsyms file could be read
  KernelSymbols symbols;
  std::string problem;
  std::string note;  // a warning about the symbols used (of another boot or machine)
};

struct KernelState {
  bool loaded = false;
  std::shared_ptr<const LoadedKernel> data = std::make_shared<LoadedKernel>();
  std::shared_ptr<SharedKernelSymbols> shared;
  std::unordered_map<std::uint64_t, SymbolizedAddress> cache;
  // prefetch_kernel's: it fills `data`, and nothing else touches it until it is joined.
  std::thread loader;

  KernelState() = default;
  KernelState(const KernelState&) = delete;
  KernelState& operator=(const KernelState&) = delete;
  ~KernelState() {
    if (loader.joinable()) loader.join();
  }

  void load(const KernelSource& source) noexcept;
  static std::shared_ptr<const LoadedKernel> read(const KernelSource& source) noexcept;
  // The build-id cache the source names, else $HOME/.debug.
  static std::string cache_dir_of(const KernelSource& source);

 private:
  // The copy of kallsyms that the recording saved, when its _text is where the recording's was.
  static bool read_cached_copy(const KernelSource& source, LoadedKernel& kernel);
  static void read_symbols(const std::string& path, LoadedKernel& kernel);
  static void read_vmlinux(const KernelSource& source, LoadedKernel& kernel);
  // The first vmlinux of the recording's build id where perf looks; false when none.
  static bool find_vmlinux(const KernelSource& source, LoadedKernel& kernel);
};

}  // namespace detail

class SharedKernelSymbols {
 public:
  std::once_flag once;
  std::shared_ptr<const detail::LoadedKernel> loaded;
};

}  // namespace perfscope
