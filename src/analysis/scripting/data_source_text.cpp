#include "data_source_text.hpp"

#include <array>
#include <string_view>

#include "perfscope/abi/data_source.hpp"

namespace perfscope {

namespace {

namespace ds = abi::data_source;

// One name per set bit, low bit first, joined with " or ".
void append_bits(std::string& out, std::uint64_t bits, const std::string_view* names,
                 std::size_t count, bool& any) {
  for (std::size_t i = 0; bits != 0 && i < count; ++i, bits >>= 1) {
    if ((bits & 1) == 0) continue;
    if (any) out += " or ";
    out += names[i];
    any = true;
  }
}

void append_op(std::string& out, std::uint64_t op) {
  namespace b = ds::op_bits;
  if ((op & b::na) != 0) {
    out += "N/A";
  } else if ((op & b::load) != 0) {
    out += "LOAD";
  } else if ((op & b::store) != 0) {
    out += "STORE";
  } else if ((op & b::pfetch) != 0) {
    out += "PFETCH";
  } else if ((op & b::exec) != 0) {
    out += "EXEC";
  } else {
    out += "No";
  }
}

void append_level(std::string& out, std::uint64_t source) {
  static constexpr std::array<std::string_view, 14> levels{"N/A",
                                                           "HIT",
                                                           "MISS",
                                                           "L1",
                                                           "LFB/MAB",
                                                           "L2",
                                                           "L3",
                                                           "Local RAM",
                                                           "Remote RAM (1 hop)",
                                                           "Remote RAM (2 hops)",
                                                           "Remote Cache (1 hop)",
                                                           "Remote Cache (2 hops)",
                                                           "I/O",
                                                           "Uncached"};
  static constexpr std::array<std::string_view, 5> hops{
      "N/A", "core, same node", "node, same socket", "socket, same board", "board"};
  namespace b = ds::level_bits;
  std::uint64_t level = ds::level.get(source);
  const bool hit = (level & b::hit) != 0, miss = (level & b::miss) != 0;
  level &= ~(b::hit | b::miss);
  std::size_t start = out.size();
  bool any = false;
  if (ds::remote.get(source) != 0) out += "Remote ";
  if (std::uint64_t hop = ds::hops.get(source); hop != 0) {
    out += hop < hops.size() ? hops[hop] : std::string_view("N/A");
    out += ' ';
  } else {
    append_bits(out, level, levels.data(), levels.size(), any);
  }
  if (std::uint64_t number = ds::level_number.get(source); number != 0) {
    if (any) out += " or ";
    any = true;
    namespace n = ds::level_number_values;
    switch (number) {
      case n::cxl: out += "CXL"; break;
      case n::io: out += "I/O"; break;
      case n::any_cache: out += "Any cache"; break;
      case n::lfb: out += "LFB/MAB"; break;
      case n::ram: out += "RAM"; break;
      case n::pmem: out += "PMEM"; break;
      case n::na: out += "N/A"; break;
      default: out += "L" + std::to_string(number); break;
    }
  }
  if (out.size() == start) out += "N/A";
  if (hit) out += " hit";
  if (miss) out += " miss";
}

void append_snoop(std::string& out, std::uint64_t source) {
  static constexpr std::array<std::string_view, 5> snoops{"N/A", "None", "Hit", "Miss", "HitM"};
  static constexpr std::array<std::string_view, 2> snoopx{"Fwd", "Peer"};
  bool any = false;
  append_bits(out, ds::snoop.get(source), snoops.data(), snoops.size(), any);
  append_bits(out, ds::snoopx.get(source), snoopx.data(), snoopx.size(), any);
  if (!any) out += "N/A";
}

void append_tlb(std::string& out, std::uint64_t source) {
  static constexpr std::array<std::string_view, 7> tlbs{"N/A", "HIT",    "MISS", "L1",
                                                        "L2",  "Walker", "Fault"};
  namespace b = ds::dtlb_bits;
  std::uint64_t tlb = ds::dtlb.get(source);
  const bool hit = (tlb & b::hit) != 0, miss = (tlb & b::miss) != 0;
  tlb &= ~(b::hit | b::miss);
  bool any = false;
  append_bits(out, tlb, tlbs.data(), tlbs.size(), any);
  if (!any) out += "N/A";
  if (hit) out += " hit";
  if (miss) out += " miss";
}

void append_lock(std::string& out, std::uint64_t lock) {
  namespace b = ds::lock_bits;
  out += (lock & b::na) != 0 ? "N/A" : (lock & b::locked) != 0 ? "Yes" : "No";
}

void append_block(std::string& out, std::uint64_t block) {
  namespace b = ds::block_bits;
  if (block == 0 || (block & b::na) != 0) {
    out += " N/A";
    return;
  }
  if ((block & b::data) != 0) out += " Data";
  if ((block & b::addr) != 0) out += " Addr";
}

}  // namespace

std::string data_source_text(std::uint64_t source) {
  std::string out = "|OP ";
  append_op(out, ds::op.get(source));
  out += "|LVL ";
  append_level(out, source);
  out += "|SNP ";
  append_snoop(out, source);
  out += "|TLB ";
  append_tlb(out, source);
  out += "|LCK ";
  append_lock(out, ds::lock.get(source));
  out += "|BLK ";
  append_block(out, ds::block.get(source));
  if (out.size() > 99) out.resize(99);
  return out;
}

}  // namespace perfscope
