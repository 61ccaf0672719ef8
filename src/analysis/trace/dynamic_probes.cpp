#include "perfscope/analysis/trace/dynamic_probes.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "analysis/symbols/demangler.hpp"
#include "perfscope/analysis/event_resolvers/elf_symbol_resolver.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

std::string safe_event_name(std::string_view name) {
  std::string out;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

// Each defined function symbol of the image's .symtab, or of .dynsym when .symtab has none:
// visit(symbol, name, file offset of its first byte); a true return stops the walk.
template <typename Visit>
void for_each_function(const ElfImage& image, Visit&& visit) {
  Elf* elf = image.elf();
  bool any = false;
  for (Elf64_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
      GElf_Shdr header;
      if (!gelf_getshdr(section, &header) || header.sh_type != wanted || header.sh_entsize == 0)
        continue;
      Elf_Data* data = elf_getdata(section, nullptr);
      std::size_t count = header.sh_size / header.sh_entsize;
      for (std::size_t i = 0; data != nullptr && i < count; ++i) {
        GElf_Sym symbol;
        if (!gelf_getsym(data, static_cast<int>(i), &symbol)) continue;
        int type = GELF_ST_TYPE(symbol.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || symbol.st_shndx == SHN_UNDEF ||
            symbol.st_shndx >= SHN_LORESERVE) {
          continue;
        }
        const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
        GElf_Shdr holder;
        Elf_Scn* holder_section = elf_getscn(elf, symbol.st_shndx);
        if (name == nullptr || *name == '\0' || !holder_section ||
            !gelf_getshdr(holder_section, &holder)) {
          continue;
        }
        any = true;
        if (visit(symbol, name, symbol.st_value - holder.sh_addr + holder.sh_offset)) return;
      }
    }
    if (any) return;
  }
}

// The function whose bytes hold `offset` in `binary`, perf's "on" text for it.
std::string function_at(const std::string& binary, std::uint64_t offset) {
  std::string error;
  auto image = ElfImage::open(binary, error);
  std::string found = fmt::format("{:#x}", offset);
  if (!image) return found;
  for_each_function(*image, [&](const GElf_Sym& symbol, const char* name, std::uint64_t start) {
    if (offset < start || offset >= start + std::max<std::uint64_t>(symbol.st_size, 1)) {
      return false;
    }
    found = offset == start ? std::string(name) : fmt::format("{}+{}", name, offset - start);
    return true;
  });
  return found;
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out += separator;
    out += word;
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error(fmt::format("cannot open {}: {}{}", path, std::strerror(errno),
                                         errno == EACCES ? " (probes need root)" : ""));
  }
  ssize_t written = ::write(fd, line.data(), line.size());
  int error = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error(
        fmt::format("the kernel refused '{}' in {}: {}", line, path, std::strerror(error)));
  }
}

// One line of uprobe_events or kprobe_events: "p:GROUP/EVENT PATH:0xOFFSET", "r:...",
// "p:GROUP/EVENT FUNCTION+OFFSET" (arguments after, ignored).
std::optional<DynamicProbe> parse_line(const std::string& line, bool kernel, bool places) {
  if (line.size() < 3 || (line[0] != 'p' && line[0] != 'r') || line[1] != ':') return std::nullopt;
  std::istringstream words(line.substr(2));
  std::string name, where;
  if (!(words >> name >> where)) return std::nullopt;
  DynamicProbe probe;
  for (std::string argument; words >> argument;) probe.fetch_arguments.push_back(argument);
  std::size_t slash = name.find('/');
  if (slash == std::string::npos) return std::nullopt;
  probe.group = name.substr(0, slash);
  probe.event = name.substr(slash + 1);
  probe.kernel = kernel;
  probe.return_probe = line[0] == 'r';
  if (kernel) {
    probe.place = where;
    probe.on = where;
  } else {
    std::size_t colon = where.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    probe.binary = where.substr(0, colon);
    probe.offset = std::strtoull(where.c_str() + colon + 1, nullptr, 0);
    if (places) {
      auto source_point = probe_source_point(probe.binary, probe.offset);
      probe.on = source_point ? *source_point : function_at(probe.binary, probe.offset);
    }
  }
  // perf's order: the place, then %return, then @FILE.
  if (probe.return_probe) probe.on.insert(std::min(probe.on.find('@'), probe.on.size()), "%return");
  return probe;
}

}  // namespace

ProbeRequest parse_probe_definition(const std::string& definition) {
  ProbeRequest request;
  std::istringstream words(definition);
  std::string text;
  words >> text;
  for (std::string argument; words >> argument;) {
    request.arguments.push_back(parse_probe_argument(argument));
  }
  if (text.find('@') != std::string::npos || text.find(';') != std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "'{}': source lines and patterns (@FILE, :LINE, ;PATTERN) need DWARF line tables, "
        "which perfscope probe does not read yet; give FUNCTION, FUNCTION+OFFSET or "
        "FUNCTION%return",
        definition));
  }
  if (std::size_t equals = text.find('='); equals != std::string::npos) {
    request.event = text.substr(0, equals);
    text = text.substr(equals + 1);
  }
  if (text.ends_with("%return")) {
    request.return_probe = true;
    text.resize(text.size() - 7);
  }
  if (std::size_t plus = text.find('+'); plus != std::string::npos) {
    char* end = nullptr;
    request.offset = std::strtoull(text.c_str() + plus + 1, &end, 0);
    if (end == text.c_str() + plus + 1 || *end != '\0') {
      throw std::invalid_argument(
          fmt::format("'{}': the offset after '+' is no number", definition));
    }
    text.resize(plus);
  }
  if (text.empty() || text.find(':') != std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "'{}': give [EVENT=]FUNCTION[+OFFSET|%return] (a line number needs DWARF: not yet)",
        definition));
  }
  request.function = text;
  return request;
}

std::vector<std::string> probe_functions(const std::string& binary) {
  std::string error;
  auto image = ElfImage::open(binary, error);
  if (!image) throw std::runtime_error(error);
  std::vector<std::string> names;
  for_each_function(*image, [&](const GElf_Sym&, const char* name, std::uint64_t) {
    std::string shown = demangle_symbol(name, DemangledForm::short_name);
    if (shown.empty()) shown = name;
    if (shown.front() != '_') names.push_back(std::move(shown));
    return false;
  });
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string probe_definition_line(const DynamicProbe& probe) {
  char kind = probe.return_probe ? 'r' : 'p';
  std::string line = probe.kernel
                         ? fmt::format("{}:{}/{} {}", kind, probe.group, probe.event, probe.place)
                         : fmt::format("{}:{}/{} {}:{:#x}", kind, probe.group, probe.event,
                                       probe.binary, probe.offset);
  for (const std::string& argument : probe.fetch_arguments) line += " " + argument;
  return line;
}

std::vector<std::string> DynamicProbe::argument_names() const {
  std::vector<std::string> names;
  for (const std::string& argument : fetch_arguments) {
    std::size_t equals = argument.find('=');
    names.push_back(equals == std::string::npos ? argument : argument.substr(0, equals));
  }
  return names;
}

std::string uprobe_group(const std::string& binary) {
  std::string name = std::filesystem::path(binary).filename().string();
  return "probe_" + safe_event_name(name.substr(0, name.find('.')));
}

DynamicProbes::DynamicProbes() {
  auto root = sys::tracefs_root();
  if (!root) {
    throw std::runtime_error(
        "tracefs is not mounted and cannot be mounted here: probes are made through it "
        "(mount -t tracefs nodev /sys/kernel/tracing)");
  }
  root_ = *root;
}

bool DynamicProbes::hex_types_available() const {
  return read_text(root_ + "/README").find("x8/16/32/64") != std::string::npos;
}

bool DynamicProbes::kprobes_available() const {
  return ::access((root_ + "/kprobe_events").c_str(), F_OK) == 0;
}

std::vector<DynamicProbe> DynamicProbes::list(bool places) const {
  std::vector<DynamicProbe> probes;
  for (bool kernel : {true, false}) {
    std::istringstream lines(read_text(root_ + (kernel ? "/kprobe_events" : "/uprobe_events")));
    std::size_t first = probes.size();
    for (std::string line; std::getline(lines, line);) {
      if (auto probe = parse_line(line, kernel, places)) probes.push_back(std::move(*probe));
    }
    // perf lists each kind's probes by name.
    std::stable_sort(probes.begin() + static_cast<std::ptrdiff_t>(first), probes.end(),
                     [](const DynamicProbe& a, const DynamicProbe& b) {
                       return std::tie(a.group, a.event) < std::tie(b.group, b.event);
                     });
  }
  return probes;
}

DynamicProbe DynamicProbes::add(const ProbeRequest& request, const std::string& binary, bool force,
                                bool dry_run) {
  DynamicProbe probe;
  probe.kernel = binary.empty();
  probe.return_probe = request.return_probe;
  std::string base = request.event.empty() ? safe_event_name(request.function) : request.event;
  if (request.event.empty() && request.return_probe) base += "__return";
  bool by_name = false;
  std::vector<std::string> requested;
  for (const ProbeArgument& argument : request.arguments) {
    by_name = by_name || argument.is_c_variable() || argument.variable == "$params" ||
              argument.variable == "$vars";
    requested.push_back(argument.text());
  }
  probe.requested_arguments = join(requested, " ");
  if (probe.kernel && by_name) {
    throw std::runtime_error(
        "kernel probes take raw arguments only in perfscope (%di, +8(%sp), $comm): arguments by "
        "name need the kernel's DWARF (a vmlinux with debug information), which perfscope probe "
        "does not read; perf probe does");
  }
  if (!by_name) {
    for (const ProbeArgument& argument : request.arguments) {
      probe.fetch_arguments.push_back(argument.text());
    }
  }
  if (probe.kernel) {
    if (!kprobes_available()) {
      throw std::runtime_error(
          "this kernel has no kprobe events (no kprobe_events in tracefs: "
          "CONFIG_KPROBE_EVENTS is off); uprobes still work: give -x BINARY");
    }
    probe.group = "probe";
    probe.place = request.offset != 0 ? fmt::format("{}+{}", request.function, request.offset)
                                      : request.function;
    probe.on = probe.place;
  } else {
    std::error_code error;
    probe.binary = std::filesystem::absolute(binary, error).lexically_normal().string();
    probe.group = uprobe_group(probe.binary);
    if (by_name) {
      ProbePlacement placement =
          place_uprobe(probe.binary, request.function, request.offset, request.return_probe,
                       request.arguments, hex_types_available());
      probe.offset = placement.file_offset;
      probe.fetch_arguments = std::move(placement.fetch_arguments);
      probe.notice = std::move(placement.notice);
    } else {
      SymbolOffset found = ElfSymbolResolver().file_offset(probe.binary, request.function);
      if (!found.offset) throw std::runtime_error(found.error);
      probe.offset = *found.offset + request.offset;
    }
    probe.on = request.offset != 0 ? fmt::format("{}+{}", request.function, request.offset)
                                   : request.function;
  }
  if (probe.return_probe) probe.on += "%return";
  // perf's names: the function's, then _1, _2, ... when forced next to an existing one.
  std::vector<DynamicProbe> existing = list(false);
  auto taken = [&](const std::string& name) {
    for (const auto& other : existing) {
      if (other.group == probe.group && other.event == name) return true;
    }
    return false;
  };
  probe.event = base;
  if (taken(base)) {
    if (!force) {
      throw std::runtime_error(
          fmt::format("event \"{}\" already exists: remove it with probe -d {}:{}, or give -f for "
                      "another one beside it",
                      base, probe.group, base));
    }
    for (int i = 1; taken(probe.event); ++i) probe.event = fmt::format("{}_{}", base, i);
  }
  if (!dry_run) {
    write_line(root_ + (probe.kernel ? "/kprobe_events" : "/uprobe_events"),
               probe_definition_line(probe) + "\n");
  }
  return probe;
}

std::vector<DynamicProbe> DynamicProbes::remove(const std::string& pattern) {
  std::string full = pattern.find(':') == std::string::npos ? "*:" + pattern : pattern;
  std::vector<DynamicProbe> removed;
  for (const DynamicProbe& probe : list(false)) {
    std::string name = probe.group + ":" + probe.event;
    if (::fnmatch(full.c_str(), name.c_str(), 0) != 0) continue;
    write_line(root_ + (probe.kernel ? "/kprobe_events" : "/uprobe_events"),
               fmt::format("-:{}/{}\n", probe.group, probe.event));
    removed.push_back(probe);
  }
  return removed;
}

}  // namespace perfscope
