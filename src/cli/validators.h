#pragma once
// CLI11 checks the commands share. CLI::Range lets NaN through (every comparison with NaN is
// false) and takes inf, so a floating-point option gets finite_range instead.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

namespace verbatim::cli {

// low_open: lo itself is refused, i.e. (lo, hi].
inline CLI::Validator finite_range(double lo, double hi, bool low_open = false) {
  std::ostringstream desc;
  desc << "FLOAT in " << (low_open ? "(" : "[") << lo << ", " << hi << "]";
  return CLI::Validator(
      [lo, hi, low_open](std::string& s) -> std::string {
        double v = 0;
        std::istringstream in(s);
        const bool parsed = (in >> v) && (in >> std::ws).eof();
        if (!parsed || !std::isfinite(v) || v < lo || (low_open && v == lo) || v > hi) {
          std::ostringstream m;
          m << "must be a finite number in " << (low_open ? "(" : "[") << lo << ", " << hi << "], got '" << s << "'";
          return m.str();
        }
        return {};
      },
      desc.str());
}

// CLI11 converts integer options with strtoll(s, 0), which reads "010" as octal 8 and "0x10" as
// 16, after the validators have passed the string unchanged: so a validator refuses any spelling
// but plain decimal digits (an optional '-', no leading zero).
inline bool plain_decimal(const std::string& s) {
  const size_t d = !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() == d) return false;
  for (size_t i = d; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return s.size() - d == 1 || s[d] != '0';
}

// An integer option (or each item of a list option) of at least `lo`, with a short message.
inline CLI::Validator at_least(long long lo, long long hi = (1LL << 31) - 1) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        long long v = 0;
        std::istringstream in(s);
        if (!plain_decimal(s) || !(in >> v) || !(in >> std::ws).eof())
          return "'" + s + "' is not a decimal integer (digits only, no leading zero)";
        if (v < lo || v > hi) return "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + s;
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// A seed option: plain decimal digits that fit T. CLI11 alone read 0x10 as 16 and saturated both
// 2^64 and -1 (for an unsigned T) to 2^64-1, so three different seeds typed gave one run.
template <typename T>
CLI::Validator decimal_seed() {
  static_assert(std::is_integral_v<T>);
  const std::string range = std::to_string(std::numeric_limits<T>::min()) + ", " + std::to_string(std::numeric_limits<T>::max());
  return CLI::Validator(
      [range](std::string& s) -> std::string {
        T v{};
        const char* end = s.data() + s.size();
        auto [ptr, ec] = std::from_chars(s.data(), end, v, 10);
        if (!plain_decimal(s) || ec != std::errc() || ptr != end)  // from_chars takes no '+', no prefix, no spaces
          return "must be a decimal integer in [" + range + "], got '" + s + "'";
        return {};
      },
      "INT in [" + range + "]");
}

// An output file (--json, --record, --plot): its folder exists and is writable and the path is not a
// folder, checked when the options are parsed, so a typo fails at once, not after a long run.
inline CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        namespace fs = std::filesystem;
        if (s.empty()) return "is empty";
        std::error_code ec;
        const fs::path p(s);
        if (fs::is_directory(p, ec)) return "'" + s + "' is a folder, not a file";
        // An existing file (/dev/null, /dev/stdout too) needs only itself writable; a new one, its folder.
        if (fs::exists(p, ec)) return ::access(p.c_str(), W_OK) == 0 ? "" : "'" + s + "' is not writable";
        const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
        if (!fs::is_directory(dir, ec)) return "the folder '" + dir.string() + "' of '" + s + "' does not exist";
        if (::access(dir.c_str(), W_OK) != 0) return "the folder '" + dir.string() + "' of '" + s + "' is not writable";
        return {};
      },
      "FILE");
}

}  // namespace verbatim::cli
