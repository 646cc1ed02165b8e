#pragma once
// The per-instruction-set hot loops (isa_body.inc), chosen once at startup from the CPU's
// features. Every variant computes the same bits (same lanes, same tree, no FMA); only the
// register tiling differs, which never changes an element's reduction order.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/ops.h"

namespace verbatim::cpu {

struct IsaKernels {
  const char* name;
  // y[m, n] (row stride ldy) for all m < M and n0 <= n < n1: x [M, K] (row stride K) times row n
  // of W ([N, K], storage `wt`), reduced in the ops.h order; rounded to `act` if `round`.
  void (*matmul_block)(const float* x, int64_t M, const void* W, DType wt, int64_t K, int64_t n0,
                       int64_t n1, float* y, int64_t ldy, DType act, bool round);
  // Same, but each output's K is reduced as `nchunks` (a power of two <= kTpChunks) consecutive
  // ranges [bounds[c], bounds[c+1]) (bounds[0] = 0, bounds[nchunks] = K), each a dot in the ops.h
  // order with its lanes counted from the range's first k, combined by the pairwise tree of
  // matmul_kchunked (ops.h).
  void (*matmul_kchunk_block)(const float* x, int64_t M, const void* W, DType wt, int64_t K,
                              const int64_t* bounds, int nchunks, int64_t n0, int64_t n1, float* y,
                              int64_t ldy, DType act, bool round);
  // sum_k a[k] * b[k] in the ops.h order (16 lanes, fixed tree).
  float (*dot)(const float* a, const float* b, int64_t K);
  // y[i] = y[i] + a * x[i]
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  // dst[i] = row[i] as fp32 (exact)
  void (*to_f32)(DType t, const void* row, float* dst, int64_t n);
  // s[j] = dot(q, rows[j]) * scale for n rows of D values in storage `t` (the ops.h dot order).
  void (*scores)(const float* q, const void* const* rows, DType t, int n, int64_t D, float scale, float* s);
  // pv[d] = sum_j p[j] * rows[j][d], summed from +0 in ascending j (one sum per d).
  void (*weighted_sum)(const float* p, const void* const* rows, DType t, int n, int64_t D, float* pv);
  // p[j] = round_act(exp_f32(s[j] - m))
  void (*exp_shifted)(const float* s, float m, int n, DType act, float* p);
  // out[i] = round_act(round_act(silu_f32(gate[i])) * up[i])
  void (*silu_mul)(const float* gate, const float* up, int64_t n, DType act, float* out);
};

namespace isa_generic { extern const IsaKernels kernels; }
namespace isa_avx2 { extern const IsaKernels kernels; }
namespace isa_avx512 { extern const IsaKernels kernels; }

// The variant in use: the best the CPU supports, unless a test forced one (ops.h testing).
const IsaKernels& isa();

}  // namespace verbatim::cpu
