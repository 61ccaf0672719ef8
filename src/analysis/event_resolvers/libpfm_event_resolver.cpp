#include "perfscope/analysis/event_resolvers/libpfm_event_resolver.hpp"

#include <fmt/format.h>
#include <perfmon/pfmlib_perf_event.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

namespace perfscope {

namespace {

int initialize_once() {
  static const int status = pfm_initialize();
  return status;
}

struct FreeString {
  void operator()(char* text) const noexcept { std::free(text); }
};

}  // namespace

VendorEventLookup LibpfmEventResolver::resolve(std::string_view name) const {
  if (initialize_once() != PFM_SUCCESS) return {};
  // perf writes event.umask with a dot; libpfm4 separates the umask with a colon. Its own
  // modifiers (:u, :c=2) are not taken: perfscope's modifiers follow the name instead.
  std::string query(name);
  auto event_start = query.rfind("::");
  auto dot = query.find('.', event_start == std::string::npos ? 0 : event_start + 2);
  if (dot != std::string::npos) query[dot] = ':';

  perf_event_attr attr{};
  char* full_name = nullptr;
  pfm_perf_encode_arg_t argument{};
  argument.attr = &attr;
  argument.fstr = &full_name;
  argument.size = sizeof argument;
  int status =
      pfm_get_os_event_encoding(query.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &argument);
  std::unique_ptr<char, FreeString> owned(full_name);
  if (status == PFM_ERR_NOTFOUND || status == PFM_ERR_NOTSUPP) return {};
  if (status != PFM_SUCCESS) {
    return {std::nullopt, fmt::format("'{}' cannot be encoded: {}", name, pfm_strerror(status))};
  }
  VendorEvent event;
  event.type = attr.type;
  event.config = attr.config;
  event.config1 = attr.config1;
  event.config2 = attr.config2;
  event.canonical_name = full_name ? full_name : std::string(name);
  pfm_event_info_t info{};
  info.size = sizeof info;
  if (pfm_get_event_info(argument.idx, PFM_OS_NONE, &info) == PFM_SUCCESS && info.desc) {
    event.description = info.desc;
  }
  return {std::move(event), {}};
}

void install_libpfm_event_resolver() {
  install_vendor_event_resolver(std::make_shared<const LibpfmEventResolver>());
}

}  // namespace perfscope
