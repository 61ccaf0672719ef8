// Whether two sets of repeated measurements of one count differ: Welch's t-test on their means
// (unequal variances, Welch-Satterthwaite degrees of freedom), the change in % with its
// confidence interval, a verdict, and how many repeats would resolve a given change.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace perfscope {

// The values of one count over repeated runs, summarized.
struct RepeatSummary {
  std::size_t runs = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
};
RepeatSummary summarize_repeats(std::span<const double> values) noexcept;

// Every count is read as a cost: more of it is slower.
enum class CountVerdict {
  faster,
  slower,
  no_significant_change,
  too_few_runs,  // fewer than 2 runs on a side: no variance, no interval
};
const char* count_verdict_name(CountVerdict verdict) noexcept;  // "faster", "no significant change"

struct CountComparison {
  RepeatSummary base, current;
  double difference = 0;  // current.mean - base.mean
  // 100 * difference / base.mean, and the confidence interval of the difference scaled the same
  // way; NaN when the base mean is 0 (or, for the interval, with too few runs).
  double change_percent = 0;
  double ci_low_percent = 0, ci_high_percent = 0;
  double ci_low = 0, ci_high = 0;  // of the difference, in the count's unit
  double degrees_of_freedom = 0;   // Welch-Satterthwaite; infinite when both sides are exact
  double p_value = 1;              // two-sided, of the hypothesis "same mean"
  double confidence = 0.95;
  CountVerdict verdict = CountVerdict::too_few_runs;
};

// Welch's two-sided test at `confidence` (0.95: a 95 % interval, significance at 5 %). The
// verdict is faster or slower exactly when the interval of the difference excludes 0.
CountComparison compare_counts(const RepeatSummary& base, const RepeatSummary& current,
                               double confidence = 0.95) noexcept;

// The repeats each side needs for a true change of `change_percent` (of the base mean) to come
// out significant at `confidence` with probability `power`, given each side's spread relative to
// its mean (coefficients of variation cv_base, cv_new): the smallest n with
//   n >= (t(confidence) + t(power))^2 * (cv_base^2 + cv_new^2) / change^2,
// the t quantiles at 2n - 2 degrees of freedom (two-sided for the confidence, one-sided for the
// power).
// nullopt when it cannot be estimated (fewer than 2 runs on a side, a zero base mean, change 0);
// at least 2.
std::optional<std::size_t> repeats_to_resolve(const RepeatSummary& base,
                                              const RepeatSummary& current, double change_percent,
                                              double confidence = 0.95,
                                              double power = 0.8) noexcept;

}  // namespace perfscope
