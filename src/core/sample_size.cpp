#include "perfscope/core/sample_size.hpp"

#include <algorithm>
#include <bit>

#include "perfscope/abi/sample_format.hpp"

namespace perfscope {

namespace sf = abi::sample_format;

SampleSizeBound smallest_user_sample(const abi::PerfEventAttr& attr,
                                     std::size_t group_size) noexcept {
  const std::uint64_t type = attr.sample_type;
  auto has = [&](std::uint64_t bit) { return (type & bit) != 0; };
  SampleSizeBound bound;
  std::size_t words = 1;  // the record header
  // One word each, in any sample.
  for (std::uint64_t bit :
       {sf::identifier, sf::ip, sf::tid, sf::time, sf::addr, sf::id, sf::stream_id, sf::cpu,
        sf::period, sf::weight_type, sf::data_src, sf::transaction, sf::phys_addr, sf::cgroup,
        sf::data_page_size, sf::code_page_size}) {
    if (has(bit)) ++words;
  }
  if (has(sf::read)) {
    namespace rf = abi::read_format;
    std::uint64_t format = attr.read_format;
    std::size_t times =
        ((format & rf::total_time_enabled) ? 1 : 0) + ((format & rf::total_time_running) ? 1 : 0);
    std::size_t per_value = 1 + ((format & rf::id) ? 1 : 0) + ((format & rf::lost) ? 1 : 0);
    words += (format & rf::group) ? 1 + times + std::max<std::size_t>(group_size, 1) * per_value
                                  : times + per_value;
  }
  // A user task's call chain holds at least PERF_CONTEXT_USER and the sampled ip, unless user
  // chains are excluded. Raw data, branch stacks and AUX data may be empty: their size word.
  if (has(sf::callchain)) {
    words += (attr.flags & abi::attr_flag::exclude_callchain_user) ? 1 : 3;
  }
  if (has(sf::raw)) ++words;  // u32 size, padded with the data to a whole word
  if (has(sf::branch_stack)) {
    words += (attr.branch_sample_type & abi::branch_sample::hw_index) ? 2 : 1;
  }
  if (has(sf::aux)) ++words;
  if (has(sf::regs_user)) {
    std::size_t registers = static_cast<std::size_t>(std::popcount(attr.sample_regs_user));
    bound.registers += registers * 8;
    words += 1 + registers;
  }
  if (has(sf::regs_intr)) {
    std::size_t registers = static_cast<std::size_t>(std::popcount(attr.sample_regs_intr));
    bound.registers += registers * 8;
    words += 1 + registers;
  }
  std::size_t bytes = words * 8;
  if (has(sf::stack_user)) {
    // The size word, then (with a non-empty dump) the dump and its dynamic size.
    bound.stack_dump = attr.sample_stack_user;
    bytes += 8 + (attr.sample_stack_user != 0 ? attr.sample_stack_user + 8 : 0);
  }
  bound.bytes = bytes;
  return bound;
}

}  // namespace perfscope
