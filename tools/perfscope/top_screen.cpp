#include "top_screen.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cstdio>
#include <stdexcept>

// Functions only: ncurses' macros (erase, clear, move, refresh, timeout) would rewrite the
// standard library's members of the same names.
#define NCURSES_NOMACROS 1
#include <ncurses.h>

namespace perfscope::cli {

namespace {

std::string without_trailing_spaces(std::string text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string key_text(const LiveRow& row, const TopColumns& columns) {
  std::string out;
  for (LiveSortKey key : columns.keys) {
    switch (key) {
      case LiveSortKey::comm: out += fmt::format("  {:<{}}", row.comm, columns.comm_width); break;
      case LiveSortKey::pid:
        out += fmt::format("  {:>7}:{:<{}}", row.pid, row.comm, columns.comm_width);
        break;
      case LiveSortKey::dso: out += fmt::format("  {:<{}}", row.dso, columns.dso_width); break;
      case LiveSortKey::sym:
        out += fmt::format("  [{}] {}", row.kernel ? 'k' : '.', row.symbol);
        break;
    }
  }
  return out;
}

const char* const help_lines[] = {
    "perfscope top: keys",
    "",
    "  Up/Down, PgUp/PgDn, Home/End   select a row",
    "  Enter                          show or hide the callers of the selected row (-g)",
    "  g                              call graph of the selected row: callers and callees (-g)",
    "  s                              filter rows by symbol text (empty: no filter)",
    "  d                              filter rows by DSO text (empty: no filter)",
    "  p                              pause or resume the display (sampling goes on)",
    "  h, ?                           this help",
    "  q                              quit (from a view: back to the table)",
    "  Esc, Left                      back to the table",
    "",
    "Overhead: share of the samples, old samples decaying by 7/8 at each refresh (perf top).",
    "[.] user space, [k] kernel. Press any key to go back.",
};

}  // namespace

TopColumns top_columns(const LiveSnapshot& snapshot, std::vector<LiveSortKey> keys, bool children) {
  TopColumns columns;
  columns.keys = std::move(keys);
  columns.children = children;
  for (const LiveRow& row : snapshot.rows) {
    columns.comm_width = std::max(columns.comm_width, row.comm.size());
    columns.dso_width = std::max(columns.dso_width, row.dso.size());
  }
  columns.comm_width = std::min<std::size_t>(columns.comm_width, 16);
  columns.dso_width = std::min<std::size_t>(columns.dso_width, 40);
  return columns;
}

std::string top_heading(const TopColumns& columns) {
  std::string out = columns.children ? "  Children      Self" : "  Overhead";
  if (columns.samples) out += "       Samples";
  for (LiveSortKey key : columns.keys) {
    switch (key) {
      case LiveSortKey::comm: out += fmt::format("  {:<{}}", "Command", columns.comm_width); break;
      case LiveSortKey::pid:
        out += fmt::format("  {:>7}:{:<{}}", "Pid", "Command", columns.comm_width);
        break;
      case LiveSortKey::dso:
        out += fmt::format("  {:<{}}", "Shared Object", columns.dso_width);
        break;
      case LiveSortKey::sym: out += "  Symbol"; break;
    }
  }
  return without_trailing_spaces(std::move(out));
}

std::string top_row(const LiveRow& row, const TopColumns& columns) {
  std::string out = columns.children ? fmt::format("  {:7.2f}%  {:7.2f}%", row.children, row.self)
                                     : fmt::format("  {:7.2f}%", row.self);
  if (columns.samples) out += fmt::format("  {:>12.0f}", row.weight);
  return without_trailing_spaces(out + key_text(row, columns));
}

void append_caller_lines(std::vector<std::string>& out, const std::vector<LiveCallEntry>& callers,
                         std::size_t indent) {
  for (const LiveCallEntry& caller : callers) {
    out.push_back(fmt::format("{:{}}--{:.2f}%-- [{}] {}  ({})", "", indent, caller.percent,
                              caller.kernel ? 'k' : '.', caller.symbol, caller.dso));
    append_caller_lines(out, caller.callers, indent + 4);
  }
}

std::vector<std::string> call_graph_lines(const LiveRow& row, const LiveCallGraph& graph,
                                          bool callchains) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("Call graph of [{}] {}  ({}):  self {:.2f}%  children {:.2f}%",
                              row.kernel ? 'k' : '.', row.symbol, row.dso, graph.self,
                              graph.children));
  lines.emplace_back();
  if (!callchains) {
    lines.emplace_back("No call chains: start top with -g to see callers and callees.");
    return lines;
  }
  auto section = [&](const char* title, const std::vector<LiveCallEntry>& entries) {
    lines.emplace_back(title);
    if (entries.empty()) lines.emplace_back("    (none)");
    for (const auto& entry : entries) {
      lines.push_back(fmt::format("  {:7.2f}%  [{}] {}  ({})", entry.percent,
                                  entry.kernel ? 'k' : '.', entry.symbol, entry.dso));
    }
    lines.emplace_back();
  };
  section("Callers (who calls it), share of its samples:", graph.callers);
  section("Callees (what it calls), share of its samples:", graph.callees);
  return lines;
}

TopScreen::TopScreen(const LiveProfile& profile, TopScreenSetup setup)
    : profile_(profile), setup_(std::move(setup)) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
    throw std::runtime_error(
        "the live view needs a terminal on standard input and output; use --stdio or "
        "--batch N for text snapshots");
  }
  std::setlocale(LC_ALL, "");  // UTF-8 names are drawn as characters
  screen_ = newterm(nullptr, stdout, stdin);
  if (screen_ == nullptr) {
    const char* term = std::getenv("TERM");
    throw std::runtime_error(fmt::format(
        "cannot start the live view: the terminal type '{}' is unknown to terminfo; set TERM "
        "(e.g. TERM=xterm-256color) or use --stdio",
        term ? term : ""));
  }
  cbreak();  // keys at once; Ctrl-C still sends SIGINT
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
}

TopScreen::~TopScreen() {
  curs_set(1);
  endwin();
  delscreen(screen_);  // what newterm allocated (LeakSanitizer checks the sanitizer build)
  std::fflush(stdout);
}

void TopScreen::take_snapshot() {
  std::string identity = selected_identity();
  LiveSnapshotOptions options;
  options.symbol_filter = setup_.symbol_filter;
  options.dso_filter = setup_.dso_filter;
  options.sort_by_children = setup_.children;
  options.percent_limit = setup_.percent_limit;
  snapshot_ = profile_.snapshot(options);
  // The selection follows its row when the order changes.
  TopColumns columns{setup_.keys, false, 0, 0};
  for (std::size_t i = 0; i < snapshot_.rows.size(); ++i) {
    if (!identity.empty() && key_text(snapshot_.rows[i], columns) == identity) {
      selected_ = i;
      return;
    }
  }
  if (selected_ >= snapshot_.rows.size())
    selected_ = snapshot_.rows.empty() ? 0 : snapshot_.rows.size() - 1;
}

std::string TopScreen::selected_identity() const {
  if (selected_ >= snapshot_.rows.size()) return {};
  TopColumns columns{setup_.keys, false, 0, 0};
  return key_text(snapshot_.rows[selected_], columns);
}

void TopScreen::show_interval(std::vector<std::string> header) {
  header_ = std::move(header);
  if (!paused_) take_snapshot();
  draw();
}

bool TopScreen::handle_keys() {
  bool changed = false;
  for (int ch = getch(); ch != ERR; ch = getch()) {
    if (ch == KEY_RESIZE) {
      changed = true;
      continue;
    }
    if (!key(ch)) return false;
    changed = true;
  }
  if (changed) draw();
  return true;
}

bool TopScreen::key(int ch) {
  if (mode_ == Mode::prompt_symbol || mode_ == Mode::prompt_dso) {
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
      (mode_ == Mode::prompt_symbol ? setup_.symbol_filter : setup_.dso_filter) = prompt_text_;
      mode_ = Mode::table;
      selected_ = 0;
      first_line_ = 0;
      take_snapshot();
    } else if (ch == 27) {
      mode_ = Mode::table;
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
      if (!prompt_text_.empty()) prompt_text_.pop_back();
    } else if (ch >= 32 && ch < 127) {
      prompt_text_.push_back(static_cast<char>(ch));
    }
    return true;
  }
  if (mode_ == Mode::help) {
    mode_ = Mode::table;
    return true;
  }
  if (mode_ == Mode::call_graph) {
    if (ch == 'q' || ch == 27 || ch == KEY_LEFT || ch == 'g' || ch == KEY_BACKSPACE) {
      mode_ = Mode::table;
      return true;
    }
  }
  std::size_t rows = snapshot_.rows.size();
  int page = std::max(1, LINES - 6);
  switch (ch) {
    case 'q':
    case 'Q': return false;
    case KEY_UP:
    case 'k':
      if (selected_ > 0) --selected_;
      break;
    case KEY_DOWN:
    case 'j':
      if (selected_ + 1 < rows) ++selected_;
      break;
    case KEY_PPAGE:
      selected_ -= std::min<std::size_t>(selected_, static_cast<std::size_t>(page));
      break;
    case KEY_NPAGE:
      selected_ = rows == 0 ? 0 : std::min(rows - 1, selected_ + static_cast<std::size_t>(page));
      break;
    case KEY_HOME: selected_ = 0; break;
    case KEY_END: selected_ = rows == 0 ? 0 : rows - 1; break;
    case '\n':
    case '\r':
    case KEY_ENTER:
    case KEY_RIGHT:
      if (selected_ < rows) {
        std::uint32_t function = snapshot_.rows[selected_].function;
        if (function == LiveRow::no_function) {
          message_ = "rows without the sym key have no callers to expand";
        } else if (!setup_.callchains) {
          message_ = "no call chains: start top with -g to expand callers";
        } else if (!expanded_.erase(function)) {
          expanded_.insert(function);
        }
      }
      break;
    case 'g':
      if (selected_ < rows) mode_ = Mode::call_graph;
      break;
    case 's':
    case 'd':
      mode_ = ch == 's' ? Mode::prompt_symbol : Mode::prompt_dso;
      prompt_text_ = ch == 's' ? setup_.symbol_filter : setup_.dso_filter;
      break;
    case 'p':
    case 'P':
      paused_ = !paused_;
      if (!paused_) take_snapshot();
      break;
    case 'h':
    case '?': mode_ = Mode::help; break;
    case 27:
    case KEY_LEFT: mode_ = Mode::table; break;
    default: break;
  }
  return true;
}

void TopScreen::draw_lines(const std::vector<std::string>& lines, int top, int height) {
  for (int i = 0; i < height && static_cast<std::size_t>(i) < lines.size(); ++i) {
    mvaddnstr(top + i, 0, lines[static_cast<std::size_t>(i)].c_str(), COLS);
  }
}

void TopScreen::draw_table(int top, int height) {
  TopColumns columns = top_columns(snapshot_, setup_.keys, setup_.children);
  columns.samples = setup_.samples;
  attron(A_REVERSE);
  mvaddnstr(top, 0, fmt::format("{:<{}}", top_heading(columns), COLS).c_str(), COLS);
  attroff(A_REVERSE);
  ++top;
  --height;
  if (snapshot_.rows.empty()) {
    mvaddnstr(top, 0,
              setup_.symbol_filter.empty() && setup_.dso_filter.empty()
                  ? "  (no samples yet)"
                  : "  (no row matches the filter: s or d with an empty text clears it)",
              COLS);
    return;
  }
  // The lines: each row, then its callers when expanded; `row_line` finds the selection.
  std::vector<std::string> lines;
  std::vector<std::size_t> row_line;
  for (const LiveRow& row : snapshot_.rows) {
    row_line.push_back(lines.size());
    lines.push_back(top_row(row, columns));
    if (row.function != LiveRow::no_function && expanded_.count(row.function)) {
      auto callers = profile_.caller_tree(row.function);
      if (callers.empty()) {
        lines.emplace_back(row.self > 0
                               ? "              (no callers: its samples have no call chain)"
                               : "              (no samples end here: g shows what it calls)");
      }
      append_caller_lines(lines, callers, 14);
    }
  }
  std::size_t selected_line = row_line[std::min(selected_, row_line.size() - 1)];
  auto visible = static_cast<std::size_t>(std::max(1, height));
  if (selected_line < first_line_) first_line_ = selected_line;
  if (selected_line >= first_line_ + visible) first_line_ = selected_line + 1 - visible;
  for (std::size_t i = 0; i < visible && first_line_ + i < lines.size(); ++i) {
    bool is_selected = first_line_ + i == selected_line;
    if (is_selected) attron(A_REVERSE);
    std::string text = lines[first_line_ + i];
    if (is_selected) text = fmt::format("{:<{}}", text, COLS);
    mvaddnstr(top + static_cast<int>(i), 0, text.c_str(), COLS);
    if (is_selected) attroff(A_REVERSE);
  }
}

void TopScreen::draw() {
  erase();
  int line = 0;
  attron(A_BOLD);
  for (const auto& text : header_) mvaddnstr(line++, 0, text.c_str(), COLS);
  attroff(A_BOLD);
  mvhline(line++, 0, ACS_HLINE, COLS);
  int height = LINES - line - 1;
  if (mode_ == Mode::help) {
    std::vector<std::string> lines(std::begin(help_lines), std::end(help_lines));
    draw_lines(lines, line, height);
  } else if (mode_ == Mode::call_graph && selected_ < snapshot_.rows.size()) {
    const LiveRow& row = snapshot_.rows[selected_];
    std::vector<std::string> lines;
    if (row.function == LiveRow::no_function) {
      lines.emplace_back("The call graph needs the sym sort key (e.g. --sort dso,sym).");
    } else {
      lines = call_graph_lines(row, profile_.call_graph(row.function), setup_.callchains);
      lines.emplace_back("Callers' chains:");
      append_caller_lines(lines, profile_.caller_tree(row.function), 2);
    }
    draw_lines(lines, line, height);
  } else {
    draw_table(line, height);
  }
  // The status line: prompt, filters, pause, the keys.
  std::string status;
  if (mode_ == Mode::prompt_symbol || mode_ == Mode::prompt_dso) {
    status = fmt::format("{} filter (Enter applies, Esc cancels): {}",
                         mode_ == Mode::prompt_symbol ? "Symbol" : "DSO", prompt_text_);
  } else {
    if (paused_) status += "[paused] ";
    if (!setup_.symbol_filter.empty())
      status += fmt::format("[symbol ~ {}] ", setup_.symbol_filter);
    if (!setup_.dso_filter.empty()) status += fmt::format("[dso ~ {}] ", setup_.dso_filter);
    if (!message_.empty()) {
      status += message_ + "  ";
      message_.clear();
    }
    status += mode_ == Mode::table
                  ? "q quit  g call graph  Enter callers  s/d filter  p pause  h help"
                  : "q/Esc back to the table  h help";
  }
  attron(A_REVERSE);
  mvaddnstr(LINES - 1, 0, fmt::format("{:<{}}", status, COLS).c_str(), COLS);
  attroff(A_REVERSE);
  if (mode_ == Mode::prompt_symbol || mode_ == Mode::prompt_dso)
    curs_set(1);
  else
    curs_set(0);
  refresh();
}

}  // namespace perfscope::cli

// term.h last: its capability macros (lines, columns, tab...) would rewrite names above.
#include <term.h>

namespace perfscope::cli {

bool top_terminal_known(const char* term, int& error) {
  error = 0;
  // Reads the entry (nothing is written to the terminal), then frees it.
  TERMINAL* saved = cur_term;
  bool known = setupterm(term, STDOUT_FILENO, &error) == OK;
  if (known) {
    del_curterm(cur_term);
    set_curterm(saved);
  }
  return known;
}

}  // namespace perfscope::cli
