// Plug-in points of the event-string parser for what the core cannot know without outside
// libraries: the file offset of an ELF symbol (uprobe:/bin:symbol) and vendor event names
// (INST_RETIRED.ANY). The analysis layer implements them with libelf and libpfm4; a program
// installs them once, and parse_event_list uses the installed ones by default.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "perfscope/export.hpp"

namespace perfscope {

struct SymbolOffset {
  std::optional<std::uint64_t> offset;  // file offset of the symbol's first byte
  std::string error;                    // why not, when there is no offset
};

class PERFSCOPE_EXPORT SymbolOffsetResolver {
 public:
  virtual ~SymbolOffsetResolver() = default;
  // The offset in the file `path` of the bytes of `symbol` (a function), as uprobes want it.
  virtual SymbolOffset file_offset(const std::string& path, std::string_view symbol) const = 0;
};

// A vendor event name resolved to the attr words that count it.
struct VendorEvent {
  std::uint32_t type = 0;
  std::uint64_t config = 0;
  std::uint64_t config1 = 0;
  std::uint64_t config2 = 0;
  std::string canonical_name;  // the resolver's full name ("skl::INST_RETIRED:ANY")
  std::string description;
};

struct VendorEventLookup {
  std::optional<VendorEvent> event;
  std::string error;  // set when the name is known but cannot be encoded; empty when unknown
};

class PERFSCOPE_EXPORT VendorEventResolver {
 public:
  virtual ~VendorEventResolver() = default;
  virtual VendorEventLookup resolve(std::string_view name) const = 0;
  // What resolves the names, for messages ("libpfm4").
  virtual std::string_view source() const = 0;
};

// Process-wide resolvers used when parse options name none. Not thread-safe against a concurrent
// parse: install them at start-up.
PERFSCOPE_EXPORT void install_symbol_offset_resolver(
    std::shared_ptr<const SymbolOffsetResolver> resolver);
PERFSCOPE_EXPORT void install_vendor_event_resolver(
    std::shared_ptr<const VendorEventResolver> resolver);
PERFSCOPE_EXPORT const SymbolOffsetResolver* installed_symbol_offset_resolver() noexcept;
PERFSCOPE_EXPORT const VendorEventResolver* installed_vendor_event_resolver() noexcept;

}  // namespace perfscope
