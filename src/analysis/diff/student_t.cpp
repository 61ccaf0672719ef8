#include "perfscope/analysis/diff/student_t.hpp"

#include <cmath>
#include <limits>

namespace perfscope {

namespace {

// The continued fraction of the incomplete beta function (modified Lentz's method), which
// converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) noexcept {
  constexpr double tiny = 1e-300;
  constexpr double epsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double result = d;
  for (int m = 1; m <= 500; ++m) {
    double m2 = 2.0 * m;
    double numerator = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    result *= d * c;
    numerator = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double step = d * c;
    result *= step;
    if (std::fabs(step - 1.0) < epsilon) break;
  }
  return result;
}

// I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1.
double regularized_incomplete_beta(double a, double b, double x) noexcept {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  // The fraction converges on one side of the mean; the symmetry I_x(a,b) = 1 - I_1-x(b,a)
  // covers the other.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double degrees_of_freedom) noexcept {
  if (std::isnan(t) || !(degrees_of_freedom > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(degrees_of_freedom)) return 0.5 * std::erfc(-t / std::sqrt(2.0));
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  double nu = degrees_of_freedom;
  // P(|T| > |t|) = I_{nu / (nu + t^2)}(nu / 2, 1 / 2).
  double tail = 0.5 * regularized_incomplete_beta(nu / 2.0, 0.5, nu / (nu + t * t));
  return t > 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double degrees_of_freedom) noexcept {
  if (!(p > 0 && p < 1) || !(degrees_of_freedom > 0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (p == 0.5) return 0;
  // The distribution is symmetric: solve for the upper tail and mirror.
  double upper = p > 0.5 ? p : 1.0 - p;
  double low = 0, high = 1;
  while (student_t_cdf(high, degrees_of_freedom) < upper && high < 1e300) high *= 2;
  // Bisection to the last bits: the distribution function is monotonic, and 200 halvings of
  // any bracket reach double precision (each evaluation is a short continued fraction).
  for (int i = 0; i < 200 && high - low > 1e-15 * high; ++i) {
    double middle = 0.5 * (low + high);
    if (student_t_cdf(middle, degrees_of_freedom) < upper) {
      low = middle;
    } else {
      high = middle;
    }
  }
  double t = 0.5 * (low + high);
  return p > 0.5 ? t : -t;
}

}  // namespace perfscope
