// SiLU·mul as cpu::silu_mul: out = round(round(silu(gate)) * up), silu(x) = x / (1 + exp_f32(-x))
// with the reference's exp recipe, so the bits match the CPU.
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate, const T* __restrict__ up, int64_t ld_in, int64_t T_,
                                int64_t D, T* __restrict__ out) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= T_ * D) return;
  const int64_t t = idx / D, i = idx % D;
  const float g = round_as<T>(silu_f32(to_f(gate[t * ld_in + i])));
  out[idx] = from_f<T>(fmul(g, to_f(up[t * ld_in + i])));
}

}  // namespace

void silu_mul(const void* gate, const void* up, int64_t ld_in, int64_t T, int64_t D, DType t, void* out,
              cudaStream_t stream) {
  if (T <= 0) return;
  const int threads = 256;
  const int blocks = ceil_div(T * D, threads);
  if (t == DType::BF16)
    silu_mul_kernel<bf16><<<blocks, threads, 0, stream>>>(static_cast<const bf16*>(gate), static_cast<const bf16*>(up),
                                                          ld_in, T, D, static_cast<bf16*>(out));
  else
    silu_mul_kernel<f16><<<blocks, threads, 0, stream>>>(static_cast<const f16*>(gate), static_cast<const f16*>(up),
                                                         ld_in, T, D, static_cast<f16*>(out));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
