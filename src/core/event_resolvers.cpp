#include "perfscope/core/event_resolvers.hpp"

namespace perfscope {

namespace {
std::shared_ptr<const SymbolOffsetResolver>& symbol_resolver_slot() {
  static std::shared_ptr<const SymbolOffsetResolver> slot;
  return slot;
}
std::shared_ptr<const VendorEventResolver>& vendor_resolver_slot() {
  static std::shared_ptr<const VendorEventResolver> slot;
  return slot;
}
}  // namespace

void install_symbol_offset_resolver(std::shared_ptr<const SymbolOffsetResolver> resolver) {
  symbol_resolver_slot() = std::move(resolver);
}

void install_vendor_event_resolver(std::shared_ptr<const VendorEventResolver> resolver) {
  vendor_resolver_slot() = std::move(resolver);
}

const SymbolOffsetResolver* installed_symbol_offset_resolver() noexcept {
  return symbol_resolver_slot().get();
}

const VendorEventResolver* installed_vendor_event_resolver() noexcept {
  return vendor_resolver_slot().get();
}

}  // namespace perfscope
