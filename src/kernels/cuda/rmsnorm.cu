// RMSNorm, the hidden-size norm and Qwen3's per-head q/k norm, as cpu::rmsnorm bit for bit: one
// block per row (rownorm.cuh): the block stages the row in shared memory, lanes 0..15 of warp 0
// run the reference's 16 lane sums and its halving tree, the block writes the outputs.
#include "kernels/cuda/rownorm.cuh"

namespace verbatim::cuda {
namespace {

// Vector path (4 columns per step) when D % 4 == 0 and the rows are 8-byte aligned, else scalar;
// both compute every element by the same formula.
template <typename T>
__global__ void __launch_bounds__(1024) rmsnorm_kernel(const T* __restrict__ x, RowMap xm, int64_t rows, int D,
                                                       const float* __restrict__ w, float eps, T* __restrict__ y,
                                                       RowMap ym, bool vec) {
  pdl_begin();  // before any memory access or return (common.cuh)
  extern __shared__ __align__(16) float rowf[];
  const int64_t r = blockIdx.x;
  if (r >= rows) return;
  const T* xr = x + (r / xm.heads) * xm.tok_stride + (r % xm.heads) * D;
  T* yr = y + (r / ym.heads) * ym.tok_stride + (r % ym.heads) * D;
  const float4 w0 = vec ? first_w4(w, D) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (vec) {
    for (int k = 4 * threadIdx.x; k < D; k += 4 * blockDim.x) {
      const uint2 v = *reinterpret_cast<const uint2*>(xr + k);
      rowf[k] = lo_f<T>(v.x);
      rowf[k + 1] = hi_f<T>(v.x);
      rowf[k + 2] = lo_f<T>(v.y);
      rowf[k + 3] = hi_f<T>(v.y);
    }
  } else {
    for (int k = threadIdx.x; k < D; k += blockDim.x) rowf[k] = to_f(xr[k]);
  }
  __syncthreads();
  const float inv = block_inv_rms(rowf, D, eps, rowf + D);
  if (vec) {
    norm_out_row4<T>(rowf, w, w0, inv, D, yr);
  } else {
    for (int k = threadIdx.x; k < D; k += blockDim.x) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(rowf[k], inv))));
  }
}

template <typename T>
__global__ void __launch_bounds__(1024) add_rmsnorm_kernel(T* __restrict__ h, const T* __restrict__ d, int64_t rows,
                                                           int D, const float* __restrict__ w, float eps,
                                                           T* __restrict__ y) {
  pdl_begin();  // before any memory access or return (common.cuh)
  extern __shared__ __align__(16) float rowf[];
  const int64_t r = blockIdx.x;
  if (r >= rows) return;
  T* hr = h + r * D;
  const T* dr = d + r * D;
  for (int k = threadIdx.x; k < D; k += blockDim.x) {
    const T v = from_f<T>(fadd(to_f(hr[k]), to_f(dr[k])));
    hr[k] = v;
    rowf[k] = to_f(v);
  }
  __syncthreads();  // the norm below reads values other threads just wrote
  const float inv = block_inv_rms(rowf, D, eps, rowf + D);
  T* yr = y + r * D;
  for (int k = threadIdx.x; k < D; k += blockDim.x) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(rowf[k], inv))));
}

void check_row_width(int D, const char* what) {
  if (rownorm_smem(D) > kRownormMaxSmem)
    throw Error(std::string(what) + ": rows of " + std::to_string(D) + " values exceed the kernel's shared memory");
}

}  // namespace

void rmsnorm(const void* x, RowMap xm, int64_t rows, int D, const float* w, float eps, DType t, void* y, RowMap ym,
             cudaStream_t stream) {
  if (rows <= 0) return;
  check_row_width(D, "cuda rmsnorm");
  if (xm.tok_stride == 0) xm.tok_stride = int64_t(D) * xm.heads;
  if (ym.tok_stride == 0) ym.tok_stride = int64_t(D) * ym.heads;
  const bool vec = D % 4 == 0 && xm.tok_stride % 4 == 0 && ym.tok_stride % 4 == 0 &&
                   (reinterpret_cast<uintptr_t>(x) & 7) == 0 && (reinterpret_cast<uintptr_t>(y) & 7) == 0 &&
                   (reinterpret_cast<uintptr_t>(w) & 15) == 0;
  const int threads = rownorm_threads(D);
  const size_t smem = rownorm_smem(D);
  if (t == DType::BF16)
    pdl_launch(rmsnorm_kernel<bf16>, dim3(unsigned(rows)), dim3(threads), smem, stream, static_cast<const bf16*>(x), xm,
               rows, D, w, eps, static_cast<bf16*>(y), ym, vec);
  else
    pdl_launch(rmsnorm_kernel<f16>, dim3(unsigned(rows)), dim3(threads), smem, stream, static_cast<const f16*>(x), xm,
               rows, D, w, eps, static_cast<f16*>(y), ym, vec);
  VB_CUDA_LAUNCHED();
}

void add_rmsnorm(void* h, const void* d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                 cudaStream_t stream) {
  if (rows <= 0) return;
  check_row_width(D, "cuda add_rmsnorm");
  const int threads = rownorm_threads(D);
  const size_t smem = rownorm_smem(D);
  if (t == DType::BF16)
    pdl_launch(add_rmsnorm_kernel<bf16>, dim3(unsigned(rows)), dim3(threads), smem, stream, 
        static_cast<bf16*>(h), static_cast<const bf16*>(d), rows, D, w, eps, static_cast<bf16*>(y));
  else
    pdl_launch(add_rmsnorm_kernel<f16>, dim3(unsigned(rows)), dim3(threads), smem, stream, 
        static_cast<f16*>(h), static_cast<const f16*>(d), rows, D, w, eps, static_cast<f16*>(y));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
