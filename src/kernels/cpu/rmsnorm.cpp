// RMSNorm as HF Qwen3RMSNorm: fp32 mean of squares, x * rsqrt(mean + eps) rounded to the
// activation dtype, then times the weight, rounded again. One row is one reduction (ops.h order).
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/test_flags.h"
#include "kernels/ops.h"

namespace verbatim::cpu {

void rmsnorm(const float* x, int64_t M, int64_t D, const Mat& w, float eps, DType act, float* y) {
  if (w.rows * w.cols != D)
    throw Error("rmsnorm: weight '" + w.name + "' has " + std::to_string(w.rows * w.cols) +
                " values, expected " + std::to_string(D));
  const IsaKernels& k = isa();
  std::vector<float> wf(D);
  k.to_f32(w.dtype, w.data, wf.data(), D);
#pragma omp parallel for schedule(static) if (parallel_worth_it(8 * M * D))
  for (int64_t m = 0; m < M; ++m) {
    const float* r = x + m * D;
    float* o = y + m * D;
    const float mean = k.dot(r, r, D) / float(D);
    const float inv = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < D; ++i) o[i] = round_to(act, wf[i] * round_to(act, r[i] * inv));
  }
}

}  // namespace verbatim::cpu
