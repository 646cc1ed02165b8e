#pragma once
// Fused forms of the per-layer glue (fewer launches per decode step). Each computes the same
// bits as its unfused sequence (kernels.h): the GEMM's split-K sum in segment order then the
// rounding, then the next op's arithmetic unchanged. tests/cuda_ops_test checks each against
// the unfused kernels bit for bit.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

// A GEMM output as its consumer reads it: the rounded matrix y [M, ld], or (partials != null)
// the split-K partial sums [split, M, N] that gemm_partials left, to be summed in order and rounded.
struct GemmResult {
  const void* y = nullptr;
  int ld = 0;
  const float* partials = nullptr;
  int split = 1;
  int M = 0, N = 0;
};
// Runs the GEMM and leaves partials (no reduce kernel) when split > 1 and the workspace holds all
// M rows; otherwise writes the rounded y as gemm() does. Returns what the consumer must read.
GemmResult gemm_for_consumer(const void* x, int M, int K, const void* W, int N, DType t, int split, void* y,
                             float* workspace, size_t workspace_bytes, cudaStream_t stream);

// Per (token, head of q, k, v): the qkv row (GemmResult), RMSNorm of q and k heads with their
// weights, RoPE, then q written back into qkv (for attention), k and v into the cache slot.
struct QkvPost {
  GemmResult in;        // [T, (nh + 2 nkv) * hd]
  void* qkv = nullptr;  // where q goes: [T, ld] (ld = (nh + 2 nkv) * hd)
  int nh = 0, nkv = 0, hd = 0;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  const int32_t* positions = nullptr;
  const float* cos_sin = nullptr;
  const int32_t* slots = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
};
void qkv_post(const QkvPost& p, int T, DType t, cudaStream_t stream);
// Steps of >= 65 tokens run qkv_post with warps (two items at a time in half warps where
// head_dim <= 128; VERBATIM_QKV_POST_HALF=0: one) looping over the items on a grid of at most 8
// blocks per SM (VERBATIM_QKV_POST_LOOP=0: never); tests set that block count (0: by the SM
// count) so every warp takes many items.
void set_qkv_post_loop_blocks(int blocks);

// h = round(h + d); y = rmsnorm(h) with d a GemmResult.
void add_rmsnorm_from(void* h, const GemmResult& d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                      cudaStream_t stream);
// out = round(round(silu(gate)) * up), gate = columns [0, D), up = [D, 2D) of a GemmResult.
void silu_mul_from(const GemmResult& gu, int64_t T, int64_t D, DType t, void* out, cudaStream_t stream);

}  // namespace verbatim::cuda
