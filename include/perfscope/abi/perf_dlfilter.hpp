// perf's dlfilter ABI (tools/perf/include/perf/perf_dlfilter.h, installed by Debian's linux-perf
// as /usr/include/perf/perf_dlfilter.h): what a filter shared object compiled for `perf script
// --dlfilter` exports and receives. Declared here from its documented layout so that such a
// filter works unchanged on perfscope; the static_asserts hold the layout perf's header gives.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope::abi::dlfilter {

// PERF_SAMPLE_BRANCH_STACK's entry (struct perf_branch_entry): from, to, then flag bits.
struct BranchEntry {
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  std::uint64_t flags = 0;
};
static_assert(sizeof(BranchEntry) == 24);

// struct perf_dlfilter_sample
struct Sample {
  std::uint32_t size = sizeof(Sample);
  std::uint16_t ins_lat = 0;
  std::uint16_t p_stage_cyc = 0;
  std::uint64_t ip = 0;
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::uint64_t time = 0;
  std::uint64_t addr = 0;
  std::uint64_t id = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t period = 0;
  std::uint64_t weight = 0;
  std::uint64_t transaction = 0;
  std::uint64_t insn_cnt = 0;
  std::uint64_t cyc_cnt = 0;
  std::int32_t cpu = -1;
  std::uint32_t flags = 0;
  std::uint64_t data_src = 0;
  std::uint64_t phys_addr = 0;
  std::uint64_t data_page_size = 0;
  std::uint64_t code_page_size = 0;
  std::uint64_t cgroup = 0;
  std::uint8_t cpumode = 0;
  std::uint8_t addr_correlates_sym = 0;
  std::uint16_t misc = 0;
  std::uint32_t raw_size = 0;
  const void* raw_data = nullptr;
  std::uint64_t brstack_nr = 0;
  const BranchEntry* brstack = nullptr;
  std::uint64_t raw_callchain_nr = 0;
  const std::uint64_t* raw_callchain = nullptr;
  const char* event = nullptr;
  std::int32_t machine_pid = 0;
  std::int32_t vcpu = 0;
};
static_assert(offsetof(Sample, ip) == 8 && offsetof(Sample, cpu) == 96);
static_assert(offsetof(Sample, cpumode) == 144 && offsetof(Sample, raw_data) == 152);
static_assert(offsetof(Sample, event) == 192 && sizeof(Sample) == 208);

// struct perf_dlfilter_al: where an address lies, as perf script names it.
struct AddressLocation {
  std::uint32_t size = sizeof(AddressLocation);
  std::uint32_t symoff = 0;
  const char* sym = nullptr;
  std::uint64_t addr = 0;  // the address in its file (the dso's)
  std::uint64_t sym_start = 0;
  std::uint64_t sym_end = 0;
  const char* dso = nullptr;
  std::uint8_t sym_binding = 0;  // STB_LOCAL, STB_GLOBAL or STB_WEAK
  std::uint8_t is_64_bit = 0;
  std::uint8_t is_kernel_ip = 0;
  std::uint32_t buildid_size = 0;
  std::uint8_t* buildid = nullptr;
  // Only resolve_ip fills these.
  std::uint8_t filtered = 0;
  const char* comm = nullptr;
};
static_assert(offsetof(AddressLocation, dso) == 40 && offsetof(AddressLocation, buildid) == 56);
static_assert(sizeof(AddressLocation) == 80);

// struct perf_dlfilter_fns: the callbacks perf hands the filter through its global
// `perf_dlfilter_fns`.
struct Functions {
  const AddressLocation* (*resolve_ip)(void* ctx) = nullptr;
  const AddressLocation* (*resolve_addr)(void* ctx) = nullptr;
  char** (*args)(void* ctx, int* dlargc) = nullptr;
  std::int32_t (*resolve_address)(void* ctx, std::uint64_t address, AddressLocation* al) = nullptr;
  const std::uint8_t* (*insn)(void* ctx, std::uint32_t* length) = nullptr;
  const char* (*srcline)(void* ctx, std::uint32_t* line_number) = nullptr;
  void* (*attr)(void* ctx) = nullptr;  // struct perf_event_attr *
  std::int32_t (*object_code)(void* ctx, std::uint64_t ip, void* buf, std::uint32_t len) = nullptr;
  void* (*reserved[120])(void*) = {};
};
static_assert(sizeof(Functions) == 128 * sizeof(void*));

// The filter's exports.
using StartFunction = int (*)(void** data, void* ctx);
using StopFunction = int (*)(void* data, void* ctx);
using FilterFunction = int (*)(void* data, const Sample* sample, void* ctx);
using DescriptionFunction = const char* (*)(const char** long_description);

}  // namespace perfscope::abi::dlfilter
