// PERF_SAMPLE_DATA_SRC bitfields (union perf_mem_data_src), as shifts and widths.
#pragma once

#include <cstdint>

namespace perfscope::abi {

struct BitField {
  unsigned shift;
  unsigned width;
  constexpr std::uint64_t get(std::uint64_t word) const {
    return (word >> shift) & ((width >= 64 ? ~0ULL : ((1ULL << width) - 1)));
  }
};

namespace data_source {
inline constexpr BitField op{0, 5};
inline constexpr BitField level{5, 14};
inline constexpr BitField snoop{19, 5};
inline constexpr BitField lock{24, 2};
inline constexpr BitField dtlb{26, 7};
inline constexpr BitField level_number{33, 4};
inline constexpr BitField remote{37, 1};
inline constexpr BitField snoopx{38, 2};
inline constexpr BitField block{40, 3};
inline constexpr BitField hops{43, 3};

namespace op_bits {
inline constexpr std::uint64_t na = 0x01, load = 0x02, store = 0x04, pfetch = 0x08, exec = 0x10;
}
namespace level_bits {
inline constexpr std::uint64_t na = 0x01, hit = 0x02, miss = 0x04, l1 = 0x08, lfb = 0x10, l2 = 0x20,
                               l3 = 0x40, loc_ram = 0x80, rem_ram1 = 0x100, rem_ram2 = 0x200,
                               rem_cce1 = 0x400, rem_cce2 = 0x800, io = 0x1000, unc = 0x2000;
}
namespace level_number_values {
inline constexpr std::uint64_t l1 = 1, l2 = 2, l3 = 3, l4 = 4, l2_mhb = 5, msc = 6, unc = 8,
                               cxl = 9, io = 0xa, any_cache = 0xb, lfb = 0xc, ram = 0xd, pmem = 0xe,
                               na = 0xf;
}
namespace snoop_bits {
inline constexpr std::uint64_t na = 0x01, none = 0x02, hit = 0x04, miss = 0x08, hitm = 0x10;
}
namespace snoopx_bits {
inline constexpr std::uint64_t fwd = 0x01, peer = 0x02;
}
namespace lock_bits {
inline constexpr std::uint64_t na = 0x01, locked = 0x02;
}
namespace dtlb_bits {
inline constexpr std::uint64_t na = 0x01, hit = 0x02, miss = 0x04, l1 = 0x08, l2 = 0x10,
                               walker = 0x20, os = 0x40;
}
namespace block_bits {
inline constexpr std::uint64_t na = 0x01, data = 0x02, addr = 0x04;
}
namespace hops_values {
inline constexpr std::uint64_t none = 0, core = 1, node = 2, socket = 3, board = 4;
}
}  // namespace data_source

}  // namespace perfscope::abi
