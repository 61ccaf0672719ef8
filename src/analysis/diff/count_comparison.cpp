#include "perfscope/analysis/diff/count_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "perfscope/analysis/diff/student_t.hpp"
#include "perfscope/core/running_statistics.hpp"

namespace perfscope {

namespace {
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
}

RepeatSummary summarize_repeats(std::span<const double> values) noexcept {
  RunningStatistics statistics;
  for (double value : values) statistics.add(value);
  return {statistics.count(), statistics.mean(), statistics.stddev()};
}

const char* count_verdict_name(CountVerdict verdict) noexcept {
  switch (verdict) {
    case CountVerdict::faster: return "faster";
    case CountVerdict::slower: return "slower";
    case CountVerdict::no_significant_change: return "no significant change";
    case CountVerdict::too_few_runs: return "too few runs";
  }
  return "";
}

CountComparison compare_counts(const RepeatSummary& base, const RepeatSummary& current,
                               double confidence) noexcept {
  CountComparison out;
  out.base = base;
  out.current = current;
  out.confidence = confidence;
  out.difference = current.mean - base.mean;
  out.change_percent = base.mean != 0 ? 100.0 * out.difference / base.mean : not_a_number;
  out.ci_low = out.ci_high = out.ci_low_percent = out.ci_high_percent = not_a_number;
  out.degrees_of_freedom = not_a_number;
  out.p_value = not_a_number;
  if (base.runs < 2 || current.runs < 2) return out;

  double base_variance = base.stddev * base.stddev / static_cast<double>(base.runs);
  double current_variance = current.stddev * current.stddev / static_cast<double>(current.runs);
  double variance = base_variance + current_variance;
  double standard_error = std::sqrt(variance);
  if (standard_error == 0) {
    // Both sides repeated the same value exactly (counts the kernel makes exact): the
    // difference is known, and any difference is real.
    out.degrees_of_freedom = std::numeric_limits<double>::infinity();
    out.ci_low = out.ci_high = out.difference;
    out.p_value = out.difference == 0 ? 1.0 : 0.0;
  } else {
    out.degrees_of_freedom =
        variance * variance /
        (base_variance * base_variance / static_cast<double>(base.runs - 1) +
         current_variance * current_variance / static_cast<double>(current.runs - 1));
    double critical = student_t_quantile(0.5 + confidence / 2.0, out.degrees_of_freedom);
    out.ci_low = out.difference - critical * standard_error;
    out.ci_high = out.difference + critical * standard_error;
    double t = std::fabs(out.difference) / standard_error;
    out.p_value = 2.0 * (1.0 - student_t_cdf(t, out.degrees_of_freedom));
  }
  if (base.mean != 0) {
    out.ci_low_percent = 100.0 * out.ci_low / std::fabs(base.mean);
    out.ci_high_percent = 100.0 * out.ci_high / std::fabs(base.mean);
  }
  if (out.ci_low > 0) {
    out.verdict = CountVerdict::slower;
  } else if (out.ci_high < 0) {
    out.verdict = CountVerdict::faster;
  } else {
    out.verdict = CountVerdict::no_significant_change;
  }
  return out;
}

std::optional<std::size_t> repeats_to_resolve(const RepeatSummary& base,
                                              const RepeatSummary& current, double change_percent,
                                              double confidence, double power) noexcept {
  if (base.runs < 2 || current.runs < 2 || base.mean == 0 || change_percent == 0 ||
      !std::isfinite(change_percent)) {
    return std::nullopt;
  }
  // Each side's spread relative to its own mean: the relative variance of the change is about
  // the sum of the two over n (a side twice as large with the same relative noise is no
  // noisier).
  auto relative = [](const RepeatSummary& side) {
    return side.mean == 0 ? 0.0 : side.stddev / std::fabs(side.mean);
  };
  double cv2 = relative(base) * relative(base) + relative(current) * relative(current);
  double change = std::fabs(change_percent) / 100.0;
  if (cv2 == 0) return 2;
  // n appears on both sides (through the t quantiles' degrees of freedom): iterate from the
  // normal approximation until it settles.
  auto needed = [&](double n) {
    double df = std::max(2.0 * n - 2.0, 1.0);
    double z = student_t_quantile(0.5 + confidence / 2.0, df) + student_t_quantile(power, df);
    return z * z * cv2 / (change * change);
  };
  double n = needed(std::numeric_limits<double>::infinity() / 2);
  for (int i = 0; i < 50; ++i) {
    double next = needed(std::max(std::ceil(n), 2.0));
    if (std::ceil(next) == std::ceil(n)) break;
    n = next;
  }
  if (!(n < 1e12)) return std::nullopt;
  return std::max<std::size_t>(2, static_cast<std::size_t>(std::ceil(n)));
}

}  // namespace perfscope
