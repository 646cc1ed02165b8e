// Embedding rows and row gathers: plain copies (no arithmetic, so no rounding question).
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

// One 16-bit element per thread step; rows are short (hidden size), copies are exact.
__global__ void gather_kernel(const uint16_t* __restrict__ src, int64_t D, const int32_t* __restrict__ rows, int64_t R,
                              uint16_t* __restrict__ out) {
  const int64_t r = blockIdx.x;
  if (r >= R) return;
  const uint16_t* s = src + int64_t(rows[r]) * D;
  uint16_t* o = out + r * D;
  if (D % 8 == 0) {
    for (int64_t i = threadIdx.x; i < D / 8; i += blockDim.x)
      reinterpret_cast<uint4*>(o)[i] = reinterpret_cast<const uint4*>(s)[i];
  } else {
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) o[i] = s[i];
  }
}

}  // namespace

void embed(const void* E, int64_t hidden, const int32_t* tokens, int64_t T, DType t, void* out, cudaStream_t stream) {
  gather_rows(E, hidden, tokens, T, t, out, stream);
}

void gather_rows(const void* x, int64_t D, const int32_t* rows, int64_t R, DType t, void* out, cudaStream_t stream) {
  if (R <= 0) return;
  if (dtype_size(t) != 2) throw Error("cuda gather_rows: activations must be bf16 or fp16");
  gather_kernel<<<unsigned(R), 128, 0, stream>>>(static_cast<const uint16_t*>(x), D, rows, R,
                                                  static_cast<uint16_t*>(out));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
