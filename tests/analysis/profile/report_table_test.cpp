// The report's text on a hand-made Profile, exactly, in the shapes perf report --stdio gives
// them (checked against perf 6.1 on recordings of tests/cli/data/call_tree_workload.cpp, which
// has the same shapes): with children, the row of a sample's own function shows the whole chain
// in caller trees and the rows of its callers show their callees; rows of equal share put the
// caller first; a function with self time and callees shows both branches; recursion counts
// once; calls inlined at the sampled address are marked "(inlined)" and get rows of their own;
// sorting by symbol first leaves the first frame of a tree out.
#include "perfscope/analysis/profile/report_table.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace perfscope;

// main -> outer (2 samples itself) -> inner (2 samples in spin, inlined into inner);
// main -> recurse (2 samples) -> recurse (2 samples).
Profile make_profile() {
  Profile p;
  p.dsos = {{"/usr/bin/demo", "", false}};
  p.functions = {{"main", 0, true},
                 {"outer", 0, true},
                 {"inner", 0, true},
                 {"recurse", 0, true},
                 {"spin", 0, true}};
  p.frames = {{0, 0x1000, 0x1000, "", 0, false, false}, {1, 0x1100, 0x1100, "", 0, false, false},
              {2, 0x1200, 0x1200, "", 0, false, false}, {3, 0x1300, 0x1300, "", 0, false, false},
              {4, 0x1200, 0x1200, "", 0, true, false},  {3, 0x1340, 0x1340, "", 0, false, false}};
  // 0 main; 1 outer<-main; 2 inner<-outer; 3 spin(inlined)<-inner; 4 recurse<-main;
  // 5 recurse<-recurse.
  p.stacks = {{no_index, 0}, {0, 1}, {1, 2}, {2, 4}, {0, 3}, {4, 5}};
  p.threads = {{100, 100, "demo"}};
  p.events = {{"cpu-clock", 8, 8000, true, 8000}};
  for (std::uint32_t stack : {1u, 1u, 3u, 3u, 4u, 4u, 5u, 5u}) {
    p.samples.push_back({stack, 0, 0, 0, 0, 1000});
  }
  p.summary.samples = p.summary.samples_read = 8;
  return p;
}

std::string report(ReportCallGraph graph, bool children, std::vector<ReportSortKey> sort) {
  ReportOptions options;
  options.sort = std::move(sort);
  options.children = children;
  options.call_graph = graph;
  options.show_samples = false;
  std::string text = render_report(make_profile(), options);
  // From the column titles on: the header is not what these tests are about.
  return text.substr(text.find("# Children") != std::string::npos ? text.find("# Children")
                                                                  : text.find("# Overhead"));
}

const std::vector<ReportSortKey> comm_dso_sym{ReportSortKey::comm, ReportSortKey::dso,
                                              ReportSortKey::sym};

TEST(ReportTable, ChildrenCallerTrees) {
  EXPECT_EQ(report(ReportCallGraph::caller, true, comm_dso_sym),
            R"(# Children      Self  Command  Shared Object  Symbol
# ........  ........  .......  .............  ..................
#
   100.00%     0.00%  demo     demo           [.] main
            |
            ---main
               |          
               |--50.00%--outer
               |          |          
               |           --25.00%--inner
               |                     spin (inlined)
               |          
                --50.00%--recurse
                          |          
                           --25.00%--recurse

    50.00%    50.00%  demo     demo           [.] recurse
            |
            ---main
               recurse
               |          
                --25.00%--recurse

    50.00%    25.00%  demo     demo           [.] outer
            |          
            |--25.00%--main
            |          outer
            |          
             --25.00%--outer
                       inner
                       spin (inlined)

    25.00%    25.00%  demo     demo           [.] inner
            |
            ---main
               outer
               inner
               spin (inlined)

    25.00%     0.00%  demo     demo           [.] spin (inlined)
            |
            ---spin (inlined)

)");
}

TEST(ReportTable, ChildrenCalleeTrees) {
  EXPECT_EQ(report(ReportCallGraph::callee, true, comm_dso_sym),
            R"(# Children      Self  Command  Shared Object  Symbol
# ........  ........  .......  .............  ..................
#
   100.00%     0.00%  demo     demo           [.] main
            |
            ---main

    50.00%    25.00%  demo     demo           [.] outer
            |
            ---outer
               main

    50.00%    50.00%  demo     demo           [.] recurse
            |
            ---recurse
               |          
               |--25.00%--main
               |          
                --25.00%--recurse
                          main

    25.00%    25.00%  demo     demo           [.] inner
            |
            ---spin (inlined)
               inner
               outer
               main

    25.00%     0.00%  demo     demo           [.] spin (inlined)
            |
            ---spin (inlined)
               inner
               outer
               main

)");
}

TEST(ReportTable, SortedBySymbolFirstTreesLeaveTheirFirstFrameOut) {
  EXPECT_EQ(report(ReportCallGraph::caller, true, {ReportSortKey::sym}),
            R"(# Children      Self  Symbol
# ........  ........  ..................
#
   100.00%     0.00%  [.] main
            |          
            |--50.00%--outer
            |          |          
            |           --25.00%--inner
            |                     spin (inlined)
            |          
             --50.00%--recurse
                       |          
                        --25.00%--recurse

    50.00%    50.00%  [.] recurse
            |
            ---recurse
               |          
                --25.00%--recurse

    50.00%    25.00%  [.] outer
            |          
            |--25.00%--main
            |          outer
            |          
             --25.00%--outer
                       inner
                       spin (inlined)

    25.00%    25.00%  [.] inner
            |
            ---outer
               inner
               spin (inlined)

    25.00%     0.00%  [.] spin (inlined)
)");
}

TEST(ReportTable, SelfRowsAreTheRealFunctionWithInlinedCallsInTheChain) {
  EXPECT_EQ(report(ReportCallGraph::callee, false, comm_dso_sym),
            R"(# Overhead  Command  Shared Object  Symbol
# ........  .......  .............  ...........
#
    50.00%  demo     demo           [.] recurse
            |
            ---recurse
               |          
               |--25.00%--main
               |          
                --25.00%--recurse
                          main

    25.00%  demo     demo           [.] inner
            |
            ---spin (inlined)
               inner
               outer
               main

    25.00%  demo     demo           [.] outer
            |
            ---outer
               main

)");
}

}  // namespace

// perf's Shared Object column is the last component of the path, of relative paths too (a
// RHEL 7 recording maps "64/ld-2.17.so": perf shows ld-2.17.so, hotspot's perf.data.true.v2).
TEST(ReportTable, SharedObjectIsTheLastPathComponent) {
  Profile profile = make_profile();
  profile.dsos = {{"64/ld-2.17.so", "", false}};
  ReportOptions options;
  options.sort = {ReportSortKey::dso};
  options.call_graph = ReportCallGraph::none;
  options.children = false;
  options.show_samples = false;
  ReportTable table = build_report_table(profile, 0, options);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].keys[0], "ld-2.17.so");
  profile.dsos = {{"[kernel.kallsyms]", "", true}};
  table = build_report_table(profile, 0, options);
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].keys[0], "[kernel.kallsyms]");
}
