#pragma once
// Plain-text tables with aligned columns, as the seed page prints them.
#include <string>
#include <vector>

namespace verbatim::client {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str(int gap = 3) const;  // the last column is not padded

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// 1234.5 -> "1,235"; 140.63 -> "140.6"; the seed page's style for throughput.
std::string fmt_count(double v);
// An integer with thousands separators ("5,120").
std::string fmt_int(long long v);
// Fixed decimals ("6.9").
std::string fmt_fixed(double v, int decimals);
// A ratio as "2.4x" (two decimals when it rounds to 1.0x).
std::string fmt_ratio(double r);

}  // namespace verbatim::client
