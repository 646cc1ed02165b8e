// Reading a GEMM's output as its consumer does (GemmResult, fused.h): the rounded y, or the
// split-K partials summed in the fixed order and rounded. Shared by the fused glue kernels
// (fused.cu) and the stream GEMM's norm prologue (gemm_stream.cu), so both read the same bits.
#pragma once

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fused.h"

namespace verbatim::cuda::gemm_result {

// The consumer's fixed order of adding the split-K partials of one element (its segment-0 value,
// seg: elements between segments): segment 0, then 1, 2, ... in order (gemm_reduce_kernel's
// arithmetic), then one rounding. Every fused consumer adds partials through sum_parts only, for
// any split count (the row-parallel o_proj / down_proj use the same order). V is float (one
// element) or float4 (4 consecutive elements, one 16-byte load a segment).
__device__ __forceinline__ float load_part(const float* p, float) { return *p; }
__device__ __forceinline__ float4 load_part(const float* p, float4) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float add_part(float a, float b) { return fadd(a, b); }
__device__ __forceinline__ float4 add_part(float4 a, float4 b) {
  return make_float4(fadd(a.x, b.x), fadd(a.y, b.y), fadd(a.z, b.z), fadd(a.w, b.w));
}
// R elements (p[r]: element r's segment 0) of S segments, every load of every element issued
// before the first add (same adds, same order per element).
template <typename V, int S, int R>
__device__ __forceinline__ void sum_parts_n(const float* const (&p)[R], int64_t seg, V (&out)[R]) {
  V q[S][R];
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int r = 0; r < R; ++r) q[s][r] = load_part(p[r] + int64_t(s) * seg, V{});
#pragma unroll
  for (int r = 0; r < R; ++r) out[r] = q[0][r];
#pragma unroll
  for (int s = 1; s < S; ++s)
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] = add_part(out[r], q[s][r]);
}
// The split counts in use (gemm_split_for gives 1, 2 or 4 on the Qwen3 shapes; o / down take 8)
// take the loads-first form: as a loop with a run-time count, nvcc's unroll by 8 left split 8's
// seven adds in its remainder, where each load sits behind a branch on the add before it, so the
// partials came in seven dependent L2 round trips (the PTX of add_rmsnorm_from, session 19; ncu
// 7.7 -> 5.4 us a launch at one row, 8B batch 1 -2.0%). Elements summed in one call share the
// batch of loads (SiLU-mul's gate and up: two calls would put the second's loads behind the
// first's switch).
template <typename V, int R>
__device__ __forceinline__ void sum_parts(const float* const (&p)[R], int64_t seg, int split, V (&out)[R]) {
  switch (split) {
    case 2: return sum_parts_n<V, 2, R>(p, seg, out);
    case 4: return sum_parts_n<V, 4, R>(p, seg, out);
    case 8: return sum_parts_n<V, 8, R>(p, seg, out);
    default: break;
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    out[r] = load_part(p[r], V{});
    for (int s = 1; s < split; ++s) out[r] = add_part(out[r], load_part(p[r] + int64_t(s) * seg, V{}));
  }
}
template <typename T>
__device__ __forceinline__ float round_part(float v) { return round_as<T>(v); }
template <typename T>
__device__ __forceinline__ float4 round_part(float4 v) {
  return make_float4(round_as<T>(v.x), round_as<T>(v.y), round_as<T>(v.z), round_as<T>(v.w));
}
// Elements (row, cols[r]) of a split GEMM's output (4 consecutive from each when V is float4):
// the partials summed in the fixed order above and rounded.
template <typename T, typename V, int R>
__device__ __forceinline__ void gemm_partials(const GemmResult& g, int64_t row, const int64_t (&cols)[R], V (&out)[R]) {
  const float* p[R];
#pragma unroll
  for (int r = 0; r < R; ++r) p[r] = g.partials + row * g.N + cols[r];
  sum_parts<V, R>(p, int64_t(g.M) * g.N, g.split, out);
#pragma unroll
  for (int r = 0; r < R; ++r) out[r] = round_part<T>(out[r]);
}

// Element (row, col) of a GEMM output: the rounded value, or the split-K partials summed in
// the fixed order above and rounded.
template <typename T>
__device__ __forceinline__ float gemm_value(const GemmResult& g, int64_t row, int64_t col) {
  if (!g.partials) return to_f(static_cast<const T*>(g.y)[row * g.ld + col]);
  float v[1];
  gemm_partials<T>(g, row, {col}, v);
  return v[0];
}
// Elements (row, col..col+3), each exactly gemm_value. Needs col % 4 == 0 and 16-byte aligned
// partials rows (N % 4 == 0) or 8-byte aligned y rows (ld % 4 == 0): gemm_vec4_ok checks.
template <typename T>
__device__ __forceinline__ float4 gemm_value4(const GemmResult& g, int64_t row, int64_t col) {
  if (!g.partials) {
    const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const T*>(g.y) + row * g.ld + col);
    return make_float4(lo_f<T>(v.x), hi_f<T>(v.x), lo_f<T>(v.y), hi_f<T>(v.y));
  }
  float4 v[1];
  gemm_partials<T>(g, row, {col}, v);
  return v[0];
}
// gemm_value4 at (row, c0) into a and at (row, c1) into b, every load before the first add.
template <typename T>
__device__ __forceinline__ void gemm_value4_pair(const GemmResult& g, int64_t row, int64_t c0, int64_t c1, float4& a,
                                                 float4& b) {
  if (!g.partials) {
    a = gemm_value4<T>(g, row, c0);
    b = gemm_value4<T>(g, row, c1);
    return;
  }
  float4 v[2];
  gemm_partials<T>(g, row, {c0, c1}, v);
  a = v[0];
  b = v[1];
}
}  // namespace verbatim::cuda::gemm_result
