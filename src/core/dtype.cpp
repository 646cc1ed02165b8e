#include "core/dtype.h"

#include "core/error.h"

namespace verbatim {

size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  if (s == "float32" || s == "F32" || s == "fp32" || s == "float") return DType::F32;
  if (s == "bfloat16" || s == "BF16" || s == "bf16") return DType::BF16;
  if (s == "float16" || s == "F16" || s == "fp16" || s == "half") return DType::F16;
  throw Error("unsupported dtype '" + s + "' (expected float32, bfloat16 or float16)");
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    // subnormal: value = man * 2^-24, exact in fp32
    float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (man << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);    // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);   // rounds to inf (>= 65520)
  if (a < 0x38800000u) {                                   // below the smallest normal: subnormal
    // round(|f| * 2^24) to nearest even, computed exactly via the fp32 bits
    if (a < 0x33000000u) return sign;                      // < 2^-25: rounds to zero
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;                             // 14..24 (bits below the f16 subnormal lsb)
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = a + 0x0fffu + ((a >> 13) & 1u);             // round mantissa to 10 bits, nearest even
  return uint16_t(sign | (((r >> 13) - (112u << 10)) & 0x7fffu));
}

void round_inplace(DType t, float* x, size_t n) {
  if (t == DType::F32) return;
  for (size_t i = 0; i < n; ++i) x[i] = round_to(t, x[i]);
}

}  // namespace verbatim
