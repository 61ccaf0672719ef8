// Student's t distribution for any positive number of degrees of freedom, whole or not (Welch's
// test gives fractional ones): its distribution function and its quantiles, from the regularized
// incomplete beta function. What `perfscope diff` builds its confidence intervals on.
#pragma once

namespace perfscope {

// P(T <= t) for T with `degrees_of_freedom` (> 0) degrees of freedom; the normal distribution's
// for infinite ones.
double student_t_cdf(double t, double degrees_of_freedom) noexcept;

// The t with P(T <= t) = p, for 0 < p < 1 (NaN outside): student_t_quantile(0.975, 10) is
// 2.228139 (the 95 % two-sided critical value for 10 degrees of freedom).
double student_t_quantile(double p, double degrees_of_freedom) noexcept;

}  // namespace perfscope
