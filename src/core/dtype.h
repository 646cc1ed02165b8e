#pragma once
// Element types and the exact conversions between them. Rounding is round-to-nearest-even
// everywhere (CPU and CUDA), so a value rounded on either backend has the same bits.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace verbatim {

enum class DType : uint8_t { F32, BF16, F16 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);        // "float32", "bfloat16", "float16"
DType parse_dtype(const std::string& s);  // accepts HF / safetensors spellings; throws Error

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// The value `f` takes once stored in dtype `t` (identity for F32).
inline float round_to(DType t, float f) {
  switch (t) {
    case DType::BF16: return bf16_to_f32(f32_to_bf16(f));
    case DType::F16: return f16_to_f32(f32_to_f16(f));
    default: return f;
  }
}
void round_inplace(DType t, float* x, size_t n);

}  // namespace verbatim
