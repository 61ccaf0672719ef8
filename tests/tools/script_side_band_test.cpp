// The side-band records' text of script --show-*-events, for the records a test machine rarely
// writes (BPF programs loaded, kernel text changed, an empty NAMESPACES): perf's
// perf_event__fprintf formats, byte for byte. The common ones are compared with perf itself in
// tests/cli/script_side_band_cli_test.cpp.
#include "../../tools/perfscope/script_side_band.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string>

namespace {

using namespace perfscope;
using perfscope::cli::side_band_text;
using perfscope::cli::SideBandNames;

perfscope::abi::RecordHeader header_of(perfscope::abi::RecordType type, std::uint16_t misc = 0) {
  return {static_cast<std::uint32_t>(type), misc, 0};
}

SideBandNames plain_names() {
  SideBandNames names;
  names.name = [](std::string_view name) { return std::string(name); };
  names.kernel_symbol = [](std::uint64_t address) {
    return address == 0xffffffff81000005 ? std::string("start_kernel+0x5") : std::string();
  };
  return names;
}

TEST(ScriptSideBand, BpfRecordsAsPerfPrintsThem) {
  KsymbolRecord ksymbol;
  ksymbol.addr = 0xffffffffc0001000;
  ksymbol.len = 312;
  ksymbol.ksym_type = 1;
  ksymbol.name = "bpf_prog_6deef7357e7b4530_sd_fw_egress";
  EXPECT_EQ(side_band_text(ksymbol, header_of(perfscope::abi::RecordType::ksymbol), plain_names()),
            "PERF_RECORD_KSYMBOL addr ffffffffc0001000 len 312 type 1 flags 0x0 name "
            "bpf_prog_6deef7357e7b4530_sd_fw_egress\n");
  BpfEventRecord bpf;
  bpf.event_type = 1;
  bpf.id = 42;
  EXPECT_EQ(side_band_text(bpf, header_of(perfscope::abi::RecordType::bpf_event), plain_names()),
            "PERF_RECORD_BPF_EVENT type 1, flags 0, id 42\n");
}

TEST(ScriptSideBand, TextPokeShowsWhereAndTheBytesSixteenALine) {
  std::array<std::byte, 5 + 18> bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(0xe0 + i);
  TextPokeRecord poke;
  poke.addr = 0xffffffff81000005;
  poke.old_bytes = std::span<const std::byte>(bytes).first(5);
  poke.new_bytes = std::span<const std::byte>(bytes).subspan(5);
  EXPECT_EQ(side_band_text(poke, header_of(perfscope::abi::RecordType::text_poke), plain_names()),
            "PERF_RECORD_TEXT_POKE ffffffff81000005 start_kernel+0x5 old len 5 new len 18\n"
            "            Old bytes: e0 e1 e2 e3 e4\n"
            "            New bytes: e5 e6 e7 e8 e9 ea eb ec ed ee ef f0 f1 f2 f3 f4\n"
            "            New bytes: f5 f6\n");
  // Nowhere known: perf leaves the name out, and its two blanks stay.
  poke.addr = 0xffffffff82000000;
  poke.new_bytes = {};
  EXPECT_EQ(side_band_text(poke, header_of(perfscope::abi::RecordType::text_poke), plain_names()),
            "PERF_RECORD_TEXT_POKE ffffffff82000000  old len 5 new len 0\n"
            "            Old bytes: e0 e1 e2 e3 e4\n");
}

TEST(ScriptSideBand, ZeroesAndEmptyListsAsCPrintsThem) {
  // C's %#x prints 0 as "0", not "0x0".
  MmapRecord mmap;
  mmap.pid = static_cast<std::uint32_t>(-1);
  mmap.addr = 0x1000;
  mmap.filename = "//anon";
  EXPECT_EQ(
      side_band_text(
          mmap, header_of(perfscope::abi::RecordType::mmap, perfscope::abi::record_misc::mmap_data),
          plain_names()),
      "PERF_RECORD_MMAP -1/0: [0x1000(0) @ 0]: r //anon\n");
  Mmap2Record mmap2;
  mmap2.pid = mmap2.tid = 7;
  mmap2.addr = 0x400000;
  mmap2.len = 0x2000;
  mmap2.has_build_id = true;
  std::array<std::byte, 3> id{std::byte{0xab}, std::byte{0x01}, std::byte{0xff}};
  mmap2.build_id = id;
  mmap2.prot = 5;
  mmap2.flags = 1;
  mmap2.filename = "/bin/x";
  EXPECT_EQ(side_band_text(mmap2, header_of(perfscope::abi::RecordType::mmap2), plain_names()),
            "PERF_RECORD_MMAP2 7/7: [0x400000(0x2000) @ 0 <ab01ff>]: r-xs /bin/x\n");
  // No namespaces: perf opens the bracket and ends there, without a newline.
  NamespacesRecord none;
  none.pid = none.tid = 3;
  EXPECT_EQ(side_band_text(none, header_of(perfscope::abi::RecordType::namespaces), plain_names()),
            "PERF_RECORD_NAMESPACES 3/3 - nr_namespaces: 0\n\t\t[");
  SwitchRecord wide;
  wide.cpu_wide = true;
  wide.out = wide.preempted = true;
  wide.next_prev_pid = wide.next_prev_tid = 12;
  EXPECT_EQ(
      side_band_text(wide, header_of(perfscope::abi::RecordType::switch_cpu_wide), plain_names()),
      "PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:    12/12   \n");
}

}  // namespace
