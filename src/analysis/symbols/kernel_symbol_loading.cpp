#include "analysis/symbols/kernel_symbol_loading.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "analysis/symbols/vmlinux_symbols.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/kallsyms_cache.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

std::shared_ptr<SharedKernelSymbols> make_shared_kernel_symbols() {
  return std::make_shared<SharedKernelSymbols>();
}

namespace detail {

void KernelState::load(const KernelSource& source) noexcept {
  if (!shared) {
    data = read(source);
    return;
  }
  try {
    std::call_once(shared->once, [&] { shared->loaded = read(source); });
    data = shared->loaded;
  } catch (const std::system_error&) {
    data = read(source);
  }
}

std::shared_ptr<const LoadedKernel> KernelState::read(const KernelSource& source) noexcept {
  auto kernel = std::make_shared<LoadedKernel>();
  try {
    if (!source.vmlinux_path.empty()) {
      read_vmlinux(source, *kernel);
      return kernel;
    }
    if (source.search_vmlinux && find_vmlinux(source, *kernel)) return kernel;
    if (read_cached_copy(source, *kernel)) return kernel;
    read_symbols(source.kallsyms_path, *kernel);
    std::uint64_t running = kernel->symbols.reference_address();
    if (kernel->problem.empty() && source.reference_address != 0 && running != 0 &&
        running != source.reference_address) {
      kernel->note = fmt::format(
          "kernel symbols may be wrong: the recording's kernel had _text at {:#x}, {} has it "
          "at {:#x} (recorded on another boot or machine, and no copy of its kallsyms in the "
          "build-id cache{})",
          source.reference_address, source.kallsyms_path, running,
          source.build_id.empty()
              ? std::string()
              : fmt::format(" at {}", kallsyms_cache_path(cache_dir_of(source), source.build_id)));
    }
  } catch (const std::bad_alloc&) {
    kernel->symbols = KernelSymbols();
    kernel->problem = "out of memory reading kernel symbols";
  }
  return kernel;
}

std::string KernelState::cache_dir_of(const KernelSource& source) {
  return source.cache_dir.empty() ? default_build_id_cache_dir() : source.cache_dir;
}

bool KernelState::read_cached_copy(const KernelSource& source, LoadedKernel& kernel) {
  if (source.build_id.empty()) return false;
  std::vector<std::string> paths = source.archived_copies;
  paths.push_back(kallsyms_cache_path(cache_dir_of(source), source.build_id));
  for (const std::string& path : paths) {
    sys::MemoryMap copy;
    if (path.empty() || copy.map_file(path.c_str()) != 0) continue;
    kernel.symbols.parse(std::string_view(static_cast<const char*>(copy.data()), copy.size()));
    if (!kernel.symbols.addresses_hidden() && !kernel.symbols.empty() &&
        (source.reference_address == 0 ||
         kernel.symbols.reference_address() == source.reference_address)) {
      kernel.read = true;
      return true;
    }
    kernel.symbols = KernelSymbols();
  }
  return false;
}

void KernelState::read_symbols(const std::string& path, LoadedKernel& kernel) {
  auto text = sys::read_text_file(path);
  if (!text) {
    kernel.problem = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return;
  }
  kernel.read = true;
  kernel.symbols.parse(*text);
  if (kernel.symbols.addresses_hidden()) {
    kernel.problem = fmt::format(
        "kptr_restrict hides kernel addresses (every address in {} reads 0): run as root, "
        "or allow them with sysctl kernel.kptr_restrict=0",
        path);
  } else if (kernel.symbols.empty()) {
    kernel.problem = fmt::format("no kernel symbols in {}", path);
  }
}

void KernelState::read_vmlinux(const KernelSource& source, LoadedKernel& kernel) {
  VmlinuxSymbols image = read_vmlinux_symbols(source.vmlinux_path, source.reference_address);
  if (!image.problem.empty()) {
    kernel.problem = std::move(image.problem);
    return;
  }
  kernel.read = true;
  kernel.symbols = std::move(image.symbols);
  if (!source.build_id.empty() && !image.build_id.empty() && image.build_id != source.build_id) {
    kernel.note = fmt::format(
        "kernel symbols may be wrong: the vmlinux {} has build id {}, the recording's kernel {}",
        source.vmlinux_path, build_id_hex(image.build_id), build_id_hex(source.build_id));
  }
}

bool KernelState::find_vmlinux(const KernelSource& source, LoadedKernel& kernel) {
  // Without the recording's build id a found image could be of any kernel: perf's search is
  // only trusted where the build ids say it is the same kernel.
  if (source.build_id.empty()) return false;
  std::vector<std::string> candidates;
  for (const std::string& path : vmlinux_search_paths(source.release)) {
    if (!source.symfs.empty()) {
      candidates.push_back(source.symfs + (path.starts_with('/') ? "" : "/") + path);
    }
    candidates.push_back(path);
  }
  for (const std::string& path : candidates) {
    if (read_build_id(path).value_or(std::vector<std::uint8_t>()) != source.build_id) continue;
    VmlinuxSymbols image = read_vmlinux_symbols(path, source.reference_address);
    if (!image.problem.empty()) continue;
    kernel.read = true;
    kernel.symbols = std::move(image.symbols);
    return true;
  }
  return false;
}

}  // namespace detail

}  // namespace perfscope
