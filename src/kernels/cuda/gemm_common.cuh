// What the GEMM kernels share (gemm.cu, gemm_wgmma.cu): their arguments, the cp.async copies
// and the store of a warp's tile of sums.
#pragma once

#include <atomic>
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace verbatim::cuda::gemm_impl {

struct GemmArgs {
  const void* x;
  const void* w;
  int M, N, K, ldx, ldy;
  int kseg;          // K per segment (multiple of 32, or K when split == 1)
  void* y;           // rounded output (split == 1, y32 == null)
  float* y32;        // fp32 output (split == 1)
  float* partial;    // [split, M, N] (split > 1)
  // v1: bytes of each W row segment (from its start) prefetched into L2 before the PDL wait
  // (GemmTuning::v1_prefetch_bytes; 0: none). Speed only: the loads after it read the same bytes.
  int prefetch_bytes = 0;
  // v1 with the SiLU epilogue (gemm_silu_mul): W's rows [0, silu_cols) are the gate, [silu_cols,
  // 2 silu_cols) the up projection; y [M, ldy] receives round(round(silu(g)) * u).
  int silu_cols = 0;
  // wgmma, segments added in the kernel with 256-row CTAs: the running sums of whole segments, 64 x
  // 512 floats per CTA (CTA b at b * 32768; the GEMM workspace). Null: 128-row CTAs keep them in
  // shared memory. Each thread reads back only what it wrote itself.
  float* tot = nullptr;
};

// Writes a warp's MT x NT tile of sums: to the segment's partials, the fp32 output, or rounded.
template <typename T, int MT, int NT>
__device__ __forceinline__ void store_tile(const GemmArgs& a, const float (&acc)[MT][NT][4], int m_base, int n_base,
                                           int s, int gid, int tig) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m_base + i * 16 + h * 8 + gid;
      if (m >= a.M) continue;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int n = n_base + j * 8 + tig * 2;
        if (n >= a.N) continue;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (a.partial) {
          *reinterpret_cast<float2*>(a.partial + (int64_t(s) * a.M + m) * a.N + n) = make_float2(v0, v1);
        } else if (a.y32) {
          *reinterpret_cast<float2*>(a.y32 + int64_t(m) * a.ldy + n) = make_float2(v0, v1);
        } else {
          *reinterpret_cast<uint32_t*>(static_cast<T*>(a.y) + int64_t(m) * a.ldy + n) = pack2<T>(v0, v1);
        }
      }
    }
}

// The SiLU epilogue (gemm_silu_mul) of v1: a CTA whose warps 0, 1 hold 16 gate columns each and warps
// 2, 3 the same up columns (NT = 2 groups of 8; rows m_base + 0 .. MT * 16 - 1): silu_mul_from's
// arithmetic on the values the GEMM would have stored. Step 1, the gate warps: their rounded sums
// into gate. Step 2, the up warps, once the CTA's gate warps are past step 1: round(round(silu(g))
// * round(u)) into y columns col0 .. col0 + 31 (rows past M skipped).
template <typename T, int MT>
__device__ __forceinline__ void silu_gate_to_smem(float (&gate)[MT * 16][33], const float (&acc)[MT][2][4], int warp,
                                                  int gid, int tig) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          gate[i * 16 + h * 8 + gid][warp * 16 + j * 8 + tig * 2 + e] = round_as<T>(acc[i][j][2 * h + e]);
}
template <typename T, int MT>
__device__ __forceinline__ void silu_up_store(const GemmArgs& a, const float (&gate)[MT * 16][33],
                                              const float (&acc)[MT][2][4], int m_base, int col0, int warp, int gid,
                                              int tig) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = i * 16 + h * 8 + gid, m = m_base + r;
      if (m >= a.M) continue;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int c = (warp & 1) * 16 + j * 8 + tig * 2;
        const float o0 = fmul(round_as<T>(silu_f32(gate[r][c])), round_as<T>(acc[i][j][2 * h]));
        const float o1 = fmul(round_as<T>(silu_f32(gate[r][c + 1])), round_as<T>(acc[i][j][2 * h + 1]));
        *reinterpret_cast<uint32_t*>(static_cast<T*>(a.y) + int64_t(m) * a.ldy + col0 + c) = pack2<T>(o0, o1);
      }
    }
}

// The SiLU epilogue of a warp holding gate sums in its first group of 8 columns and the up sums
// of the same columns in its second (the stream kernel): silu_up_store's arithmetic per lane,
// into y columns col0 .. col0 + 7 of rows 0 .. MT * 16 - 1 (rows past M skipped).
template <typename T, int MT>
__device__ __forceinline__ void silu_pairs_store(const GemmArgs& a, const float (&acc)[MT][2][4], int col0, int gid,
                                                 int tig) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = i * 16 + h * 8 + gid;
      if (m >= a.M) continue;
      const float o0 = fmul(round_as<T>(silu_f32(round_as<T>(acc[i][0][2 * h]))), round_as<T>(acc[i][1][2 * h]));
      const float o1 = fmul(round_as<T>(silu_f32(round_as<T>(acc[i][0][2 * h + 1]))), round_as<T>(acc[i][1][2 * h + 1]));
      *reinterpret_cast<uint32_t*>(static_cast<T*>(a.y) + int64_t(m) * a.ldy + col0 + tig * 2) = pack2<T>(o0, o1);
    }
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Four 8x8 matrices of 16-bit elements from shared memory at addr (this lane's row address).
__device__ __forceinline__ void ldmatrix_x4_at(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// Weights stream past L1 (.cg); activations, shared by every warp, may stay in L1 (.ca).
// src_bytes == 0 fills the 16 bytes with zeros and reads nothing.
__device__ __forceinline__ void cp_async_cg(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_ca(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// 8 bytes (cp.async.cg copies 16 only); src_bytes 0 as above.
__device__ __forceinline__ void cp_async_ca8(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Runs set() once per device for this `done` (a function attribute lives in the current device's
// context; tensor parallelism runs one rank per device).
template <typename F>
void once_per_device(std::atomic<uint64_t>& done, F&& set) {
  int dev = 0;
  VB_CUDA(cudaGetDevice(&dev));
  const uint64_t bit = uint64_t(1) << (dev & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  set();
  done.fetch_or(bit, std::memory_order_acq_rel);
}

}  // namespace verbatim::cuda::gemm_impl
