// The device's exp_f32, silu_f32 and exp_nonpos_f32 (common.cuh) over a range of float bit patterns, so a test can
// hold them to the CPU reference's on every one of the 2^32 floats.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {
namespace {

__global__ void exp_silu_sweep_kernel(uint32_t first, int64_t n, float* exp_out, float* silu_out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = __uint_as_float(first + uint32_t(i));
  exp_out[i] = exp_f32(x);
  silu_out[i] = silu_f32(x);
}
// out: round_exp_candidate<T>'s value where it is sure, else -1; raw: exp_candidate (T = bf16 only).
template <typename T>
__global__ void exp_candidate_sweep_kernel(uint32_t first, int64_t n, float* out, float* raw) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = __uint_as_float(first + uint32_t(i));
  bool sure;
  const float c = round_exp_candidate<T>(x, sure);
  out[i] = sure ? c : -1.0f;
  if (raw) raw[i] = exp_candidate(x);
}
__global__ void exp_nonpos_sweep_kernel(uint32_t first, int64_t n, float* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = exp_nonpos_f32(__uint_as_float(first + uint32_t(i)));
}

}  // namespace

void exp_silu_sweep(uint32_t first, int64_t n, float* exp_out, float* silu_out, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  exp_silu_sweep_kernel<<<ceil_div(n, threads), threads, 0, stream>>>(first, n, exp_out, silu_out);
  VB_CUDA_LAUNCHED();
}

void exp_nonpos_sweep(uint32_t first, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  exp_nonpos_sweep_kernel<<<ceil_div(n, threads), threads, 0, stream>>>(first, n, out);
  VB_CUDA_LAUNCHED();
}

void exp_candidate_sweep(uint32_t first, int64_t n, DType t, float* out, float* raw, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  if (t == DType::F16) exp_candidate_sweep_kernel<f16><<<ceil_div(n, threads), threads, 0, stream>>>(first, n, out, raw);
  else exp_candidate_sweep_kernel<bf16><<<ceil_div(n, threads), threads, 0, stream>>>(first, n, out, raw);
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
