#pragma once
// The one exp recipe of the CPU reference (ops.h: exp_f32), inline and branch-free so that
// loops over it vectorize; vector and scalar copies run the same IEEE operations per element.
#include <cstdint>
#include <cstring>

namespace verbatim::cpu::detail {

static inline __attribute__((always_inline)) float pow2i(int32_t e) {  // 2^e, -126 <= e <= 127
  const uint32_t u = uint32_t(e + 127) << 23;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static inline __attribute__((always_inline)) float exp_inline(float x) {
  const bool is_nan = x != x;
  const bool over = x > 88.72283935546875f;         // above ln(FLT_MAX): +inf
  const bool under = x < -103.97208404541015625f;   // below ln(2^-150): rounds to 0
  const float xc = (is_nan | over | under) ? 0.0f : x;
  // x = k ln2 + r, |r| <= ln2 / 2; ln2 split in two so k * 0.693359375 is exact (Cody-Waite).
  // k = floor(x / ln2 + 0.5): the nearest integer by adding and removing 1.5 * 2^23 (exact for
  // |y| < 2^22), then one down if that rounded up. Same value as floorf (the CUDA kernels use
  // floorf), spelled so GCC vectorizes it.
  const float y0 = xc * 1.44269504088896341f + 0.5f;
  const float rn = (y0 + 12582912.0f) - 12582912.0f;
  const float kf = rn - (rn > y0 ? 1.0f : 0.0f);
  const float r = (xc - kf * 0.693359375f) - kf * -2.12194440e-4f;
  // Cephes expf polynomial, Horner, each step a separate multiply and add.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = (p * (r * r) + r) + 1.0f;
  // y * 2^k in two exact power-of-two steps, so a subnormal result is rounded once.
  const int32_t k = int32_t(kf);
  const int32_t k1 = k / 2, k2 = k - k1;  // both in [-75, 64]
  const float e = (y * pow2i(k1)) * pow2i(k2);
  return is_nan ? x : over ? __builtin_inff() : under ? 0.0f : e;
}

}  // namespace verbatim::cpu::detail
