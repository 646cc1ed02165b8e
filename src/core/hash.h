#pragma once
// Hashing for fingerprints, weight digests and prefix-cache block keys (XXH3, 64-bit).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace verbatim {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0);
inline uint64_t hash_str(std::string_view s, uint64_t seed = 0) { return hash_bytes(s.data(), s.size(), seed); }
// Order-dependent combination of two hashes.
uint64_t hash_combine(uint64_t a, uint64_t b);
std::string hex64(uint64_t h);  // 16 lowercase hex digits

}  // namespace verbatim
