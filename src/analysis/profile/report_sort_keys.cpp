// perf report's --sort keys: their names, their column titles, and the parsing of a --sort value.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "perfscope/analysis/profile/report_table.hpp"

namespace perfscope {

std::string_view report_sort_key_name(ReportSortKey key) noexcept {
  switch (key) {
    case ReportSortKey::comm: return "comm";
    case ReportSortKey::pid: return "pid";
    case ReportSortKey::tid: return "tid";
    case ReportSortKey::dso: return "dso";
    case ReportSortKey::sym: return "sym";
    case ReportSortKey::cpu: return "cpu";
    case ReportSortKey::srcline: return "srcline";
    case ReportSortKey::state: return "state";
    case ReportSortKey::srcfile: return "srcfile";
    case ReportSortKey::parent: return "parent";
    case ReportSortKey::time: return "time";
  }
  return "";
}

std::string_view report_sort_key_title(ReportSortKey key) noexcept {
  switch (key) {
    case ReportSortKey::comm: return "Command";
    case ReportSortKey::pid: return "Pid:Command";
    case ReportSortKey::tid: return "Pid:Command";
    case ReportSortKey::dso: return "Shared Object";
    case ReportSortKey::sym: return "Symbol";
    case ReportSortKey::cpu: return "CPU";
    case ReportSortKey::srcline: return "Source:Line";
    case ReportSortKey::state: return "State";
    case ReportSortKey::srcfile: return "Source File";
    case ReportSortKey::parent: return "Parent symbol";
    case ReportSortKey::time: return "Time";
  }
  return "";
}

namespace {

// Calls `visit` with each comma-separated word of a --sort value.
template <typename Visit>
void for_each_sort_word(std::string_view text, Visit&& visit) {
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    visit(text.substr(start,
                      comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

bool is_order_word(std::string_view name) {
  return name == "overhead" || name == "period" || name == "sample" || name == "overhead_children";
}

}  // namespace

std::vector<ReportSortKey> parse_report_sort_keys(std::string_view text) {
  std::vector<ReportSortKey> keys;
  for_each_sort_word(text, [&](std::string_view name) {
    if (is_order_word(name)) return;
    if (name == "symbol") name = "sym";
    for (ReportSortKey key :
         {ReportSortKey::comm, ReportSortKey::pid, ReportSortKey::tid, ReportSortKey::dso,
          ReportSortKey::sym, ReportSortKey::cpu, ReportSortKey::srcline, ReportSortKey::state,
          ReportSortKey::srcfile, ReportSortKey::parent, ReportSortKey::time}) {
      if (name == report_sort_key_name(key)) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
        return;
      }
    }
    throw std::invalid_argument(fmt::format(
        "--sort: unknown key '{}'; the keys are comm,pid,tid,dso,sym (symbol),cpu,"
        "srcline,srcfile,parent,state,time, and overhead,period,sample to order the rows",
        name));
  });
  // Only ordering words: no key, so one row, the whole event, as perf shows it.
  return keys;
}

bool report_orders_by_samples(std::string_view text) {
  bool by_samples = false, decided = false;
  for_each_sort_word(text, [&](std::string_view name) {
    if (decided || !is_order_word(name)) return;
    decided = true;
    by_samples = name == "sample";
  });
  return by_samples;
}

}  // namespace perfscope
