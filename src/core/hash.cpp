#include "core/hash.h"

#include <cstdio>
#include <xxhash.h>

namespace verbatim {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(data, n, seed); }

uint64_t hash_combine(uint64_t a, uint64_t b) {
  uint64_t v[2] = {a, b};
  return XXH3_64bits(v, sizeof v);
}

std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace verbatim
