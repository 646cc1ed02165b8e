// matmul: y = x · W^T. Threads split the rows of W (outputs), never one reduction (ops.h order).
#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/test_flags.h"
#include "kernels/ops.h"

namespace verbatim::cpu {
namespace {

// x rows per pass (their K values stay in L2 while each W strip is reused across them) and W
// rows per OpenMP task. Blocking decides only which thread computes an element, never its order.
constexpr int64_t kMBlock = 64;
constexpr int64_t kNTask = 16;

// TEST ONLY (set_batch_dependent_matmul): K summed backwards, one scalar accumulator, when M > 1.
void matmul_reverse_for_test(const float* x, int64_t M, const Mat& W, DType act, bool round, float* y) {
  const int64_t N = W.rows, K = W.cols;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const char* row = static_cast<const char*>(W.data) + size_t(n * K) * dtype_size(W.dtype);
      float s = 0.0f;
      for (int64_t k = K - 1; k >= 0; --k) s = s + x[m * K + k] * simd::load_w1(W.dtype, row, k);
      y[m * N + n] = round ? round_to(act, s) : s;
    }
}

void matmul_impl(const float* x, int64_t M, const Mat& W, DType act, bool round, float* y) {
  const int64_t N = W.rows, K = W.cols;
  if (M <= 0 || N <= 0) return;
  if (!W.data || K <= 0) throw Error("matmul: weight '" + W.name + "' is empty");
  if (M > 1 && batch_dependent_matmul_for_test()) return matmul_reverse_for_test(x, M, W, act, round, y);
  const IsaKernels& k = isa();
  const int64_t ntasks = (N + kNTask - 1) / kNTask;
  const bool parallel = parallel_worth_it(2 * M * N * K);  // thread count changes no bit
#pragma omp parallel if (parallel)
  for (int64_t m0 = 0; m0 < M; m0 += kMBlock) {
    const int64_t mc = std::min(kMBlock, M - m0);
    // Dynamic: a thread the OS parks does not hold back the others (which thread computes a row
    // never changes its bits).
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t t = 0; t < ntasks; ++t)
      k.matmul_block(x + m0 * K, mc, W.data, W.dtype, K, t * kNTask, std::min(N, (t + 1) * kNTask),
                     y + m0 * N, N, act, round);
  }
}

}  // namespace

void matmul(const float* x, int64_t M, const Mat& W, DType act, float* y) { matmul_impl(x, M, W, act, true, y); }

void matmul_f32out(const float* x, int64_t M, const Mat& W, float* y) {
  matmul_impl(x, M, W, DType::F32, false, y);
}

}  // namespace verbatim::cpu
