#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace verbatim::unicode {

bool contains(std::span<const CodepointRange> table, char32_t cp) {
  auto it = std::upper_bound(table.begin(), table.end(), cp, [](char32_t c, const CodepointRange& r) { return c < r.first; });
  return it != table.begin() && cp <= (it - 1)->last;
}

}  // namespace verbatim::unicode
