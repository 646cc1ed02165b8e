#include "client/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace verbatim::client {

namespace {
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count UTF-8 characters, not bytes
  return n;
}
}  // namespace

std::string TextTable::str(int gap) const {
  std::vector<size_t> w(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], display_width(r[i]));
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) {
      s += r[i];
      if (i + 1 < r.size()) s.append(w[i] - display_width(r[i]) + static_cast<size_t>(gap), ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string fmt_fixed(double v, int decimals) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_count(double v) {
  if (std::isnan(v)) return "-";
  if (std::fabs(v) < 1000) return fmt_fixed(v, 1);
  return fmt_int(std::llround(v));
}

std::string fmt_int(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return (n < 0 ? "-" : "") + out;
}

std::string fmt_ratio(double r) {
  if (std::isnan(r) || std::isinf(r)) return "-";
  std::string s = fmt_fixed(r, 1);
  if (s == "1.0") s = fmt_fixed(r, 2);
  return s + "x";
}

}  // namespace verbatim::client
