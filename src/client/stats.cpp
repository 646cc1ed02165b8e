#include "client/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace verbatim::client {

double percentile(std::vector<double> v, double pct) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  double rank = pct / 100.0 * double(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = rank - double(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

}  // namespace verbatim::client
