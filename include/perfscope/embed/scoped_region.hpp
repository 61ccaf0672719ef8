// ScopedRegion: counts the enclosing scope under a name of a Counters. Construction enables the
// counters' groups, destruction disables and reads them and adds the deltas to the region, so an
// empty region costs the ENABLE, DISABLE and read system calls it needs and little more.
// Regions nest: an inner region reads the running counters at its start and end instead.
#pragma once

#include <string_view>

#include "perfscope/embed/counters.hpp"

namespace perfscope {

class ScopedRegion {
 public:
  // The name is looked up (and registered on first use) at every construction; in a hot loop
  // pass the RegionId from Counters::region once instead.
  ScopedRegion(Counters& counters, std::string_view name)
      : ScopedRegion(counters, counters.region(name)) {}
  ScopedRegion(Counters& counters, RegionId id) noexcept : counters_(counters), id_(id) {
    counters_.begin_region(id_);
  }
  ~ScopedRegion() { counters_.end_region(id_); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;

 private:
  Counters& counters_;
  RegionId id_;
};

// The and the peers' spelling.
using Region = ScopedRegion;

}  // namespace perfscope
