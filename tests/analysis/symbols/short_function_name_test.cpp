// perf's default spelling of C++ names: no parameter lists, return types or clone suffixes.
#include "analysis/symbols/short_function_name.hpp"

#include <gtest/gtest.h>

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
