// RMSNorm, the hidden-size norm and Qwen3's per-head q/k norm, as cpu::rmsnorm bit for bit: one
// warp per row; lanes 0..15 are the reference's 16 lanes (lane l sums x[k]^2 for k = l, l+16, ...
// in ascending k, separate multiply and add), then the same halving tree (l+8, l+4, l+2, l+1).
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {


// 1 / sqrt(mean(x^2) + eps) of a row already staged in shared memory (the reference's lanes and
// tree; staging only changes where the values are read from, not the order they are summed in).
template <typename T>
__device__ __forceinline__ float inv_rms_smem(const T* row, int D, float eps, int lane) {
  float s = 0.0f;
  if (lane < 16) {
#pragma unroll 8
    for (int k = lane; k < D; k += 16) {
      const float v = to_f(row[k]);
      s = fadd(s, fmul(v, v));
    }
  }
  // The reference's tree: t[l] += t[l+8] (l<8), t[l] += t[l+4] (l<4), t[l] += t[l+2], t[0] += t[1].
#pragma unroll
  for (int w = 8; w >= 1; w >>= 1) s = fadd(s, __shfl_down_sync(0xffffffffu, s, w));
  s = __shfl_sync(0xffffffffu, s, 0);
  const float mean = fdiv(s, float(D));
  return fdiv(1.0f, __fsqrt_rn(fadd(mean, eps)));
}

// One warp (= one block) per row; the row is staged in shared memory with wide loads first.
template <typename T>
__global__ void rmsnorm_kernel(const T* __restrict__ x, RowMap xm, int64_t rows, int D, const float* __restrict__ w,
                               float eps, T* __restrict__ y, RowMap ym) {
  extern __shared__ __align__(16) unsigned char row_raw[];
  T* row = reinterpret_cast<T*>(row_raw);
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x;
  if (r >= rows) return;
  const T* xr = x + (r / xm.heads) * xm.tok_stride + (r % xm.heads) * D;
  T* yr = y + (r / ym.heads) * ym.tok_stride + (r % ym.heads) * D;
  if (D % 8 == 0 && (reinterpret_cast<uintptr_t>(xr) & 15) == 0) {
    for (int k = lane; k < D / 8; k += 32) reinterpret_cast<uint4*>(row)[k] = reinterpret_cast<const uint4*>(xr)[k];
  } else {
    for (int k = lane; k < D; k += 32) row[k] = xr[k];
  }
  __syncwarp();
  const float inv = inv_rms_smem(row, D, eps, lane);
  for (int k = lane; k < D; k += 32) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(to_f(row[k]), inv))));
}

template <typename T>
__global__ void add_rmsnorm_kernel(T* __restrict__ h, const T* __restrict__ d, int64_t rows, int D,
                                   const float* __restrict__ w, float eps, T* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char row_raw[];
  T* row = reinterpret_cast<T*>(row_raw);
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x;
  if (r >= rows) return;
  T* hr = h + r * D;
  const T* dr = d + r * D;
  for (int k = lane; k < D; k += 32) {
    const T v = from_f<T>(fadd(to_f(hr[k]), to_f(dr[k])));
    hr[k] = v;
    row[k] = v;
  }
  __syncwarp();  // the norm below reads values other lanes just wrote
  const float inv = inv_rms_smem(static_cast<const T*>(row), D, eps, lane);
  T* yr = y + r * D;
  for (int k = lane; k < D; k += 32) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(to_f(row[k]), inv))));
}

}  // namespace

void rmsnorm(const void* x, RowMap xm, int64_t rows, int D, const float* w, float eps, DType t, void* y, RowMap ym,
             cudaStream_t stream) {
  if (rows <= 0) return;
  if (xm.tok_stride == 0) xm.tok_stride = int64_t(D) * xm.heads;
  if (ym.tok_stride == 0) ym.tok_stride = int64_t(D) * ym.heads;
  const size_t smem = size_t(D) * 2;
  if (t == DType::BF16)
    rmsnorm_kernel<bf16><<<unsigned(rows), 32, smem, stream>>>(static_cast<const bf16*>(x), xm, rows, D, w, eps,
                                                                    static_cast<bf16*>(y), ym);
  else
    rmsnorm_kernel<f16><<<unsigned(rows), 32, smem, stream>>>(static_cast<const f16*>(x), xm, rows, D, w, eps,
                                                                   static_cast<f16*>(y), ym);
  VB_CUDA_LAUNCHED();
}

void add_rmsnorm(void* h, const void* d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                 cudaStream_t stream) {
  if (rows <= 0) return;
  const size_t smem = size_t(D) * 2;
  if (t == DType::BF16)
    add_rmsnorm_kernel<bf16><<<unsigned(rows), 32, smem, stream>>>(
        static_cast<bf16*>(h), static_cast<const bf16*>(d), rows, D, w, eps, static_cast<bf16*>(y));
  else
    add_rmsnorm_kernel<f16><<<unsigned(rows), 32, smem, stream>>>(
        static_cast<f16*>(h), static_cast<const f16*>(d), rows, D, w, eps, static_cast<f16*>(y));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
