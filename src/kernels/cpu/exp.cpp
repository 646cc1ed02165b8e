// exp_f32 and silu_f32: a fixed recipe instead of libm, whose result can differ between library
// versions and between the FMA / non-FMA code paths it picks at run time.
#include <cmath>

#include "core/dtype.h"
#include "kernels/ops.h"

namespace verbatim::cpu {
namespace {
inline float pow2(int e) { return bits_f32(uint32_t(e + 127) << 23); }  // 2^e for -126 <= e <= 127
}  // namespace

float exp_f32(float x) {
  if (x != x) return x;                    // NaN
  if (x > 88.72283935546875f) return INFINITY;  // above ln(FLT_MAX)
  if (x < -103.97208404541015625f) return 0.0f;  // below ln(2^-150): rounds to zero
  // x = k ln2 + r, |r| <= ln2 / 2; ln2 split in two so k * kLn2Hi is exact (Cody-Waite).
  const float kf = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = (x - kf * 0.693359375f) - kf * -2.12194440e-4f;
  // Cephes expf polynomial (Horner, every step a separate multiply and add).
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = (p * (r * r) + r) + 1.0f;
  // y * 2^k in two exact steps so results in the subnormal range are rounded once.
  const int k = int(kf);
  const int k1 = k / 2, k2 = k - k1;  // both in [-75, 64]: normal powers of two
  return (y * pow2(k1)) * pow2(k2);
}

float silu_f32(float x) { return x / (1.0f + exp_f32(-x)); }

}  // namespace verbatim::cpu
