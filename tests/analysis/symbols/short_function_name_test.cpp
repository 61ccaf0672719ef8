// perf's spelling of mangled names: the demangler perf links (libiberty), C++ and Rust, short
// and full; and the short-name rule, which gives perf's short form from a full one, on a table
// of hard names (tests/analysis/symbols/data/hard_names.tsv) and against c++filt.
#include "analysis/symbols/short_function_name.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/symbols/demangler.hpp"
#include "support/test_support.hpp"

namespace perfscope {
namespace {

TEST(ShortFunctionName, DropsParametersReturnTypesQualifiersAndClones) {
  struct Case {
    const char* full;
    const char* short_form;
  };
  for (auto [full, short_form] : {
           Case{"symtest::compute(int)", "symtest::compute"},
           Case{"long symtest::scaled<long>(long, long)", "symtest::scaled<long>"},
           Case{"(anonymous namespace)::spin(std::chrono::duration<long, std::ratio<1l, 1000l> >) "
                "[clone .constprop.0]",
                "(anonymous namespace)::spin"},
           Case{"std::vector<int, std::allocator<int> >::size() const",
                "std::vector<int, std::allocator<int> >::size"},
           Case{"Widget::operator()(int) &&", "Widget::operator()"},
           Case{"bool ns::operator< <int>(ns::Box<int> const&, ns::Box<int> const&)",
                "ns::operator< <int>"},
           Case{"std::ostream& operator<<(std::ostream&, Point const&)", "operator<<"},
           Case{"Pool::operator new(unsigned long)", "Pool::operator new"},
           Case{"Pool::operator delete[](void*)", "Pool::operator delete[]"},
           Case{"Meters::operator double() const", "Meters::operator double"},
           Case{"run()::{lambda(int)#1}::operator()(int) const",
                "run()::{lambda(int)#1}::operator()"},
           Case{"main", "main"},
           Case{"finish_task_switch.isra.0", "finish_task_switch.isra.0"},
           Case{"vtable for Widget", "vtable for Widget"},
       }) {
    EXPECT_EQ(short_function_name(full), short_form) << full;
  }
}

TEST(ShortFunctionName, LeavesUnbalancedTextAlone) {
  EXPECT_EQ(short_function_name("broken)"), "broken)");
  EXPECT_EQ(short_function_name("()"), "()");
  EXPECT_EQ(short_function_name(""), "");
}

struct HardName {
  std::string source, mangled, short_form, full;
};

std::vector<HardName> hard_names() {
  std::vector<HardName> names;
  std::ifstream file(PERFSCOPE_HARD_NAMES_TSV);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line.front() == '#') continue;
    std::istringstream fields(line);
    HardName name;
    std::getline(fields, name.source, '\t');
    std::getline(fields, name.mangled, '\t');
    std::getline(fields, name.short_form, '\t');
    std::getline(fields, name.full, '\t');
    names.push_back(std::move(name));
  }
  return names;
}

TEST(Demangler, SpellsHardNamesAsPerf) {
  std::vector<HardName> names = hard_names();
  ASSERT_GE(names.size(), 60U) << PERFSCOPE_HARD_NAMES_TSV;
  std::size_t rust = 0, boost = 0, llvm = 0, libstdcxx = 0;
  for (const HardName& name : names) {
    EXPECT_EQ(demangle_symbol(name.mangled.c_str(), DemangledForm::short_name), name.short_form)
        << name.mangled;
    EXPECT_EQ(demangle_symbol(name.mangled.c_str(), DemangledForm::full), name.full)
        << name.mangled;
    rust += name.source.starts_with("Rust");
    boost += name.source == "Boost";
    llvm += name.source == "LLVM";
    libstdcxx += name.source == "libstdc++";
  }
  EXPECT_GE(rust, 10U);
  EXPECT_GE(boost, 4U);
  EXPECT_GE(llvm, 6U);
  EXPECT_GE(libstdcxx, 10U);
  EXPECT_EQ(demangle_symbol("main"), "");
  EXPECT_EQ(demangle_symbol("_Z"), "");
  EXPECT_EQ(demangle_symbol("_Zgarbage"), "");
}

TEST(ShortFunctionName, GivesPerfsShortFormOfEveryHardCxxName) {
  for (const HardName& name : hard_names()) {
    if (name.source.starts_with("Rust")) continue;  // no parameter lists to drop
    EXPECT_EQ(short_function_name(name.full), name.short_form) << name.mangled;
    // A short form is its own short form, but where it ends in a conversion to a function
    // pointer ("operator void (X::*)()"), whose parentheses read as a parameter list.
    if (name.short_form.find("::*)(") == std::string::npos &&
        name.short_form.find("(*)(") == std::string::npos) {
      EXPECT_EQ(short_function_name(name.short_form), name.short_form) << name.mangled;
    }
  }
}

// c++filt is libiberty too, verbose: standard substitutions spelled out ("std::basic_string<char,
// ...>" for perf's "std::string") and Rust hashes shown. Every other C++ name: c++filt -p and
// c++filt give the table's spellings, so the table is checked against the real tool each run.
TEST(ShortFunctionName, TableAgreesWithCxxfilt) {
  auto abbreviated = [](const std::string& text) {
    for (const char* name : {"std::string", "std::istream", "std::ostream", "std::iostream"}) {
      if (text.find(name) != std::string::npos) return true;
    }
    return false;
  };
  std::vector<HardName> compared;
  std::vector<std::string> short_command{"c++filt", "-p"}, full_command{"c++filt"};
  for (HardName& name : hard_names()) {
    if (name.source.starts_with("Rust") || abbreviated(name.full)) continue;
    short_command.push_back(name.mangled);
    full_command.push_back(name.mangled);
    compared.push_back(std::move(name));
  }
  auto shorts = perfscope::testing::run_command(short_command);
  auto fulls = perfscope::testing::run_command(full_command);
  if (shorts.exit_status != 0 || fulls.exit_status != 0) {
    GTEST_SKIP() << "c++filt (binutils) does not run here";
  }
  std::istringstream short_lines(shorts.out), full_lines(fulls.out);
  for (const HardName& name : compared) {
    std::string short_line, full_line;
    ASSERT_TRUE(std::getline(short_lines, short_line) && std::getline(full_lines, full_line));
    EXPECT_EQ(short_line, name.short_form) << name.mangled;
    EXPECT_EQ(full_line, name.full) << name.mangled;
  }
  EXPECT_GE(compared.size(), 40U);
}

}  // namespace
TEST(WithoutSymbolVersion, DropsElfVersionsAsPerfPrintsNames) {
  EXPECT_EQ(without_symbol_version("__libc_start_main@@GLIBC_2.34"), "__libc_start_main");
  EXPECT_EQ(without_symbol_version("cfree@GLIBC_2.2.5"), "cfree");
  EXPECT_EQ(without_symbol_version("malloc"), "malloc");
  EXPECT_EQ(without_symbol_version("memcpy@plt"), "memcpy@plt");
  EXPECT_EQ(without_symbol_version("@weird"), "@weird");
  EXPECT_EQ(without_symbol_version("trailing@"), "trailing@");
}

}  // namespace perfscope
