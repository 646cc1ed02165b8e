// matmul: y = x · W^T, and its row-parallel form (K in kTpChunks chunks, combined by a fixed tree).
// Threads split the rows of W (outputs), never one reduction (ops.h order).
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

// ks.n == 0: one dot over K (matmul); else ks.n chunks of K (matmul_kchunked and its partials).
struct Chunks {
  int64_t bounds[kTpChunks + 1] = {};
  int n = 0;
};

void matmul_impl(const float* x, int64_t M, const Mat& W, DType act, bool round, float* y, const Chunks& ks = {}) {
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
    for (int64_t t = 0; t < ntasks; ++t) {
      const int64_t n0 = t * kNTask, n1 = std::min(N, (t + 1) * kNTask);
      if (ks.n == 0)
        k.matmul_block(x + m0 * K, mc, W.data, W.dtype, K, n0, n1, y + m0 * N, N, act, round);
      else
        k.matmul_kchunk_block(x + m0 * K, mc, W.data, W.dtype, K, ks.bounds, ks.n, n0, n1, y + m0 * N, N, act,
                              round);
    }
  }
}

}  // namespace

void matmul(const float* x, int64_t M, const Mat& W, DType act, float* y) { matmul_impl(x, M, W, act, true, y); }

void matmul_f32out(const float* x, int64_t M, const Mat& W, float* y) {
  matmul_impl(x, M, W, DType::F32, false, y);
}

namespace {

// Chunks [c0, c1) of a K-long reduction, as offsets into the shard that starts at chunk c0.
Chunks shard_chunks(const Mat& W, int64_t K, int c0, int c1) {
  const int width = c1 - c0;
  if (c0 < 0 || c1 > kTpChunks || width <= 0 || (width & (width - 1)) || c0 % width)
    throw Error("matmul_kchunk_partial: chunks [" + std::to_string(c0) + ", " + std::to_string(c1) + ") of '" +
                W.name + "' are not one aligned subtree of the " + std::to_string(kTpChunks) + "-chunk tree");
  const int64_t base = kchunk_begin(K, c0);
  if (W.cols != kchunk_begin(K, c1) - base)
    throw Error("matmul_kchunk_partial: weight '" + W.name + "' has " + std::to_string(W.cols) +
                " columns but chunks [" + std::to_string(c0) + ", " + std::to_string(c1) + ") of K = " +
                std::to_string(K) + " span " + std::to_string(kchunk_begin(K, c1) - base));
  Chunks ks;
  ks.n = width;
  for (int c = 0; c <= width; ++c) ks.bounds[c] = kchunk_begin(K, c0 + c) - base;
  return ks;
}

}  // namespace

void matmul_kchunked(const float* x, int64_t M, const Mat& W, DType act, float* y) {
  matmul_impl(x, M, W, act, true, y, shard_chunks(W, W.cols, 0, kTpChunks));
}

void matmul_kchunk_partial(const float* x, int64_t M, const Mat& W, int64_t K, int c0, int c1, float* partial) {
  matmul_impl(x, M, W, DType::F32, false, partial, shard_chunks(W, K, c0, c1));
}

void combine_kchunk_partials(const float* const* parts, int count, int64_t n, DType act, float* y) {
  if (count <= 0 || count > kTpChunks || kTpChunks % count)
    throw Error("combine_kchunk_partials: " + std::to_string(count) + " parts do not tile the " +
                std::to_string(kTpChunks) + "-chunk tree");
  // Each element on its own: the upper levels of the matmul_kchunked tree, p[c] += p[c + w].
#pragma omp parallel for schedule(static) if (parallel_worth_it(n * count))
  for (int64_t i = 0; i < n; ++i) {
    float p[kTpChunks];
    for (int c = 0; c < count; ++c) p[c] = parts[c][i];
    for (int w = 1; w < count; w *= 2)
      for (int c = 0; c < count; c += 2 * w) p[c] = p[c] + p[c + w];
    y[i] = round_to(act, p[0]);
  }
}

}  // namespace verbatim::cpu
