// RoPE as cpu::rope: r[i] = round(a * cos + (-b) * sin), r[i + half] = round(b * cos + a * sin),
// two products and one add each (no FMA). cos/sin come from a table the host computes with the
// reference's own formula (powf, cosf, sinf in fp32), so the rotation has the reference's bits.
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(T* __restrict__ x, RowMap xm, int64_t T_, int heads, int head_dim,
                            const int32_t* __restrict__ positions, const float* __restrict__ cos_sin) {
  const int half = head_dim / 2;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t total = T_ * heads * half;
  if (idx >= total) return;
  const int i = int(idx % half);
  const int64_t row = idx / half;
  const int64_t t = row / heads;
  const int h = int(row % heads);
  T* r = x + t * xm.tok_stride + int64_t(h) * head_dim;
  const float* cs = cos_sin + int64_t(positions[t]) * head_dim;
  const float c = cs[i], s = cs[half + i];
  const float a = to_f(r[i]), b = to_f(r[i + half]);
  r[i] = from_f<T>(fadd(fmul(a, c), fmul(-b, s)));
  r[i + half] = from_f<T>(fadd(fmul(b, c), fmul(a, s)));
}

}  // namespace

void rope(void* x, RowMap xm, int64_t T, int heads, int head_dim, const int32_t* positions, const float* cos_sin,
          DType t, cudaStream_t stream) {
  if (T <= 0) return;
  if (xm.tok_stride == 0) xm.tok_stride = int64_t(heads) * head_dim;
  const int64_t total = T * heads * (head_dim / 2);
  const int threads = 256;
  const int blocks = ceil_div(total, threads);
  if (t == DType::BF16)
    rope_kernel<bf16><<<blocks, threads, 0, stream>>>(static_cast<bf16*>(x), xm, T, heads, head_dim, positions, cos_sin);
  else
    rope_kernel<f16><<<blocks, threads, 0, stream>>>(static_cast<f16*>(x), xm, T, heads, head_dim, positions, cos_sin);
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
