// Residual add as cpu::add_inplace: x = round(x + y), one IEEE add per element.
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

template <typename T>
__global__ void add_kernel(T* __restrict__ x, const T* __restrict__ y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = from_f<T>(fadd(to_f(x[i]), to_f(y[i])));
}

}  // namespace

void add_inplace(void* x, const void* y, int64_t n, DType t, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = ceil_div(n, threads);
  if (t == DType::BF16)
    add_kernel<bf16><<<blocks, threads, 0, stream>>>(static_cast<bf16*>(x), static_cast<const bf16*>(y), n);
  else
    add_kernel<f16><<<blocks, threads, 0, stream>>>(static_cast<f16*>(x), static_cast<const f16*>(y), n);
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
