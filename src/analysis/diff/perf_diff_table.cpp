// perf diff's table (perf 6.1's builtin-diff.c columns, reproduced from its output): widths,
// blanks and N/A as perf prints them, so that what parses perf's parses ours.
#include "perfscope/analysis/diff/perf_diff_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

enum class Column { baseline, base_period, computed, formula, period, key };

struct ColumnSpec {
  Column kind;
  std::string title;
  std::size_t width;
};

// perf's formula buffer holds 70 characters with its terminator.
constexpr std::size_t formula_width = 70;

double percent_of(std::uint64_t period, std::uint64_t total) {
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(period) / static_cast<double>(total);
}

// One row's numbers, as perf computes them: shares against each side's denominator, the ratio
// and the weighted difference of the raw periods.
struct RowValues {
  bool in_base = false, in_new = false;
  std::uint64_t base_period = 0, new_period = 0;
  double delta = 0, ratio = 0;
  std::int64_t wdiff = 0;
};

class TableWriter {
 public:
  TableWriter(const PerfDiffLayout& layout, bool raw_names, fmt::memory_buffer& out)
      : layout_(layout), raw_names_(raw_names), out_(out) {}

  void event(const ProfileDiffEvent& event, const std::vector<ReportSortKey>& sort, bool first) {
    std::uint64_t base_total = layout_.relative_percentages ? event.base_period : event.base_total;
    std::uint64_t new_total =
        layout_.relative_percentages ? event.current_period : event.current_total;
    std::vector<const ProfileDiffRow*> rows;
    std::vector<RowValues> values;
    // -b: perf removes the unmatched rows before its shares are summed again, so Baseline is a
    // share of what is left; the computed deltas keep the whole totals (computed before).
    std::uint64_t kept_base_period = 0;
    for (const auto& row : event.rows) {
      if (layout_.baseline_only && !(row.base.present && row.current.present)) continue;
      RowValues v;
      v.in_base = row.base.present;
      v.in_new = row.current.present;
      v.base_period = row.base.self_period;
      v.new_period = row.current.self_period;
      v.delta = percent_of(v.new_period, new_total) - percent_of(v.base_period, base_total);
      v.ratio = static_cast<double>(v.new_period) /
                static_cast<double>(std::max<std::uint64_t>(v.base_period, 1));
      v.wdiff = static_cast<std::int64_t>(v.new_period) * layout_.wdiff_new_weight -
                static_cast<std::int64_t>(v.base_period) * layout_.wdiff_base_weight;
      kept_base_period += v.base_period;
      rows.push_back(&row);
      values.push_back(v);
    }
    baseline_total_ = layout_.baseline_only ? kept_base_period : base_total;
    new_total_ = new_total;
    order(rows, values);

    if (!layout_.quiet) {
      fmt::format_to(std::back_inserter(out_), "{}# Event '{}'\n#\n", first ? "" : "\n",
                     shown(event.name));
    }
    std::vector<ColumnSpec> columns = column_specs(sort, rows);
    if (!layout_.quiet) header(columns);
    bool last_is_symbol = !sort.empty() && sort.back() == ReportSortKey::sym;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      line(columns, *rows[r], values[r], last_is_symbol);
    }
  }

 private:
  std::string shown(std::string_view text) const {
    return raw_names_ ? std::string(text) : terminal_safe(text);
  }
  bool separated() const { return !layout_.field_separator.empty(); }

  // perf's order: the computed value, largest first, of the rows NEW has (ratio and wdiff: of
  // the rows both have, then NEW's own), the rows BASE alone has last; -o 0: by BASE's period.
  // Equal values keep the keys' order.
  void order(std::vector<const ProfileDiffRow*>& rows, std::vector<RowValues>& values) const {
    std::vector<std::size_t> index(rows.size());
    for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
    auto rank = [&](const RowValues& v) {
      if (!v.in_new) return 2;
      bool needs_base =
          layout_.compute == PerfDiffCompute::ratio || layout_.compute == PerfDiffCompute::wdiff;
      return needs_base && !v.in_base ? 1 : 0;
    };
    auto computed = [&](const RowValues& v) -> double {
      if (rank(v) != 0) return 0;
      switch (layout_.compute) {
        case PerfDiffCompute::delta_abs: return std::fabs(v.delta);
        case PerfDiffCompute::delta: return v.delta;
        case PerfDiffCompute::ratio: return v.ratio;
        case PerfDiffCompute::wdiff: return static_cast<double>(v.wdiff);
      }
      return 0;
    };
    // -o 0 orders by BASE's period first, then as without it.
    std::stable_sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) {
      const RowValues &va = values[a], &vb = values[b];
      if (layout_.sort_by_baseline && va.base_period != vb.base_period) {
        return va.base_period > vb.base_period;
      }
      if (rank(va) != rank(vb)) return rank(va) < rank(vb);
      if (computed(va) != computed(vb)) return computed(va) > computed(vb);
      // Then perf's fallback: the larger period first.
      if (va.base_period != vb.base_period) return va.base_period > vb.base_period;
      if (va.new_period != vb.new_period) return va.new_period > vb.new_period;
      // perf's order of what is still equal follows its DSO and symbol objects, not their
      // names: the keys' text keeps ours stable.
      return rows[a]->keys < rows[b]->keys;
    });
    std::vector<const ProfileDiffRow*> sorted_rows;
    std::vector<RowValues> sorted_values;
    for (std::size_t i : index) {
      sorted_rows.push_back(rows[i]);
      sorted_values.push_back(values[i]);
    }
    rows = std::move(sorted_rows);
    values = std::move(sorted_values);
  }

  std::vector<ColumnSpec> column_specs(const std::vector<ReportSortKey>& sort,
                                       const std::vector<const ProfileDiffRow*>& rows) const {
    std::vector<ColumnSpec> columns{{Column::baseline, "Baseline", 8}};
    if (layout_.show_period) columns.push_back({Column::base_period, "Base period", 14});
    switch (layout_.compute) {
      case PerfDiffCompute::delta_abs: columns.push_back({Column::computed, "Delta Abs", 9}); break;
      case PerfDiffCompute::delta: columns.push_back({Column::computed, "Delta", 7}); break;
      case PerfDiffCompute::ratio: columns.push_back({Column::computed, "Ratio", 14}); break;
      case PerfDiffCompute::wdiff:
        columns.push_back({Column::computed, "Weighted diff", 14});
        break;
    }
    if (layout_.show_formula) columns.push_back({Column::formula, "Formula", formula_width});
    if (layout_.show_period) columns.push_back({Column::period, "Period", 14});
    for (std::size_t k = 0; k < sort.size(); ++k) {
      std::string title(report_sort_key_title(sort[k]));
      std::size_t width = title.size();
      for (const auto* row : rows) width = std::max(width, shown(row->keys[k]).size());
      columns.push_back({Column::key, std::move(title), width});
    }
    return columns;
  }

  void pad(std::size_t printed, std::size_t width) {
    if (printed < width) out_.append(std::string(width - printed, ' '));
  }

  void header(const std::vector<ColumnSpec>& columns) {
    std::string_view between = separated() ? std::string_view(layout_.field_separator) : "  ";
    out_.append(std::string_view("# "));
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c != 0) out_.append(between);
      bool key = columns[c].kind == Column::key;
      if (!key) pad(columns[c].title.size(), columns[c].width);
      out_.append(columns[c].title);
      if (key) pad(columns[c].title.size(), columns[c].width);
    }
    out_.push_back('\n');
    if (separated()) return;
    out_.append(std::string_view("# "));
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c != 0) out_.append(between);
      out_.append(std::string(columns[c].width, '.'));
    }
    out_.append(std::string_view("\n#\n"));
  }

  std::string formula(const RowValues& v) const {
    std::string text;
    switch (layout_.compute) {
      case PerfDiffCompute::delta_abs:
      case PerfDiffCompute::delta:
        text = fmt::format("({} * 100 / {}) - ({} * 100 / {})", v.new_period, new_total_,
                           v.base_period, baseline_total_);
        break;
      case PerfDiffCompute::ratio:
        text = fmt::format("{} / {}", v.new_period, v.base_period);
        break;
      case PerfDiffCompute::wdiff:
        text = fmt::format("({} * {}) - ({} * {})", v.new_period, layout_.wdiff_new_weight,
                           v.base_period, layout_.wdiff_base_weight);
        break;
    }
    if (text.size() >= formula_width) text.resize(formula_width - 1);
    return text;
  }

  std::string cell(Column kind, const RowValues& v) const {
    switch (kind) {
      case Column::baseline: {
        if (!v.in_base) return {};
        std::string text = fmt::format("{:.2f}", percent_of(v.base_period, baseline_total_));
        if (!separated()) text += '%';
        return text;
      }
      case Column::base_period: return fmt::format("{}", v.base_period);
      case Column::period: return v.in_new ? fmt::format("{}", v.new_period) : std::string();
      case Column::formula: return v.in_new ? formula(v) : std::string();
      case Column::computed:
        if (!v.in_new) return {};
        switch (layout_.compute) {
          case PerfDiffCompute::delta_abs:
          case PerfDiffCompute::delta: return fmt::format("{:+.2f}%", v.delta);
          case PerfDiffCompute::ratio:
            if (!v.in_base) return "N/A";
            // Without -t perf prints every value (its colour printer); with -t, not zeros.
            return v.ratio > 0 || !separated() ? fmt::format("{:14.6f}", v.ratio) : std::string();
          case PerfDiffCompute::wdiff:
            if (!v.in_base) return "N/A";
            return v.wdiff != 0 || !separated() ? fmt::format("{:14}", v.wdiff) : std::string();
        }
        return {};
      case Column::key: break;
    }
    return {};
  }

  // Numbers right-aligned (-t: left-aligned, padded); keys left-aligned, the symbol unpadded
  // when it is the last column; -t's separator inside a key's text becomes '.' (perf's
  // repsep_snprintf).
  void line(const std::vector<ColumnSpec>& columns, const ProfileDiffRow& row, const RowValues& v,
            bool last_is_symbol) {
    std::string_view between = separated() ? std::string_view(layout_.field_separator) : "  ";
    if (!separated()) out_.append(std::string_view("  "));
    std::size_t key = 0;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c != 0) out_.append(between);
      bool last = c + 1 == columns.size();
      if (columns[c].kind == Column::key) {
        std::string text = shown(row.keys[key++]);
        if (separated()) std::replace(text.begin(), text.end(), layout_.field_separator[0], '.');
        out_.append(text);
        if (!(last && last_is_symbol)) pad(text.size(), columns[c].width);
        continue;
      }
      std::string text = cell(columns[c].kind, v);
      if (!separated()) pad(text.size(), columns[c].width);
      out_.append(text);
      if (separated()) pad(text.size(), columns[c].width);
    }
    out_.push_back('\n');
  }

  const PerfDiffLayout& layout_;
  bool raw_names_;
  fmt::memory_buffer& out_;
  std::uint64_t baseline_total_ = 0, new_total_ = 0;
};

std::int64_t parse_weight(std::string_view text, std::string_view whole) {
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0) {
    throw std::invalid_argument(fmt::format(
        "-c '{}': wdiff's weights are two non-zero integers: wdiff:W1,W2 (NEW's period x W2 - "
        "BASE's x W1)",
        whole));
  }
  return value;
}

}  // namespace

void parse_perf_diff_compute(std::string_view text, PerfDiffLayout& layout) {
  std::string_view name = text.substr(0, text.find(':'));
  bool has_argument = name.size() != text.size();
  if (name == "wdiff") {
    std::string_view weights = has_argument ? text.substr(name.size() + 1) : std::string_view();
    std::size_t comma = weights.find(',');
    if (comma == std::string_view::npos) parse_weight("", text);
    layout.wdiff_base_weight = parse_weight(weights.substr(0, comma), text);
    layout.wdiff_new_weight = parse_weight(weights.substr(comma + 1), text);
    layout.compute = PerfDiffCompute::wdiff;
    return;
  }
  if (name == "cycles") {
    throw std::invalid_argument(
        "-c cycles compares the cycles of basic blocks from LBR branch records "
        "(record -b): perfscope's diff compares shares; use delta, delta-abs, ratio or "
        "wdiff:W1,W2");
  }
  if (has_argument) {
    throw std::invalid_argument(
        fmt::format("-c '{}': only wdiff takes a value after ':' (wdiff:W1,W2)", text));
  }
  if (name == "delta") {
    layout.compute = PerfDiffCompute::delta;
  } else if (name == "delta-abs") {
    layout.compute = PerfDiffCompute::delta_abs;
  } else if (name == "ratio") {
    layout.compute = PerfDiffCompute::ratio;
  } else {
    throw std::invalid_argument(fmt::format(
        "-c '{}' is not a computation: use delta, delta-abs (the default), ratio or wdiff:W1,W2",
        text));
  }
}

std::string render_perf_diff(const ProfileDiff& diff, const PerfDiffLayout& layout,
                             bool raw_names) {
  if (diff.children) {
    throw std::invalid_argument(
        "perf's diff table (-c, -p, -F, -b, -o, -t, --percentage) compares self shares: leave "
        "out --children, or leave out those options for perfscope's table with inclusive shares");
  }
  fmt::memory_buffer out;
  TableWriter writer(layout, raw_names, out);
  for (std::size_t e = 0; e < diff.events.size(); ++e) {
    writer.event(diff.events[e], diff.sort, e == 0);
  }
  return fmt::to_string(out);
}

}  // namespace perfscope
