#pragma once
// The RMSNorm reduction of one row by one block, shared by rmsnorm.cu and fused.cu. Its bits are
// cpu::rmsnorm's: lanes 0..15 of warp 0 are the reference's 16 lanes (lane l sums x[k]^2 for
// k = l, l+16, ... in ascending k from +0, separate multiply and add), then the same halving tree
// (l+8, l+4, l+2, l+1). The whole block stages the row and writes the outputs; only the 16 lane
// chains are serial, so the order is a function of D alone, never of the block or grid size.
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {

// Threads per row block: 4 columns per thread, a whole number of warps, at most 1024. Any value
// gives the same bits (the threads only move data); this one keeps every thread busy.
inline int rownorm_threads(int D) {
  const int t = ((D + 3) / 4 + 31) / 32 * 32;
  return t < 32 ? 32 : (t > 1024 ? 1024 : t);
}
// Shared memory of a row block: the row in fp32 plus one broadcast slot.
inline size_t rownorm_smem(int D) { return (size_t(D) + 1) * sizeof(float); }
constexpr size_t kRownormMaxSmem = 48 * 1024;  // the default dynamic shared-memory limit

// Reference lane `lane` (0..15) of the norm sum of row[0..D): x[k]^2 for k = lane, lane+16, ...
// added in ascending k from +0 (the hidden-size norm and the per-head q/k norm share it).
__device__ __forceinline__ float lane_sum_squares(const float* row, int D, int lane) {
  float s = 0.0f;
#pragma unroll 16
  for (int k = lane; k < D; k += 16) s = fadd(s, fmul(row[k], row[k]));
  return s;
}

// 1 / sqrt(mean(x^2) + eps) of row[0..D) (fp32 values in shared memory, written before a
// __syncthreads by the caller); `bcast` is a shared slot. Every thread of the block must call it.
__device__ __forceinline__ float block_inv_rms(const float* row, int D, float eps, float* bcast) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    float s = 0.0f;
    if (lane < 16) s = lane_sum_squares(row, D, lane);
    // The reference's tree: t[l] += t[l+8] (l<8), t[l] += t[l+4] (l<4), t[l] += t[l+2], t[0] += t[1].
#pragma unroll
    for (int o = 8; o >= 1; o >>= 1) s = fadd(s, __shfl_down_sync(0xffffffffu, s, o));
    if (lane == 0) *bcast = fdiv(1.0f, __fsqrt_rn(fadd(fdiv(s, float(D)), eps)));
  }
  __syncthreads();
  return *bcast;
}

// y = round(w * round(x * inv)) for 4 consecutive columns k..k+3 (the reference's two roundings);
// wv = w[k..k+3].
template <typename T>
__device__ __forceinline__ void norm_out4(const float* row, float4 wv, float inv, int k, T* y) {
  uint2 o;
  o.x = pack2<T>(fmul(wv.x, round_as<T>(fmul(row[k], inv))), fmul(wv.y, round_as<T>(fmul(row[k + 1], inv))));
  o.y = pack2<T>(fmul(wv.z, round_as<T>(fmul(row[k + 2], inv))), fmul(wv.w, round_as<T>(fmul(row[k + 3], inv))));
  *reinterpret_cast<uint2*>(y + k) = o;
}
// The outputs of a vector-path row: the thread's first 4 columns use w0 (loaded before the norm
// sum, so its latency hides behind it), the rest load w as they go.
template <typename T>
__device__ __forceinline__ void norm_out_row4(const float* row, const float* __restrict__ w, float4 w0, float inv,
                                              int D, T* y) {
  for (int k = 4 * threadIdx.x; k < D; k += 4 * blockDim.x)
    norm_out4<T>(row, k == 4 * int(threadIdx.x) ? w0 : *reinterpret_cast<const float4*>(w + k), inv, k, y);
}
__device__ __forceinline__ float4 first_w4(const float* __restrict__ w, int D) {
  const int k = 4 * threadIdx.x;
  return k < D ? *reinterpret_cast<const float4*>(w + k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

}  // namespace verbatim::cuda
