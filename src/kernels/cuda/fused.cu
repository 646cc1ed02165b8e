// Fused per-layer glue (fused.h): the unfused kernels' arithmetic, in fewer launches.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fused.h"

namespace verbatim::cuda {
namespace {

// Element (row, col) of a GEMM output: the rounded value, or the split-K partials summed in
// segment order from partial[0] (gemm_reduce_kernel's arithmetic) and rounded.
template <typename T>
__device__ __forceinline__ float gemm_value(const GemmResult& g, int64_t row, int64_t col) {
  if (!g.partials) return to_f(static_cast<const T*>(g.y)[row * g.ld + col]);
  const int64_t total = int64_t(g.M) * g.N;
  float v = g.partials[row * g.N + col];
  for (int s = 1; s < g.split; ++s) v = fadd(v, g.partials[int64_t(s) * total + row * g.N + col]);
  return round_as<T>(v);
}

constexpr int kWarps = 4;

template <typename T>
__global__ void qkv_post_kernel(QkvPost p, int T_) {
  extern __shared__ float rows_smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int heads_all = p.nh + 2 * p.nkv;
  const int64_t w = int64_t(blockIdx.x) * kWarps + warp;
  if (w >= int64_t(T_) * heads_all) return;
  const int64_t t = w / heads_all;
  const int hh = int(w % heads_all);
  const int hd = p.hd, half = hd / 2;
  float* row = rows_smem + warp * hd;
  for (int k = lane; k < hd; k += 32) row[k] = gemm_value<T>(p.in, t, int64_t(hh) * hd + k);
  const int64_t slot_off = int64_t(p.slots[t]) * p.nkv * hd;
  if (hh >= p.nh + p.nkv) {  // v: straight to the cache
    T* vc = static_cast<T*>(p.v_cache) + slot_off + int64_t(hh - p.nh - p.nkv) * hd;
    for (int k = lane; k < hd; k += 32) vc[k] = from_f<T>(row[k]);
    return;
  }
  __syncwarp();
  // RMSNorm: rmsnorm.cu's 16 lanes and tree.
  float s = 0.0f;
  if (lane < 16)
    for (int k = lane; k < hd; k += 16) s = fadd(s, fmul(row[k], row[k]));
#pragma unroll
  for (int o = 8; o >= 1; o >>= 1) s = fadd(s, __shfl_down_sync(0xffffffffu, s, o));
  s = __shfl_sync(0xffffffffu, s, 0);
  const float inv = fdiv(1.0f, __fsqrt_rn(fadd(fdiv(s, float(hd)), p.eps)));
  const bool is_q = hh < p.nh;
  const float* wn = is_q ? p.q_norm : p.k_norm;
  __syncwarp();
  for (int k = lane; k < hd; k += 32) row[k] = round_as<T>(fmul(wn[k], round_as<T>(fmul(row[k], inv))));
  __syncwarp();
  // RoPE: rope.cu's formula and rounding.
  const float* cs = p.cos_sin + int64_t(p.positions[t]) * hd;
  T* dst = is_q ? static_cast<T*>(p.qkv) + t * (int64_t(heads_all) * hd) + int64_t(hh) * hd
                : static_cast<T*>(p.k_cache) + slot_off + int64_t(hh - p.nh) * hd;
  for (int i = lane; i < half; i += 32) {
    const float c = cs[i], sn = cs[half + i];
    const float a = row[i], b = row[i + half];
    dst[i] = from_f<T>(fadd(fmul(a, c), fmul(-b, sn)));
    dst[i + half] = from_f<T>(fadd(fmul(b, c), fmul(a, sn)));
  }
}

// One warp (= one block) per row, the updated row staged in shared memory (rmsnorm.cu's order).
template <typename T>
__global__ void add_rmsnorm_from_kernel(T* __restrict__ h, GemmResult d, int64_t rows, int D,
                                        const float* __restrict__ w, float eps, T* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char row_raw[];
  T* row = reinterpret_cast<T*>(row_raw);
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x;
  if (r >= rows) return;
  T* hr = h + r * D;
  for (int k = lane; k < D; k += 32) {
    const T v = from_f<T>(fadd(to_f(hr[k]), gemm_value<T>(d, r, k)));
    hr[k] = v;
    row[k] = v;
  }
  __syncwarp();
  float s = 0.0f;
  if (lane < 16) {
#pragma unroll 8
    for (int k = lane; k < D; k += 16) {
      const float v = to_f(row[k]);
      s = fadd(s, fmul(v, v));
    }
  }
#pragma unroll
  for (int o = 8; o >= 1; o >>= 1) s = fadd(s, __shfl_down_sync(0xffffffffu, s, o));
  s = __shfl_sync(0xffffffffu, s, 0);
  const float inv = fdiv(1.0f, __fsqrt_rn(fadd(fdiv(s, float(D)), eps)));
  T* yr = y + r * D;
  for (int k = lane; k < D; k += 32) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(to_f(row[k]), inv))));
}

template <typename T>
__global__ void silu_mul_from_kernel(GemmResult gu, int64_t T_, int64_t D, T* __restrict__ out) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= T_ * D) return;
  const int64_t t = idx / D, i = idx % D;
  const float g = round_as<T>(silu_f32(gemm_value<T>(gu, t, i)));
  out[idx] = from_f<T>(fmul(g, gemm_value<T>(gu, t, D + i)));
}

}  // namespace

GemmResult gemm_for_consumer(const void* x, int M, int K, const void* W, int N, DType t, int split, void* y,
                             float* workspace, size_t workspace_bytes, cudaStream_t stream) {
  GemmResult r;
  r.M = M;
  r.N = N;
  r.split = split;
  GemmOut out;
  if (split > 1 && gemm_workspace_bytes(M, N, split) <= workspace_bytes) {
    out.partials_only = true;  // the consumer sums the segments (in order) and rounds
    r.partials = workspace;
  } else {
    out.y = y;
    r.y = y;
    r.ld = N;
  }
  out.y = y;
  gemm(x, M, K, K, W, N, t, split, out, workspace, workspace_bytes, stream);
  return r;
}

void qkv_post(const QkvPost& p, int T, DType t, cudaStream_t stream) {
  if (T <= 0) return;
  const int64_t warps = int64_t(T) * (p.nh + 2 * p.nkv);
  const int blocks = ceil_div(warps, kWarps);
  const size_t smem = size_t(kWarps) * p.hd * sizeof(float);
  if (t == DType::BF16) qkv_post_kernel<bf16><<<blocks, kWarps * 32, smem, stream>>>(p, T);
  else qkv_post_kernel<f16><<<blocks, kWarps * 32, smem, stream>>>(p, T);
  VB_CUDA_LAUNCHED();
}

void add_rmsnorm_from(void* h, const GemmResult& d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                      cudaStream_t stream) {
  if (rows <= 0) return;
  const size_t smem = size_t(D) * 2;
  if (t == DType::BF16)
    add_rmsnorm_from_kernel<bf16><<<unsigned(rows), 32, smem, stream>>>(static_cast<bf16*>(h), d, rows, D, w, eps,
                                                                        static_cast<bf16*>(y));
  else
    add_rmsnorm_from_kernel<f16><<<unsigned(rows), 32, smem, stream>>>(static_cast<f16*>(h), d, rows, D, w, eps,
                                                                       static_cast<f16*>(y));
  VB_CUDA_LAUNCHED();
}

void silu_mul_from(const GemmResult& gu, int64_t T, int64_t D, DType t, void* out, cudaStream_t stream) {
  if (T <= 0) return;
  const int threads = 256;
  const int blocks = ceil_div(T * D, threads);
  if (t == DType::BF16) silu_mul_from_kernel<bf16><<<blocks, threads, 0, stream>>>(gu, T, D, static_cast<bf16*>(out));
  else silu_mul_from_kernel<f16><<<blocks, threads, 0, stream>>>(gu, T, D, static_cast<f16*>(out));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
