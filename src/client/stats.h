#pragma once
// Order statistics for latency figures and first-difference positions.
#include <vector>

namespace verbatim::client {

// Linear interpolation between closest ranks (numpy's default); NaN for an empty sample.
double percentile(std::vector<double> values, double pct);
inline double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

}  // namespace verbatim::client
