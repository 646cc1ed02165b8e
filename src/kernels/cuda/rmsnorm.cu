// RMSNorm, the hidden-size norm and Qwen3's per-head q/k norm, as cpu::rmsnorm bit for bit: one
// warp per row; lanes 0..15 are the reference's 16 lanes (lane l sums x[k]^2 for k = l, l+16, ...
// in ascending k, separate multiply and add), then the same halving tree (l+8, l+4, l+2, l+1).
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

constexpr int kRowsPerBlock = 4;  // warps per block; a row is one warp whatever the block holds

template <typename T>
__device__ __forceinline__ float inv_rms(const T* x, int D, float eps, int lane) {
  float s = 0.0f;
  if (lane < 16)
    for (int k = lane; k < D; k += 16) {
      const float v = to_f(x[k]);
      s = fadd(s, fmul(v, v));
    }
  // The reference's tree: t[l] += t[l+8] (l<8), t[l] += t[l+4] (l<4), t[l] += t[l+2], t[0] += t[1].
#pragma unroll
  for (int w = 8; w >= 1; w >>= 1) s = fadd(s, __shfl_down_sync(0xffffffffu, s, w));
  s = __shfl_sync(0xffffffffu, s, 0);
  const float mean = fdiv(s, float(D));
  return fdiv(1.0f, __fsqrt_rn(fadd(mean, eps)));
}

template <typename T>
__global__ void rmsnorm_kernel(const T* __restrict__ x, RowMap xm, int64_t rows, int D, const float* __restrict__ w,
                               float eps, T* __restrict__ y, RowMap ym) {
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const T* xr = x + (r / xm.heads) * xm.tok_stride + (r % xm.heads) * D;
  T* yr = y + (r / ym.heads) * ym.tok_stride + (r % ym.heads) * D;
  const float inv = inv_rms(xr, D, eps, lane);
  for (int k = lane; k < D; k += 32) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(to_f(xr[k]), inv))));
}

template <typename T>
__global__ void add_rmsnorm_kernel(T* __restrict__ h, const T* __restrict__ d, int64_t rows, int D,
                                   const float* __restrict__ w, float eps, T* __restrict__ y) {
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  T* hr = h + r * D;
  const T* dr = d + r * D;
  for (int k = lane; k < D; k += 32) hr[k] = from_f<T>(fadd(to_f(hr[k]), to_f(dr[k])));
  __syncwarp();  // the norm below reads values other lanes of this warp just wrote
  const float inv = inv_rms(static_cast<const T*>(hr), D, eps, lane);
  T* yr = y + r * D;
  for (int k = lane; k < D; k += 32) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(to_f(hr[k]), inv))));
}

}  // namespace

void rmsnorm(const void* x, RowMap xm, int64_t rows, int D, const float* w, float eps, DType t, void* y, RowMap ym,
             cudaStream_t stream) {
  if (rows <= 0) return;
  if (xm.tok_stride == 0) xm.tok_stride = int64_t(D) * xm.heads;
  if (ym.tok_stride == 0) ym.tok_stride = int64_t(D) * ym.heads;
  const int blocks = ceil_div(rows, kRowsPerBlock);
  if (t == DType::BF16)
    rmsnorm_kernel<bf16><<<blocks, kRowsPerBlock * 32, 0, stream>>>(static_cast<const bf16*>(x), xm, rows, D, w, eps,
                                                                    static_cast<bf16*>(y), ym);
  else
    rmsnorm_kernel<f16><<<blocks, kRowsPerBlock * 32, 0, stream>>>(static_cast<const f16*>(x), xm, rows, D, w, eps,
                                                                   static_cast<f16*>(y), ym);
  VB_CUDA_LAUNCHED();
}

void add_rmsnorm(void* h, const void* d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                 cudaStream_t stream) {
  if (rows <= 0) return;
  const int blocks = ceil_div(rows, kRowsPerBlock);
  if (t == DType::BF16)
    add_rmsnorm_kernel<bf16><<<blocks, kRowsPerBlock * 32, 0, stream>>>(
        static_cast<bf16*>(h), static_cast<const bf16*>(d), rows, D, w, eps, static_cast<bf16*>(y));
  else
    add_rmsnorm_kernel<f16><<<blocks, kRowsPerBlock * 32, 0, stream>>>(
        static_cast<f16*>(h), static_cast<const f16*>(d), rows, D, w, eps, static_cast<f16*>(y));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
