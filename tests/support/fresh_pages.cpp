#include "support/fresh_pages.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_attr.hpp"
#include "support/test_support.hpp"

namespace perfscope::testing {

FreshPages::FreshPages(std::size_t count)
    : count_(count), page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
  void* memory =
      ::mmap(nullptr, count_ * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;
  memory_ = static_cast<char*>(memory);
  ::madvise(memory_, count_ * page_, MADV_NOHUGEPAGE);
}

FreshPages::~FreshPages() {
  if (memory_) ::munmap(memory_, count_ * page_);
}

__attribute__((noinline, no_sanitize("address", "undefined"))) void FreshPages::touch()
    const noexcept {
  volatile char* bytes = memory_;
  for (std::size_t i = 0; i < count_; ++i) bytes[i * page_] = 1;
}

void prepare_exact_fault_count() {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14
#endif
  // Executable file mappings only (the vDSO's pages are always there).
  for (const OwnMapping& mapping : own_mappings()) {
    if (mapping.perms.size() < 3 || mapping.perms[2] != 'x' || mapping.path.empty() ||
        mapping.path.front() == '[') {
      continue;
    }
    ::madvise(reinterpret_cast<void*>(mapping.start), mapping.end - mapping.start,
              MADV_POPULATE_READ);
  }
  FreshPages pages(4);
  pages.touch();
}

namespace {

constexpr std::size_t witness_data_pages = 64;

struct WitnessSample {
  abi::RecordHeader header;
  std::uint64_t ip;
  std::uint64_t addr;
};

}  // namespace

FaultWitness::FaultWitness() {
  auto attr = EventAttr::software(abi::SoftwareEvent::page_faults)
                  .set_sample_period(1)
                  .set_sample_type(abi::sample_format::ip | abi::sample_format::addr);
  int errnum = 0;
  event_ = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
  if (!event_.valid()) return;
  std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  ring_bytes_ = (1 + witness_data_pages) * page;
  void* ring = ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, event_.fd(), 0);
  if (ring != MAP_FAILED) ring_ = ring;
}

FaultWitness::~FaultWitness() {
  if (ring_) ::munmap(ring_, ring_bytes_);
}

void FaultWitness::stop() noexcept {
  if (event_.valid()) event_.disable();
}

std::string FaultWitness::outside(const FreshPages& pages) const { return outside({&pages}); }

std::string FaultWitness::outside(const std::vector<const FreshPages*>& pages) const {
  if (!ring_) return "(no fault witness: a page-fault sampling event did not open here)";
  const auto* header = static_cast<const abi::PerfEventMmapPage*>(ring_);
  std::uint64_t head = std::atomic_ref<const std::uint64_t>(header->data_head).load();
  std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const char* data = static_cast<const char*>(ring_) + page;
  std::size_t size = witness_data_pages * page;
  if (head > size) return "(the fault witness's ring buffer filled up)";
  std::string lines;
  for (std::uint64_t at = 0; at + sizeof(WitnessSample) <= head;) {
    WitnessSample sample;
    std::memcpy(&sample, data + at, sizeof sample);
    if (sample.header.size == 0) break;
    at += sample.header.size;
    if (sample.header.type != static_cast<std::uint32_t>(abi::RecordType::sample)) continue;
    bool fresh = false;
    for (const FreshPages* range : pages) {
      fresh = fresh || (sample.addr >= range->begin() && sample.addr < range->end());
    }
    if (fresh) continue;
    Dl_info where{};
    ::dladdr(reinterpret_cast<void*>(sample.ip), &where);
    lines += fmt::format("  fault at ip {:#x} ({} in {}) on addr {:#x}\n", sample.ip,
                         where.dli_sname ? where.dli_sname : "?",
                         where.dli_fname ? where.dli_fname : "?", sample.addr);
  }
  return lines.empty() ? "  (no fault outside the fresh pages)\n" : lines;
}

}  // namespace perfscope::testing
