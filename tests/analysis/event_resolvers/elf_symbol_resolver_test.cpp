// ElfSymbolResolver: symbol file offsets from .symtab/.dynsym, checked against the bytes at that
// offset, and uprobes placed through the grammar that count every call exactly.
#include "perfscope/analysis/event_resolvers/elf_symbol_resolver.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

using perfscope::ElfSymbolResolver;
using perfscope::Event;
using perfscope::EventParseOptions;
using ::testing::HasSubstr;

extern "C" [[gnu::noinline]] int resolver_test_target(int value) {
  asm volatile("" : "+r"(value));
  return value * 3 + 1;
}

namespace {

std::string own_path() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

bool uprobes_open_here() {
  return perfscope::PmuRegistry::system().find("uprobe") != nullptr &&
         perfscope::testing::running_as_root();
}

}  // namespace

TEST(ElfSymbolResolver, OffsetHoldsTheFunctionsBytes) {
  std::string path = own_path();
  ElfSymbolResolver resolver;
  auto found = resolver.file_offset(path, "resolver_test_target");
  ASSERT_TRUE(found.offset.has_value()) << found.error;
  auto image = perfscope::sys::read_text_file(path);
  ASSERT_TRUE(image.has_value());
  ASSERT_LT(*found.offset + 16, image->size());
  // The file bytes at the offset are the code this process runs for the function (the loaded
  // copy is unchanged unless a uprobe sits on it, and none does yet).
  EXPECT_EQ(std::memcmp(image->data() + *found.offset,
                        reinterpret_cast<const void*>(&resolver_test_target), 16),
            0);
}

TEST(ElfSymbolResolver, ExplainsWhatIsMissing) {
  ElfSymbolResolver resolver;
  auto typo = resolver.file_offset(own_path(), "resolver_test_targett");
  EXPECT_FALSE(typo.offset.has_value());
  EXPECT_THAT(typo.error, HasSubstr("no function 'resolver_test_targett'"));
  EXPECT_THAT(typo.error, HasSubstr("did you mean 'resolver_test_target'?"));
  auto missing = resolver.file_offset("/no/such/file", "main");
  EXPECT_THAT(missing.error, HasSubstr("cannot read '/no/such/file'"));
  auto not_elf = resolver.file_offset("/proc/self/status", "main");
  EXPECT_THAT(not_elf.error, HasSubstr("not an ELF file"));
}

TEST(ElfSymbolResolver, UprobeAndUretprobeCountEveryCall) {
  if (!uprobes_open_here()) GTEST_SKIP() << "uprobes need the uprobe PMU and root here";
  ElfSymbolResolver resolver;
  EventParseOptions options;
  options.symbols = &resolver;
  std::string path = own_path();
  auto groups = perfscope::parse_event_list(
      fmt::format("uprobe:{0}:resolver_test_target:u,uretprobe:{0}:resolver_test_target:u", path),
      options);
  ASSERT_EQ(groups.size(), 2u);
  auto entry = Event::open(groups[0].events[0].attr);
  auto exit = Event::open(groups[1].events[0].attr);
  entry.enable();
  exit.enable();
  int value = 0;
  for (int i = 0; i < 1234; ++i) value = resolver_test_target(value) & 0xffff;
  entry.disable();
  exit.disable();
  perfscope::Reading entries, exits;
  ASSERT_TRUE(entry.read(entries));
  ASSERT_TRUE(exit.read(exits));
  EXPECT_EQ(entries.value, 1234u);
  EXPECT_EQ(exits.value, 1234u);
}

TEST(ElfSymbolResolver, InstalledResolverServesTheDefaultParse) {
  perfscope::install_elf_symbol_resolver();
  auto groups =
      perfscope::parse_event_list(fmt::format("uprobe:{}:resolver_test_target+4", own_path()));
  ElfSymbolResolver resolver;
  auto found = resolver.file_offset(own_path(), "resolver_test_target");
  ASSERT_TRUE(found.offset.has_value());
  EXPECT_EQ(groups.at(0).events.at(0).attr.raw().config2, *found.offset + 4);
  perfscope::install_symbol_offset_resolver(nullptr);
}
