// Element-wise ops: RoPE, SiLU·mul, residual add, embedding rows. Each element is computed by one
// formula with fixed rounding points (docs/numerics.md); threads only split independent elements.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/test_flags.h"
#include "kernels/ops.h"

namespace verbatim::cpu {

void rope(float* x, int64_t T, int num_heads, int head_dim, const int32_t* positions, double theta,
          DType act) {
  if (head_dim % 2) throw Error("rope: head_dim " + std::to_string(head_dim) + " is odd");
  const int half = head_dim / 2;
  // As HF/torch in fp32: inv_freq = 1 / theta^(float(2i) / dim); angle = float(pos) * inv_freq.
  std::vector<float> inv_freq(half);
  const float base = float(theta);
  for (int i = 0; i < half; ++i)
    inv_freq[i] = 1.0f / std::pow(base, float(2 * i) / float(head_dim));
#pragma omp parallel if (parallel_worth_it(16 * T * num_heads * head_dim))
  {
    std::vector<float> cs(half), sn(half);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      const float p = float(positions[t]);
      for (int i = 0; i < half; ++i) {
        const float angle = p * inv_freq[i];
        cs[i] = std::cos(angle);
        sn[i] = std::sin(angle);
      }
      for (int h = 0; h < num_heads; ++h) {
        float* r = x + (t * num_heads + h) * head_dim;
        for (int i = 0; i < half; ++i) {
          const float a = r[i], b = r[i + half];
          // x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1): two products, one add.
          r[i] = round_to(act, a * cs[i] + (-b) * sn[i]);
          r[i + half] = round_to(act, b * cs[i] + a * sn[i]);
        }
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t T, int64_t D, DType act, float* out) {
  const int64_t n = T * D;
  const IsaKernels& k = isa();
  if (!parallel_worth_it(32 * n)) return k.silu_mul(gate, up, n, act, out);
  // Contiguous slices per thread: each element's formula is the same wherever it runs.
  const int64_t chunk = 4096;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i += chunk) k.silu_mul(gate + i, up + i, std::min(chunk, n - i), act, out + i);
}

void add_inplace(float* x, const float* y, int64_t n, DType act) {
#pragma omp parallel for schedule(static) if (parallel_worth_it(4 * n))
  for (int64_t i = 0; i < n; ++i) x[i] = round_to(act, x[i] + y[i]);
}

void embed(const Mat& E, const int32_t* tokens, int64_t T, float* out) {
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || tokens[t] >= E.rows)
      throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary of '" + E.name +
                  "' (" + std::to_string(E.rows) + " rows)");
  const IsaKernels& k = isa();
  const size_t row_bytes = size_t(E.cols) * dtype_size(E.dtype);
#pragma omp parallel for schedule(static) if (parallel_worth_it(4 * T * E.cols))
  for (int64_t t = 0; t < T; ++t)
    k.to_f32(E.dtype, static_cast<const char*>(E.data) + size_t(tokens[t]) * row_bytes, out + t * E.cols, E.cols);
}

}  // namespace verbatim::cpu
