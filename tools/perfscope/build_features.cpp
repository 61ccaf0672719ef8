#include "build_features.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <array>

namespace perfscope::cli {

namespace {

constexpr bool libpfm_built =
#ifdef PERFSCOPE_HAVE_LIBPFM
    true;
#else
    false;
#endif

// "on" where perfscope does what the feature lets perf do: libdw's DWARF reading and unwinding,
// libelf, libtraceevent's tracepoint payloads, embedded Python (script -s), zlib, zstd
// (compressed records) and lzma (MiniDebugInfo), LLVM (disassembly, demangling), libpfm4 when
// it was found at build time. Off: what perfscope has no part of (BPF, AUX-area decoding, AIO
// writing, debuginfod, NUMA placement, Perl, the slang TUI) or does with another library than
// the one the name says (libunwind, libbfd, capstone: perfscope uses libdw and LLVM for those).
constexpr std::array features{
    BuildFeature{"aio", "HAVE_AIO_SUPPORT", false},
    BuildFeature{"bpf", "HAVE_LIBBPF_SUPPORT", false},
    BuildFeature{"bpf_skeletons", "HAVE_BPF_SKEL", false},
    BuildFeature{"debuginfod", "HAVE_DEBUGINFOD_SUPPORT", false},
    BuildFeature{"dwarf", "HAVE_LIBDW_SUPPORT", true},
    BuildFeature{"dwarf_getlocations", "HAVE_LIBDW_SUPPORT", true},
    BuildFeature{"dwarf-unwind", "HAVE_DWARF_UNWIND_SUPPORT", true},
    BuildFeature{"auxtrace", "HAVE_AUXTRACE_SUPPORT", false},
    BuildFeature{"libbfd", "HAVE_LIBBFD_SUPPORT", false},
    BuildFeature{"libbpf-strings", "HAVE_LIBBPF_STRINGS_SUPPORT", false},
    BuildFeature{"libcapstone", "HAVE_LIBCAPSTONE_SUPPORT", false},
    BuildFeature{"libdw-dwarf-unwind", "HAVE_LIBDW_SUPPORT", true},
    BuildFeature{"libelf", "HAVE_LIBELF_SUPPORT", true},
    BuildFeature{"libLLVM", "HAVE_LIBLLVM_SUPPORT", true},
    BuildFeature{"libnuma", "HAVE_LIBNUMA_SUPPORT", false},
    BuildFeature{"libopencsd", "HAVE_CSTRACE_SUPPORT", false},
    BuildFeature{"libperl", "HAVE_LIBPERL_SUPPORT", false},
    BuildFeature{"libpfm4", "HAVE_LIBPFM", libpfm_built},
    BuildFeature{"libpython", "HAVE_LIBPYTHON_SUPPORT", true},
    BuildFeature{"libslang", "HAVE_SLANG_SUPPORT", false},
    BuildFeature{"libtraceevent", "HAVE_LIBTRACEEVENT", true},
    BuildFeature{"libunwind", "HAVE_LIBUNWIND_SUPPORT", false},
    BuildFeature{"lzma", "HAVE_LZMA_SUPPORT", true},
    BuildFeature{"numa_num_possible_cpus", "HAVE_LIBNUMA_SUPPORT", false},
    BuildFeature{"zlib", "HAVE_ZLIB_SUPPORT", true},
    BuildFeature{"zstd", "HAVE_ZSTD_SUPPORT", true},
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::span<const BuildFeature> build_features() { return features; }

std::optional<BuildFeature> find_build_feature(std::string_view name_or_macro) {
  for (const BuildFeature& feature : features) {
    if (same_ignoring_case(name_or_macro, feature.name) ||
        same_ignoring_case(name_or_macro, feature.macro)) {
      return feature;
    }
  }
  return std::nullopt;
}

std::string build_feature_line(const BuildFeature& feature) {
  return fmt::format("{:>22}: [ {:<3} ]  # {}\n", feature.name, feature.on ? "on" : "OFF",
                     feature.macro);
}

}  // namespace perfscope::cli
