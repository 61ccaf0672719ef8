// The text of perfscope top's table (shared by the ncurses screen and --stdio) and the screen
// itself: rows with a selection, caller trees expanded in place, the call-graph view of one
// function, symbol and DSO filters typed at a prompt, pause, help. The terminal is given back by
// the destructor, which every way out of `top` passes (q, a stop signal, an error).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "perfscope/analysis/live/live_profile.hpp"

struct screen;  // ncurses' SCREEN

namespace perfscope::cli {

struct TopColumns {
  std::vector<LiveSortKey> keys;
  bool children = false;  // a Children column before Self
  bool samples = false;   // a Samples column after the shares (perf top -n)
  std::size_t comm_width = 7;
  std::size_t dso_width = 13;
};

// Column widths that fit the rows' names (the DSO column at most 40 wide).
TopColumns top_columns(const LiveSnapshot& snapshot, std::vector<LiveSortKey> keys, bool children);
std::string top_heading(const TopColumns& columns);
std::string top_row(const LiveRow& row, const TopColumns& columns);
// The caller tree under a row, one line per caller, indented by level.
void append_caller_lines(std::vector<std::string>& out, const std::vector<LiveCallEntry>& callers,
                         std::size_t indent);
// The call-graph view of one function as lines (also what --stdio would print for it).
std::vector<std::string> call_graph_lines(const LiveRow& row, const LiveCallGraph& graph,
                                          bool callchains);

// True when terminfo has an entry for `term` (the live view can draw on it); `error` gets
// setupterm's answer.
bool top_terminal_known(const char* term, int& error);

struct TopScreenSetup {
  std::vector<LiveSortKey> keys;
  bool children = false;
  bool callchains = false;
  std::string symbol_filter, dso_filter;
  double percent_limit = 0;
  bool samples = false;  // the Samples column
};

class TopScreen {
 public:
  // Takes over the terminal; throws std::runtime_error saying why when it cannot (no terminal,
  // unknown TERM).
  TopScreen(const LiveProfile& profile, TopScreenSetup setup);
  ~TopScreen();
  TopScreen(const TopScreen&) = delete;
  TopScreen& operator=(const TopScreen&) = delete;

  // A new interval: takes a snapshot (unless paused) and draws it under `header`.
  void show_interval(std::vector<std::string> header);
  // Reads the keys typed since the last call and redraws when they changed anything. False
  // when the user quit.
  bool handle_keys();

 private:
  enum class Mode { table, call_graph, help, prompt_symbol, prompt_dso };
  void take_snapshot();
  void draw();
  void draw_table(int top, int height);
  void draw_lines(const std::vector<std::string>& lines, int top, int height);
  bool key(int ch);
  std::string selected_identity() const;

  const LiveProfile& profile_;
  TopScreenSetup setup_;
  ::screen* screen_ = nullptr;
  std::vector<std::string> header_;
  LiveSnapshot snapshot_;
  Mode mode_ = Mode::table;
  bool paused_ = false;
  std::size_t selected_ = 0;
  std::size_t first_line_ = 0;        // scroll position of the table
  std::set<std::uint32_t> expanded_;  // functions whose caller trees are shown
  std::string prompt_text_;
  std::string message_;
};

}  // namespace perfscope::cli
