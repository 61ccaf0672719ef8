#include "perfscope/analysis/event_resolvers/elf_symbol_resolver.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/core/event_names.hpp"

namespace perfscope {

namespace {

struct Match {
  GElf_Sym symbol;
  bool global;
};

}  // namespace

SymbolOffset ElfSymbolResolver::file_offset(const std::string& path,
                                            std::string_view symbol) const {
  ElfImage::OpenError failure;
  auto image = ElfImage::open(path, failure);
  if (!image) {
    if (failure.errnum == ENOEXEC)
      return {std::nullopt, fmt::format("'{}' is not an ELF file", path)};
    if (failure.errnum == ENOSYS) return {std::nullopt, failure.message};
    return {std::nullopt, fmt::format("cannot read '{}': {}", path, std::strerror(failure.errnum))};
  }
  Elf* elf = image->elf();
  if (image->type() == ET_REL) {
    return {std::nullopt, fmt::format("'{}' is an object file (.o); uprobes go into executables "
                                      "and shared libraries",
                                      path)};
  }
  std::optional<Match> best;
  std::vector<std::string> names;  // for a suggestion when nothing matches
  for (Elf64_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section && !best;
         section = elf_nextscn(elf, section)) {
      GElf_Shdr section_header;
      if (!gelf_getshdr(section, &section_header) || section_header.sh_type != wanted) continue;
      Elf_Data* data = elf_getdata(section, nullptr);
      if (!data || section_header.sh_entsize == 0) continue;
      std::size_t count = section_header.sh_size / section_header.sh_entsize;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym entry;
        if (!gelf_getsym(data, static_cast<int>(i), &entry)) continue;
        int type = GELF_ST_TYPE(entry.st_info);
        if ((type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC) ||
            entry.st_shndx == SHN_UNDEF || entry.st_shndx >= SHN_LORESERVE) {
          continue;
        }
        const char* name = elf_strptr(elf, section_header.sh_link, entry.st_name);
        if (!name) continue;
        if (symbol != name) {
          if (type == STT_FUNC && names.size() < 100000) names.emplace_back(name);
          continue;
        }
        bool global = GELF_ST_BIND(entry.st_info) != STB_LOCAL;
        if (!best || (global && !best->global)) best = Match{entry, global};
        if (global) break;
      }
    }
    if (best) break;
  }
  if (!best) {
    std::string suggestion;
    std::size_t best_distance = std::max<std::size_t>(2, symbol.size() / 3) + 1;
    for (const auto& name : names) {
      std::size_t distance = edit_distance(symbol, name);
      if (distance < best_distance) {
        best_distance = distance;
        suggestion = name;
      }
    }
    return {std::nullopt,
            fmt::format("no function '{}' in the symbol tables of '{}'{}", symbol, path,
                        suggestion.empty() ? std::string()
                                           : fmt::format("; did you mean '{}'?", suggestion))};
  }
  Elf_Scn* holder = elf_getscn(elf, best->symbol.st_shndx);
  GElf_Shdr holder_header;
  if (!holder || !gelf_getshdr(holder, &holder_header) || holder_header.sh_type == SHT_NOBITS) {
    return {std::nullopt,
            fmt::format("symbol '{}' of '{}' lies in no section with file contents", symbol, path)};
  }
  std::uint64_t address = best->symbol.st_value;
  if (address < holder_header.sh_addr || address >= holder_header.sh_addr + holder_header.sh_size) {
    return {std::nullopt,
            fmt::format("symbol '{}' of '{}' lies outside its section", symbol, path)};
  }
  return {address - holder_header.sh_addr + holder_header.sh_offset, {}};
}

void install_elf_symbol_resolver() {
  install_symbol_offset_resolver(std::make_shared<const ElfSymbolResolver>());
}

}  // namespace perfscope
