#include "perfscope/analysis/trace/syscall_arguments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "perfscope/analysis/perf_data/tracepoint_format.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

namespace {

bool one_of(std::string_view text, std::initializer_list<std::string_view> candidates) {
  return std::find(candidates.begin(), candidates.end(), text) != candidates.end();
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

SyscallArgumentKind syscall_argument_kind(std::string_view type, std::string_view name) {
  if (type.find('*') != std::string_view::npos) return SyscallArgumentKind::pointer;
  if (one_of(name, {"dfd", "olddfd", "newdfd", "dirfd", "from_dfd", "to_dfd"})) {
    return SyscallArgumentKind::directory_fd;
  }
  if (type == "umode_t") return SyscallArgumentKind::mode;
  if (ends_with(name, "flags") || one_of(name, {"prot", "how", "cmd", "op", "request"})) {
    return SyscallArgumentKind::flags;
  }
  if (type == "int" || type == "pid_t" || type == "clockid_t" || type == "key_serial_t" ||
      type == "rwf_t" || type == "timer_t" || type == "mqd_t" || type == "uid_t" ||
      type == "gid_t" || type == "qid_t") {
    return type == "uid_t" || type == "gid_t" || type == "qid_t"
               ? SyscallArgumentKind::unsigned_number
               : SyscallArgumentKind::int32;
  }
  if (type == "long" || type == "off_t" || type == "loff_t" || type == "ssize_t" ||
      type == "__s32" || type == "time_t") {
    return SyscallArgumentKind::signed_number;
  }
  return SyscallArgumentKind::unsigned_number;
}

SyscallSignatures::SyscallSignatures(SyscallTable table)
    : table_(table), catalog_(std::make_unique<TracepointCatalog>()) {}

SyscallSignatures::~SyscallSignatures() = default;

const SyscallSignature& SyscallSignatures::signature(long number) {
  auto found = signatures_.find(number);
  if (found != signatures_.end()) return found->second;
  SyscallSignature signature;
  std::string_view name = table_.name(number);
  if (!name.empty()) {
    for (const auto& tracepoint : SyscallTable::tracepoint_names(name)) {
      try {
        const TracepointFormat& format = catalog_->load("syscalls", "sys_enter_" + tracepoint);
        for (const auto& field : format.fields()) {
          if (field.is_common || field.name == "__syscall_nr" || field.name == "nr") continue;
          signature.arguments.push_back(
              {field.name, field.type, syscall_argument_kind(field.type, field.name)});
        }
        signature.from_tracefs = true;
        break;
      } catch (const Error&) {
        // No such tracepoint (or tracefs unreadable): try the next name, else unnamed words.
      }
    }
  }
  if (!signature.from_tracefs) {
    for (int i = 0; i < 6; ++i) {
      signature.arguments.push_back(
          {fmt::format("arg{}", i), "unsigned long", SyscallArgumentKind::flags});
    }
  }
  if (signature.arguments.size() > 6) signature.arguments.resize(6);
  return signatures_.emplace(number, std::move(signature)).first->second;
}

void SyscallSignatures::append_value(std::string& out, SyscallArgumentKind kind,
                                     std::uint64_t value) {
  auto sink = std::back_inserter(out);
  switch (kind) {
    case SyscallArgumentKind::signed_number:
      fmt::format_to(sink, "{}", static_cast<std::int64_t>(value));
      return;
    case SyscallArgumentKind::unsigned_number: fmt::format_to(sink, "{}", value); return;
    case SyscallArgumentKind::int32:
      fmt::format_to(sink, "{}", static_cast<std::int32_t>(static_cast<std::uint32_t>(value)));
      return;
    case SyscallArgumentKind::pointer:
      if (value == 0) {
        out += "NULL";
      } else {
        fmt::format_to(sink, "{:#x}", value);
      }
      return;
    case SyscallArgumentKind::flags: fmt::format_to(sink, "{:#x}", value); return;
    case SyscallArgumentKind::mode:
      if (value == 0) {
        out += '0';
      } else {
        fmt::format_to(sink, "0{:o}", value);
      }
      return;
    case SyscallArgumentKind::directory_fd: {
      auto fd = static_cast<std::int32_t>(static_cast<std::uint32_t>(value));
      if (fd == -100) {
        out += "AT_FDCWD";
      } else {
        fmt::format_to(sink, "{}", fd);
      }
      return;
    }
  }
}

void SyscallSignatures::append_arguments(std::string& out, long number,
                                         const std::array<std::uint64_t, 6>& args) {
  const SyscallSignature& found = signature(number);
  for (std::size_t i = 0; i < found.arguments.size(); ++i) {
    if (i != 0) out += ", ";
    out += found.arguments[i].name;
    out += ": ";
    append_value(out, found.arguments[i].kind, args[i]);
  }
}

}  // namespace perfscope
