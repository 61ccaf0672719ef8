// KernelSymbols: the kernel's and its modules' text symbols from a kallsyms file, sorted once.
// Every symbol ends where the next one (of any type) starts, as kallsyms carries no sizes.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

// perf's name for the kernel image as a DSO.
inline constexpr std::string_view kernel_dso_name = "[kernel.kallsyms]";

class KernelSymbols {
 public:
  // Parses `text` (the contents of /proc/kallsyms or a copy of it).
  void parse(std::string_view text);

  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }
  // Every address read 0: kptr_restrict hides them from this reader.
  bool addresses_hidden() const noexcept { return hidden_; }
  // The address of _text (else _stext): perf's reference symbol, whose address a recording's
  // kernel MMAP record carries as its pgoff. 0 when the file has neither.
  std::uint64_t reference_address() const noexcept { return reference_address_; }

  struct Hit {
    std::string_view name;
    std::string_view dso;  // "[kernel.kallsyms]" or the module's "[name]"
    std::uint64_t start = 0;
    std::uint64_t end = 0;     // the next symbol's start
    std::uint8_t binding = 1;  // as perf binds kallsyms types: W weak (2), upper case global (1)
  };
  // The text symbol covering `address`; found is false when none does.
  bool find(std::uint64_t address, Hit& hit) const noexcept;
  // The first symbol called `name` (any type but absolute), with its end as find gives it.
  bool find_by_name(std::string_view name, Hit& hit) const noexcept;

 private:
  struct Entry {
    std::uint64_t start = 0;
    std::uint32_t name_offset = 0, name_size = 0;
    std::uint32_t dso = 0;  // index into dsos_
    bool text = false;
    std::uint8_t binding = 1;
  };
  std::string names_;
  std::deque<std::string> dsos_;
  std::vector<Entry> entries_;
  bool hidden_ = false;
  std::uint64_t reference_address_ = 0;
};

}  // namespace perfscope
