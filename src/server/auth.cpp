#include "server/auth.h"

#include <cstddef>

namespace verbatim::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited; differences are OR-ed, never branched on.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

}  // namespace verbatim::server
