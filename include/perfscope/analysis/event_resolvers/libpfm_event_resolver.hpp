// Vendor event names (INST_RETIRED.ANY, skl::INST_RETIRED.ANY) resolved with libpfm4's tables.
// Built only with PERFSCOPE_WITH_LIBPFM; libpfm4 knows a CPU only when its tables do, and
// LIBPFM_FORCE_PMU=<pmu> (for example skl) makes it use one PMU's table on any machine.
#pragma once

#include <string_view>

#include "perfscope/core/event_resolvers.hpp"

namespace perfscope {

class LibpfmEventResolver final : public VendorEventResolver {
 public:
  // Initializes libpfm4 on first use (it reads LIBPFM_FORCE_PMU then).
  VendorEventLookup resolve(std::string_view name) const override;
  std::string_view source() const override { return "libpfm4"; }
};

// Makes parse_event_list try libpfm4 for names nothing else knows.
void install_libpfm_event_resolver();

}  // namespace perfscope
