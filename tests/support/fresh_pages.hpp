// Exact page-fault counts in every build the suite runs.
//
// The first write to an anonymous page that was never touched is exactly one minor fault, so a
// test can assert that counting N such writes gives N. Anything else the counted window does for
// the first time faults too: a code page of the test or the library run for the first time, a
// deeper stack, AddressSanitizer's shadow of new memory, the allocator's fresh arena. The rule
// (docs/ARCHITECTURE.md, Tests): map the pages before the count starts, run the exact counted
// sequence once on other fresh pages first (its stack and shadow are then resident), make the
// code resident (prepare_exact_fault_count), and touch with `touch()` alone inside the window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perfscope/core/event.hpp"

namespace perfscope::testing {

class FreshPages {
 public:
  // Maps `count` pages, refusing huge pages (one fault would map 512 pages, or an mTHP's 16).
  explicit FreshPages(std::size_t count);
  ~FreshPages();
  FreshPages(const FreshPages&) = delete;
  FreshPages& operator=(const FreshPages&) = delete;

  bool valid() const noexcept { return memory_ != nullptr; }
  std::size_t count() const noexcept { return count_; }
  std::uintptr_t begin() const noexcept { return reinterpret_cast<std::uintptr_t>(memory_); }
  std::uintptr_t end() const noexcept { return begin() + count_ * page_; }
  // Writes one byte to each page: one fault each the first time. Neither instrumented (ASan's
  // shadow checks would fault shadow pages in) nor inlined (the same code at every call).
  void touch() const noexcept;

 private:
  std::size_t count_;
  std::size_t page_;
  char* memory_ = nullptr;
};

// Before a count that must be exact: maps every page of the process's code (the test's own,
// libraries, the sanitizer runtime) so that running a function for the first time inside the
// window faults nothing, and runs touch() once. (The code pages a fault maps around itself
// depend on where ASLR put the binary: a test that ran fresh code in its window failed 6 % of
// the time.) A forked child calls it again: fork does not copy the parent's code mappings'
// page tables.
void prepare_exact_fault_count();

// Where the page faults of this thread happen, for the message of an exact count that missed:
// a page-fault event sampling every fault's address and instruction, from construction until
// stop(). It names what faulted outside the fresh pages, which is the flake's cause.
class FaultWitness {
 public:
  FaultWitness();
  ~FaultWitness();
  FaultWitness(const FaultWitness&) = delete;
  FaultWitness& operator=(const FaultWitness&) = delete;
  void stop() noexcept;
  // The faults seen outside [pages.begin(), pages.end()), one line each ("ip 0x... (symbol)
  // addr 0x..."), or why none could be seen.
  std::string outside(const FreshPages& pages) const;
  std::string outside(const std::vector<const FreshPages*>& pages) const;

 private:
  Event event_;
  void* ring_ = nullptr;
  std::size_t ring_bytes_ = 0;
};

}  // namespace perfscope::testing
