// GEMM y = x · W^T on tensor cores (mma.sync m16n8k16, fp32 accumulation), the contract's way:
// each output element is the sum over K in one fixed order chosen from (N, K) alone.
//
// Order of one element y[m, n]: K is cut into `split` equal segments (gemm_split_for(N, K)); one
// warp sums a segment in ascending chunks of 32 k, two MMAs per chunk: MMA 1 over chunk offsets
// 0..15, MMA 2 over 16..31. Thread tig of the quad gives each MMA 4 consecutive k of its A row and
// of its B column, at chunk offsets step_k(tig) (0, 8, 4, 12) and 16 further, in the MMA slots
// {2·tig, 2·tig+1, 2·tig+8, 2·tig+9}: A and B use the same slot→k map, so the product is the plain
// dot product, grouped in a fixed way. Which slot takes which k of a step does not change its sum,
// only the step's set of 16 does (bench/mma_probe.cu, session 13), so gemm_wgmma.cu's natural slot
// order gives these bits. W is loaded 16 bytes a lane (8 k at 8·tig: a quad reads a row's 64
// bytes) and each lane trades one half with lane tig ^ 2 (steps_of_w); x, up to 16 rows, by two
// 8-byte loads at the lane's offsets (L1 hits), and at 17-64 rows through shared memory once per
// CTA, reaching the lanes by ldmatrix in the same map (gemm_kernel, kXS).
// (Until session 15 a thread loaded 8 k with one 16-byte load and the steps took the strided sets
// 8·tig + {0..3} and 8·tig + {4..7}; different sets, so other bits.) Segments are added in segment
// order (gemm_reduce).
// How many rows a warp holds (MT) and how many columns (NT) only decide which warp computes an
// element; rows never interact inside an MMA (each output element reads only its own row of A),
// so every M gives the same bits per row (tests/cuda_gemm_test proves it for M = 1..70 and more).
// Variants below (v1, v2, tiled), gemm_wgmma.cu (Hopper's warpgroup MMA, past 64 rows) and
// gemm_stream.cu (W and x by TMA into a ring of stages, up to 64 rows: the default there since
// session 21) issue the same k16 steps on the same k sets in the same order; only who loads what
// differs.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/gemm_stream.h"
#include "kernels/cuda/gemm_v1_layout.h"
#include "kernels/cuda/gemm_wgmma.h"

namespace verbatim::cuda {
namespace {
using namespace gemm_impl;

constexpr int kWarps = 4;  // warps per CTA, each with its own columns

using v1_layout::step_k;
// A lane's 16 bytes of W at chunk offset 8·tig to its words of the two MMAs (x, y: MMA 1; z, w:
// MMA 2): lanes 0, 1 keep their first half for MMA 1 and get lane tig ^ 2's first half for MMA 2;
// lanes 2, 3 keep their second half for MMA 2 and get lane tig ^ 2's second half for MMA 1. Every
// lane of the warp calls it (shuffles).
__device__ __forceinline__ uint4 steps_of_w(uint4 v, int tig) {
  const bool low = tig < 2;
  const uint32_t g0 = __shfl_xor_sync(0xffffffffu, low ? v.z : v.x, 2);
  const uint32_t g1 = __shfl_xor_sync(0xffffffffu, low ? v.w : v.y, 2);
  return low ? make_uint4(v.x, v.y, g0, g1) : make_uint4(g0, g1, v.z, v.w);
}
// Load mode 4's layout of x in shared memory (gemm_v1_layout.h).
using v1_layout::xs_unit_word;
using v1_layout::xs_word_slot;
// A thread's words of one 32-k chunk (p: its row at chunk offset step_k(tig)): MMA 1's 4 k (x, y)
// and MMA 2's (z, w), 16 elements further; a step past the segment end (k_end) reads nothing and
// is 0.
template <typename T>
__device__ __forceinline__ uint4 ld_steps(const T* p, int k, int k_end) {
  const uint2 a = k < k_end ? __ldg(reinterpret_cast<const uint2*>(p)) : make_uint2(0u, 0u);
  const uint2 b = k + 16 < k_end ? __ldg(reinterpret_cast<const uint2*>(p + 16)) : make_uint2(0u, 0u);
  return make_uint4(a.x, a.y, b.x, b.y);
}
// Weights are read once per step: stream them past L1.
__device__ __forceinline__ uint4 ld16_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

// SILU (gemm_silu_mul): a CTA computes gate columns [32 y, 32 y + 32) (warps 0, 1) and the same
// up columns (warps 2, 3; column silu_cols + 32 y + ...): which warp computes a column never
// changes its sum. The gate warps round their sums into shared memory, the up warps write
// round(round(silu(g)) * u): silu_mul_from's arithmetic on the values the GEMM would have stored.
// How x reaches the lanes (speed only, the same words reach the MMAs; H200 session 14): up to 16
// rows (MT 1) by two 8-byte loads at the lane's offsets, L1 hits; at 17-64 rows (kXS) through
// shared memory: the CTA's 4 warps read the same rows, so each round's x tile is loaded once (one
// 16-byte unit a thread), stored with each step's 4-byte words in the order that makes ldmatrix
// hand every lane its step_k words (xs_word_slot), and read by ldmatrix. In registers at 32 rows
// (16-byte loads traded like W, or 8-byte loads) the 8B decode steps at 32 / 64 sequences took
// 9.5-10.4 / 16.9-17.7 ms against 8.25 / 12.87 through shared memory; W by two 8-byte loads
// instead of the trade was 5-10% slower at every batch (bench/results/README.md, session 14).
template <typename T, int MT, int NT, int U, bool SILU = false>
__global__ void __launch_bounds__(kWarps * 32) gemm_kernel(GemmArgs a) {
  constexpr bool kXS = MT >= 2;
  static_assert(!SILU || (NT == 2 && kWarps == 4), "the SiLU epilogue pairs 2 gate and 2 up warps of 16 columns");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const int n_base = !SILU ? (blockIdx.y * kWarps + warp) * NT * 8
                           : (warp >= 2 ? a.silu_cols : 0) + int(blockIdx.y) * 32 + (warp & 1) * 16;
  const int m_base = blockIdx.x * MT * 16;
  const int s = blockIdx.z;
  const int k_begin = s * a.kseg;
  const int k_end = min(a.K, k_begin + a.kseg);
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  // Rows past M / columns past N read a valid row and are never stored: rows are independent.
  const T* wrow[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) wrow[j] = w + int64_t(min(n_base + j * 8 + gid, a.N - 1)) * a.K;
  // W is load-time data (read_step_inputs_before_pdl, common.cuh): the first prefetch_bytes of
  // each of this warp's row segments go to L2 while the kernel before still runs (under PDL our
  // CTAs may be resident before it ends), so the loads after the wait find them there. The quad
  // of a row takes its 128-byte lines in turn. Only the first row block (blockIdx.x == 0) asks:
  // the others read the same W.
  if (a.prefetch_bytes > 0 && blockIdx.x == 0 && n_base < a.N) {
    const int seg_bytes = (k_end - k_begin) * int(sizeof(T));
    const int bytes = min(a.prefetch_bytes, seg_bytes);
#pragma unroll
    for (int j = 0; j < NT; ++j)
      for (int off = tig * 128; off < bytes; off += 4 * 128)
        prefetch_l2(reinterpret_cast<const char*>(wrow[j] + k_begin) + off);
  }
  pdl_begin();  // before any other memory access or return (common.cuh)
  // No barrier but SILU's and kXS's: a warp may leave early (SILU's columns all exist, silu_cols %
  // 32 == 0; under kXS a warp past N still stages x and meets every barrier, its W rows clamped).
  if (!kXS && n_base >= a.N) return;
  const T* xrow[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) xrow[i][h] = x + int64_t(min(m_base + i * 16 + h * 8 + gid, a.M - 1)) * a.ldx;

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;

  // An 8-row group wholly past M reads nothing (zeros): rows never interact in an MMA, and those
  // rows are never stored (x in registers; kXS zero-fills rows past M as it stages them).
  bool live[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) live[i][h] = m_base + i * 16 + h * 8 < a.M;

  // kXS: two buffers of a round's x tile, [u][row][16 words], 16-byte units swizzled by row.
  constexpr int kXsRows = kXS ? MT * 16 : 1;
  __shared__ __align__(16) uint32_t xs[kXS ? 2 : 1][kXS ? U : 1][kXsRows][16];
  int round = 0;
  for (int c0 = k_begin; c0 < k_end; c0 += 32 * U, ++round) {
    uint4 bv[U][NT], av[U][MT][2];
    // W's loads first (the long wait).
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kw = c0 + u * 32 + tig * 8;  // K % 8 == 0: a thread's 8 values are all in or all out
#pragma unroll
      for (int j = 0; j < NT; ++j) bv[u][j] = kw < k_end ? ld16_stream(wrow[j] + kw) : make_uint4(0, 0, 0, 0);
    }
    if constexpr (kXS) {
      // This thread's x units into buffer round & 1, whose last readers (round - 2) all passed the
      // barrier of round - 1.
      constexpr int kUnits = MT * 16 * 4 * U;
      static_assert(kUnits % (kWarps * 32) == 0, "whole units per thread");
#pragma unroll
      for (int e = 0; e < kUnits / (kWarps * 32); ++e) {
        const int unit = e * kWarps * 32 + int(threadIdx.x);
        const int q = unit & 3, row = (unit >> 2) % (MT * 16), u = (unit >> 2) / (MT * 16);
        const int m = m_base + row, k = c0 + u * 32 + q * 8;
        const uint4 v = m < a.M && k < k_end ? __ldg(reinterpret_cast<const uint4*>(x + int64_t(m) * a.ldx + k))
                                             : make_uint4(0, 0, 0, 0);
        uint32_t* r = xs[round & 1][u][row];
        const uint32_t vw[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int t = 0; t < 4; ++t) r[xs_word_slot(row, 4 * q + t)] = vw[t];
      }
      __syncthreads();  // the tile is whole (and every warp is past round - 1's reads of the other buffer)
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int kx = c0 + u * 32 + step_k(tig);  // K % 8 == 0: a thread's 4 values are all in or all out
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            av[u][i][h] = live[i][h] ? ld_steps(xrow[i][h] + kx, kx, k_end) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + u * 32 >= k_end) break;  // warp-uniform: a chunk wholly past the segment is skipped
      // Trades chunk by chunk, next to their MMAs (trading all first kept every chunk's traded
      // words live at once: 198 registers at 32 rows, 2 CTAs an SM; ncu, session 14).
#pragma unroll
      for (int j = 0; j < NT; ++j) bv[u][j] = steps_of_w(bv[u][j], tig);
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        uint32_t a1[4], a2[4];
        if constexpr (kXS) {
          // Matrices 0-3 of a step: rows 0-7 / 8-15 of tile i, the step's first / second 16 bytes.
          const int row = i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          const uint32_t* r = xs[round & 1][u][row];
          ldmatrix_x4_at(a1, smem_u32(r + xs_unit_word(row, lane >> 4)));
          ldmatrix_x4_at(a2, smem_u32(r + xs_unit_word(row, 2 + (lane >> 4))));
        } else {
          a1[0] = av[u][i][0].x, a1[1] = av[u][i][1].x, a1[2] = av[u][i][0].y, a1[3] = av[u][i][1].y;
          a2[0] = av[u][i][0].z, a2[1] = av[u][i][1].z, a2[2] = av[u][i][0].w, a2[3] = av[u][i][1].w;
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma16816<T>(acc[i][j], a1, bv[u][j].x, bv[u][j].y);
          mma16816<T>(acc[i][j], a2, bv[u][j].z, bv[u][j].w);
        }
      }
    }
  }

  if (kXS && !SILU && n_base >= a.N) return;  // (kXS: stayed for the barriers)
  if constexpr (SILU) {
    __shared__ float gate[MT * 16][33];  // rounded gate sums of the CTA's rows (+1: fewer bank conflicts)
    if (warp < 2) silu_gate_to_smem<T, MT>(gate, acc, warp, gid, tig);
    __syncthreads();  // the up warps read the gate warps' values
    if (warp >= 2) silu_up_store<T, MT>(a, gate, acc, m_base, int(blockIdx.y) * 32, warp, gid, tig);
    return;
  }
  store_tile<T, MT, NT>(a, acc, m_base, n_base, s, gid, tig);
}

// ---- v2: the same MMAs in the same order, fed through a cp.async pipeline.
// Per element it issues exactly v1's sequence: chunks of 32 k ascending from the segment start,
// MMA 1 (chunk offsets step_k(tig) + {0..3}) then MMA 2 (16 further) into one accumulator that
// starts at 0, fragments of k past the segment end zero-filled as v1 zeroes them; so v2 gives
// v1's bits (tests/cuda_ops_test checks it for every M it covers). Only the way the operands
// reach the registers differs: each thread copies its own 16-byte fragments of chunk c + S - 1
// into its own shared-memory slots (cp.async, S stages) while the MMAs of chunk c run, so a warp
// keeps S - 1 chunks of weights in flight instead of v1's load-then-use rounds of U chunks.
// Measured on the H200 (run 5, bench/results/h200_run5_gemm_bench.*): bit-identical to v1 but
// slower where it matters (8B lm_head 2.98 vs 3.70 TB/s at M = 1, gate_up 2.81 vs 3.93; faster
// only on the small split-8 layers of 0.6B), so v1 stays the default and v2 is opt-in.
// A thread reads back only what it copied itself: cp.async.wait_group makes those writes visible
// to it, so no barrier is needed (and warps leave early freely, as in v1).
// Shared memory of one CTA: [kWarps][S stages][F fragments][32 lanes] x 16 bytes.
template <int MT, int NT, int S>
constexpr size_t v2_smem_bytes() {
  return size_t(kWarps) * S * (NT + 2 * MT) * 32 * sizeof(uint4);
}

template <typename T, int MT, int NT, int S>
__global__ void __launch_bounds__(kWarps * 32) gemm_v2_kernel(GemmArgs a) {
  pdl_begin();  // before any memory access or return (common.cuh)
  static_assert(S >= 2, "cp.async pipeline needs two stages at least");
  constexpr int F = NT + 2 * MT;  // 16-byte fragments per thread per chunk: NT of W, 2·MT of x
  extern __shared__ uint4 v2_smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const int n_base = (blockIdx.y * kWarps + warp) * NT * 8;
  if (n_base >= a.N) return;  // no barriers in this kernel: a warp may leave early
  const int m_base = blockIdx.x * MT * 16;
  const int s = blockIdx.z;
  const int k_begin = s * a.kseg;
  const int k_end = min(a.K, k_begin + a.kseg);
  const int chunks = (k_end - k_begin + 31) >> 5;  // v1's chunks: every one starts before k_end

  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  // Rows past M / columns past N read a valid row and are never stored (as v1).
  const T* wrow[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) wrow[j] = w + int64_t(min(n_base + j * 8 + gid, a.N - 1)) * a.K;
  const T* xrow[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) xrow[i][h] = x + int64_t(min(m_base + i * 16 + h * 8 + gid, a.M - 1)) * a.ldx;

  // This thread's slot of fragment f in stage st: slots[(st * F + f) * 32] (lanes side by side,
  // so a warp's 16-byte reads and copies touch 512 consecutive bytes: no bank conflicts).
  uint4* slots = v2_smem + size_t(warp) * (S * F * 32) + lane;
  const uint32_t slots_s = smem_u32(slots);
  // A slot holds v1's uint4 of the chunk: step 1's 8 bytes (chunk offset 4·tig), then step 2's
  // (16 further), each copied on its own (zero-filled past the segment end).
  auto issue = [&](int c, int st) {
    const int k = k_begin + c * 32 + step_k(tig);  // K % 8 == 0: a thread's 4 values are all in or all out
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int kq = k + 16 * q;
      const bool in = kq < k_end;
      const int bytes = in ? 8 : 0;
      const int kk = in ? kq : 0;  // a valid address even when nothing is read
#pragma unroll
      for (int j = 0; j < NT; ++j) cp_async_ca8(slots_s + uint32_t((st * F + j) * 32 * 16 + 8 * q), wrow[j] + kk, bytes);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          cp_async_ca8(slots_s + uint32_t((st * F + NT + 2 * i + h) * 32 * 16 + 8 * q), xrow[i][h] + kk, bytes);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;

  // Prologue: chunks 0 .. S-2 in flight (one commit group per chunk, empty past the end, so the
  // group count stays uniform and wait_group<S-2> below always means "chunk c has landed").
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < chunks) issue(st, st);
    cp_async_commit();
  }
  int rd = 0, wr = S - 1;
  for (int c = 0; c < chunks; ++c) {
    cp_async_wait<S - 2>();
    uint4 bv[NT], av[MT][2];
#pragma unroll
    for (int j = 0; j < NT; ++j) bv[j] = slots[(rd * F + j) * 32];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) av[i][h] = slots[(rd * F + NT + 2 * i + h) * 32];
    // Refill the stage read in the previous iteration: its values already fed that iteration's
    // MMAs (so the reads are done), and the "memory" clobbers keep this copy after them.
    if (c + S - 1 < chunks) issue(c + S - 1, wr);
    cp_async_commit();
    rd = rd + 1 == S ? 0 : rd + 1;
    wr = wr + 1 == S ? 0 : wr + 1;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const uint32_t a1[4] = {av[i][0].x, av[i][1].x, av[i][0].y, av[i][1].y};
      const uint32_t a2[4] = {av[i][0].z, av[i][1].z, av[i][0].w, av[i][1].w};
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma16816<T>(acc[i][j], a1, bv[j].x, bv[j].y);
        mma16816<T>(acc[i][j], a2, bv[j].z, bv[j].w);
      }
    }
  }
  cp_async_wait<0>();  // nothing may still write this CTA's shared memory when the warp exits

  store_tile<T, MT, NT>(a, acc, m_base, n_base, s, gid, tig);
}

// ---- tiled: the same MMAs in the same order, with operands shared through shared memory.
// v1 and v2 give every warp its own copy of the activation rows, which is right for decode (the
// weights dominate) but re-reads x once per 16 columns when M is large (prefill, big batches):
// at M = 2048 that traffic, not the tensor cores, sets the time. Here a CTA of WM x WN warps
// stages a BM x 32 tile of x and a BN x 32 tile of W per chunk in shared memory (cp.async,
// S stages, every thread copying 16-byte units for the whole CTA), and each warp reads its
// MT x NT fragments from there. A thread reads exactly v1's registers (row gid / column gid,
// k = chunk start + step_k(tig) .. + 3 and 16 further) and issues v1's two MMAs per chunk in v1's order,
// so every element gets v1's sum; only who loads what changes. A stage holds each row's first 16 k
// (32 bytes) for all rows, then their last 16: the 16 threads of one 8-byte shared-memory phase
// read 4 whole 32-byte row halves, so reads are conflict-free.
// Split-K: a CTA either sums all `split` segments of its tile itself (combine: the segment sums
// are added in segment order, from segment 0, exactly as gemm_reduce does, then stored), or
// sums one segment (grid z = segment) into the partials for the reduce kernel or a consumer.
template <int BM, int BN, int WM, int WN>
constexpr size_t tiled_stage_bytes() {
  return size_t(BM + BN) * 32 * 2;
}

template <typename T, int BM, int BN, int WM, int WN, int S, bool combine>
__global__ void __launch_bounds__(WM * WN * 32) gemm_tiled_kernel(GemmArgs a, int split) {
  pdl_begin();  // before any memory access or return (common.cuh)
  constexpr int kThreads = WM * WN * 32;
  constexpr int MT = BM / WM / 16, NT = BN / WN / 8;
  static_assert(MT * 16 * WM == BM && NT * 8 * WN == BN, "warp tiles must cover the CTA tile");
  constexpr int kUnits = (BM + BN) * 4;  // 16-byte units per chunk (4 per 64-byte row)
  extern __shared__ uint4 tiled_smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const int wm = warp / WN, wn = warp % WN;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  // Segments this CTA sums: all of them (combine) or segment blockIdx.z (split == 1: the one).
  const int s_first = combine ? 0 : int(blockIdx.z);
  const int s_count = combine ? split : 1;
  const int cps = (a.kseg + 31) >> 5;  // chunks per segment (the last one zero-filled past its end)
  const int chunks = s_count * cps;

  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const uint32_t smem_base = smem_u32(tiled_smem);
  // Chunk c (of this CTA) into stage st: unit u is row u / 4 (x rows first, then W rows), k
  // offset 8 · (u % 4), stored at half (u % 4) / 2 of the stage, its row's 32 bytes there. Rows past
  // M or N and k past the segment end are zero-filled (read nothing).
  auto issue = [&](int c, int st) {
    const int seg = s_first + c / cps;
    const int kin = (c % cps) * 32;  // offset inside the segment
    const int kbase = seg * a.kseg + kin;
#pragma unroll
    for (int u0 = 0; u0 < kUnits; u0 += kThreads) {
      const int u = u0 + tid;
      if (kUnits % kThreads != 0 && u >= kUnits) break;
      const int row = u >> 2, q = u & 3;
      const bool kin_ok = kin + q * 8 < a.kseg;
      const uint32_t dst = smem_base + uint32_t(st) * uint32_t(tiled_stage_bytes<BM, BN, WM, WN>()) +
                           uint32_t(((q >> 1) * (BM + BN) + row) * 32 + (q & 1) * 16);
      if (row < BM) {
        const int m = m0 + row;
        const bool in = kin_ok && m < a.M;
        const T* src = x + int64_t(in ? m : 0) * a.ldx + (in ? kbase + q * 8 : 0);
        cp_async_ca(dst, src, in ? 16 : 0);
      } else {
        const int n = n0 + row - BM;
        const bool in = kin_ok && n < a.N;
        const T* src = w + int64_t(in ? n : 0) * a.K + (in ? kbase + q * 8 : 0);
        cp_async_cg(dst, src, in ? 16 : 0);
      }
    }
  };

  float acc[MT][NT][4], tot[combine ? MT : 1][NT][4];  // tot: the running sum of whole segments
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < chunks) issue(st, st);
    cp_async_commit();
  }
  const uint4* sm = tiled_smem;
  constexpr int kStageUnits = int(tiled_stage_bytes<BM, BN, WM, WN>() / 16);
  for (int c = 0; c < chunks; ++c) {
    cp_async_wait<S - 2>();
    __syncthreads();  // chunk c visible to every warp; every warp is done with chunk c - 1's stage
    if (c + S - 1 < chunks) issue(c + S - 1, (c + S - 1) % S);
    cp_async_commit();
    // Row r's words of step q at uint2 index (q (BM + BN) + r) 4 + step_k(tig) / 4.
    const uint2* stage = reinterpret_cast<const uint2*>(sm + (c % S) * kStageUnits);
    const int kq = step_k(tig) >> 2;
    auto words = [&](int r) {
      const uint2 s1 = stage[r * 4 + kq], s2 = stage[((BM + BN) + r) * 4 + kq];
      return make_uint4(s1.x, s1.y, s2.x, s2.y);
    };
    uint4 bv[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) bv[j] = words(BM + wn * NT * 8 + j * 8 + gid);
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const uint4 lo = words(wm * MT * 16 + i * 16 + gid);
      const uint4 hi = words(wm * MT * 16 + i * 16 + 8 + gid);
      const uint32_t a1[4] = {lo.x, hi.x, lo.y, hi.y};
      const uint32_t a2[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma16816<T>(acc[i][j], a1, bv[j].x, bv[j].y);
        mma16816<T>(acc[i][j], a2, bv[j].z, bv[j].w);
      }
    }
    if constexpr (combine) {
      if ((c + 1) % cps == 0) {
      // End of a segment: add its sum in segment order (from segment 0), then start the next at 0.
      const bool first = c + 1 == cps;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            tot[i][j][e] = first ? acc[i][j][e] : fadd(tot[i][j][e], acc[i][j][e]);
            acc[i][j][e] = 0.0f;
          }
      }
    }
  }
  cp_async_wait<0>();

  const int m_base = m0 + wm * MT * 16, n_base = n0 + wn * NT * 8;
  if constexpr (combine) {
    GemmArgs out = a;
    out.partial = nullptr;  // the sum is whole: store it as the unsplit kernel would
    store_tile<T, MT, NT>(out, tot, m_base, n_base, 0, gid, tig);
  } else {
    store_tile<T, MT, NT>(a, acc, m_base, n_base, s_first, gid, tig);
  }
}

// y[m, n] = partial[0] + partial[1] + ... in segment order (starting from partial[0], not from 0,
// so a single segment gives the same bits as the unsplit kernel), then rounded (or fp32).
template <typename T>
__global__ void gemm_reduce_kernel(const float* __restrict__ partial, int M, int N, int split, void* y, float* y32,
                                   int ldy) {
  pdl_begin();  // before any memory access or return (common.cuh)
  const int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 2;
  const int64_t total = int64_t(M) * N;
  if (i >= total) return;
  float2 v = *reinterpret_cast<const float2*>(partial + i);
  for (int s = 1; s < split; ++s) {
    const float2 p = *reinterpret_cast<const float2*>(partial + int64_t(s) * total + i);
    v.x = fadd(v.x, p.x);
    v.y = fadd(v.y, p.y);
  }
  const int64_t m = i / N, n = i % N;
  if (y32) {
    *reinterpret_cast<float2*>(y32 + m * ldy + n) = v;
  } else {
    *reinterpret_cast<uint32_t*>(static_cast<T*>(y) + m * ldy + n) = pack2<T>(v.x, v.y);
  }
}

GemmTuning tuning();  // below: the speed knobs

// Prefetch only for weights of at most 16 MiB: on the H200 (session 8, s8_prefetch) it made the
// 0.6B's steps 2-3% faster and the 8B's (33-200 MB weights, longer kernels) 0.5-4% slower.
bool small_weight(const GemmArgs& a) { return int64_t(a.N) * a.K * 2 <= (int64_t(16) << 20); }
int prefetch_for(const GemmArgs& a) {
  return pdl_enabled() && small_weight(a) ? tuning().v1_prefetch_bytes : 0;  // no PDL: nothing to overlap
}

template <typename T, int MT, int NT, int U, bool SILU = false>
void launch(const GemmArgs& a, int split, cudaStream_t stream) {
  dim3 grid(ceil_div(a.M, MT * 16), SILU ? a.silu_cols / 32 : ceil_div(a.N, kWarps * NT * 8), split);
  GemmArgs p = a;
  p.prefetch_bytes = prefetch_for(a);
  pdl_launch(gemm_kernel<T, MT, NT, U, SILU>, dim3(grid), dim3(kWarps * 32), 0, stream, p);
  VB_CUDA_LAUNCHED();
}

// Speed knobs (kernels.h GemmTuning): read from the environment at first use, set by tests and
// benchmarks. None changes a bit (the tests run every setting).
std::mutex g_tuning_mu;
bool g_tuning_set = false;
GemmTuning g_tuning;
GemmTuning tuning_from_env() {
  GemmTuning t;
  t.tiled_min_m = std::max(0, env_int("VERBATIM_GEMM_TILED_MIN_M", t.tiled_min_m));
  t.tiled_combine = env_int("VERBATIM_GEMM_TILED_COMBINE", t.tiled_combine);
  t.tiled_wide = env_int("VERBATIM_GEMM_TILED_WIDE", t.tiled_wide ? 1 : 0) == 1;
  t.tiled_wgmma = env_int("VERBATIM_GEMM_WGMMA", t.tiled_wgmma ? 1 : 0) == 1;
  t.wgmma_combine = env_int("VERBATIM_GEMM_WGMMA_COMBINE", t.wgmma_combine);
  t.wgmma_rows = env_int("VERBATIM_GEMM_WGMMA_ROWS", t.wgmma_rows) == 256 ? 256 : 128;
  t.wgmma_sum_rows = env_int("VERBATIM_GEMM_WGMMA_SUM_ROWS", t.wgmma_sum_rows);
  t.wgmma_tma = env_int("VERBATIM_GEMM_WGMMA_TMA", t.wgmma_tma ? 1 : 0) == 1;
  t.wgmma_lag = env_int("VERBATIM_GEMM_WGMMA_LAG", t.wgmma_lag) == 1 ? 1 : 0;
  t.wgmma_pairs = env_int("VERBATIM_GEMM_WGMMA_PAIRS", t.wgmma_pairs ? 1 : 0) == 1;
  t.wgmma_persist = env_int("VERBATIM_GEMM_WGMMA_PERSIST", t.wgmma_persist ? 1 : 0) == 1;
  t.v1_m64 = env_int("VERBATIM_GEMM_V1_M64", env_int("VERBATIM_GEMM_WIDE64", 0) == 1 ? 1 : t.v1_m64);
  t.v1_unroll16 = env_int("VERBATIM_GEMM_V1_UNROLL16", t.v1_unroll16) == 8 ? 8 : 4;
  const int u32 = env_int("VERBATIM_GEMM_V1_UNROLL32", t.v1_unroll32);
  t.v1_unroll32 = u32 == 6 || u32 == 8 ? u32 : 4;
  t.v1_prefetch_bytes = std::max(0, env_int("VERBATIM_GEMM_V1_PREFETCH", t.v1_prefetch_bytes));
  t.stream_stages16 = std::clamp(env_int("VERBATIM_GEMM_STREAM_STAGES", t.stream_stages16), 3, 5);
  t.stream_stages32 = std::clamp(env_int("VERBATIM_GEMM_STREAM_STAGES32", t.stream_stages32), 3, 4);
  t.stream_preload = std::clamp(env_int("VERBATIM_GEMM_STREAM_PRELOAD", t.stream_preload), 0, 3);
  t.stream_preload_l2 = std::clamp(env_int("VERBATIM_GEMM_STREAM_PRELOAD_L2", t.stream_preload_l2), 0, 64);
  t.stream_preload_stages = std::clamp(env_int("VERBATIM_GEMM_STREAM_PRELOAD_STAGES", t.stream_preload_stages), 0, 5);
  return t;
}
GemmTuning tuning() {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  if (!g_tuning_set) {
    g_tuning = tuning_from_env();
    g_tuning_set = true;
  }
  return g_tuning;
}
// The stream kernel's knobs for this launch: the preload only under PDL (nothing to overlap
// without); at stream_preload 1 for weights of <= 16 MiB (as prefetch_for) and for every weight at
// <= 32 rows, at 3 for weights of <= 16 MiB only (session 22's rule).
StreamTuning stream_tuning(const GemmArgs& a) {
  const GemmTuning t = tuning();
  const bool wanted = t.stream_preload == 2 ? true
                      : t.stream_preload == 1 ? small_weight(a) || a.M <= 32
                      : t.stream_preload == 3 ? small_weight(a)
                                              : false;
  const bool pre = pdl_enabled() && wanted;
  const int stages = t.stream_preload_stages > 0 ? t.stream_preload_stages : 99;  // 99: the whole ring
  return {t.stream_stages16, t.stream_stages32, pre ? stages : 0, pre ? t.stream_preload_l2 : 0};
}

// Up to 32 rows, with or without the SiLU epilogue (gemm_silu_mul): one 16-row tile per warp with
// 4 or 8 chunks a round (v1_unroll16), or at 17..32 rows 32 rows with 4, 6 or 8 (v1_unroll32).
template <typename T, bool SILU>
void launch_up_to_32(const GemmArgs& a, int split, cudaStream_t stream) {
  if (a.M <= 16) {
    if (tuning().v1_unroll16 == 8) return launch<T, 1, 2, 8, SILU>(a, split, stream);
    return launch<T, 1, 2, 4, SILU>(a, split, stream);
  }
  if (tuning().v1_unroll32 == 8) return launch<T, 2, 2, 8, SILU>(a, split, stream);
  if (tuning().v1_unroll32 == 6) return launch<T, 2, 2, 6, SILU>(a, split, stream);
  launch<T, 2, 2, 4, SILU>(a, split, stream);
}

// The row tile follows M (speed only; see the header comment): small M holds one 16-row MMA tile
// per warp and streams W with deep unrolling; large M holds 64 rows x 32 columns per warp.
// Rows 17..32: 4, 6 or 8 chunks a round (GemmTuning::v1_unroll32). Rows 33..64 (v1_m64): 0 one
// 64-row tile of 16 columns per warp, 2 chunks a round; 1 64 x 32 (x read from L2 half as often,
// half as many warps); 2 two 32-row tiles (grid x = 2, the row blocks of one column tile side by
// side in launch order, so the second reads W from L2); 3 (the default) as 0 with 4 chunks a round.
template <typename T>
void launch_for_m(const GemmArgs& a, int split, cudaStream_t stream) {
  if (a.M <= 32) return launch_up_to_32<T, false>(a, split, stream);
  if (a.M <= 64) {
    const int v = tuning().v1_m64;
    if (v == 2) return launch<T, 2, 2, 4>(a, split, stream);
    if (v == 3) return launch<T, 4, 2, 4>(a, split, stream);
    if (v == 0) return launch<T, 4, 2, 2>(a, split, stream);
  }
  return launch<T, 4, 4, 2>(a, split, stream);
}

template <typename T, int MT, int NT, int S>
void launch_v2(const GemmArgs& a, int split, cudaStream_t stream) {
  dim3 grid(ceil_div(a.M, MT * 16), ceil_div(a.N, kWarps * NT * 8), split);
  pdl_launch(gemm_v2_kernel<T, MT, NT, S>, dim3(grid), dim3(kWarps * 32), v2_smem_bytes<MT, NT, S>(), stream, a);
  VB_CUDA_LAUNCHED();
}

// v2's tiles (speed only, as in v1): up to 64 rows, 16 columns per warp, the pipeline as deep as
// about 64-80 KB of shared memory per CTA allows (three CTAs per SM for decode). Past 64 rows
// (prefill) the v1 kernel runs: same bits either way.
constexpr int kV2MaxM = 64;
template <typename T>
void set_v2_smem_limits() {
  VB_CUDA(cudaFuncSetAttribute(gemm_v2_kernel<T, 1, 2, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(v2_smem_bytes<1, 2, 8>())));
  VB_CUDA(cudaFuncSetAttribute(gemm_v2_kernel<T, 2, 2, 6>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(v2_smem_bytes<2, 2, 6>())));
  VB_CUDA(cudaFuncSetAttribute(gemm_v2_kernel<T, 4, 2, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(v2_smem_bytes<4, 2, 4>())));
}
template <typename T>
void launch_v2_for_m(const GemmArgs& a, int split, cudaStream_t stream) {
  if (a.M <= 16) return launch_v2<T, 1, 2, 8>(a, split, stream);
  if (a.M <= 32) return launch_v2<T, 2, 2, 6>(a, split, stream);
  return launch_v2<T, 4, 2, 4>(a, split, stream);
}


// Tiled configurations (speed only: every one gives v1's bits). Large M: 128 x 128 per CTA.
// Up to 64 rows: one row tile of 16/32/64, 128 columns, 8 warps of 16 columns.
template <typename T, int BM, int BN, int WM, int WN, int S, bool combine>
void launch_tiled_cfg(const GemmArgs& a, int split, cudaStream_t stream) {
  constexpr size_t smem = size_t(S) * tiled_stage_bytes<BM, BN, WM, WN>();
  static_assert(smem <= 200 * 1024, "tiled GEMM stages exceed shared memory");
  auto* k = gemm_tiled_kernel<T, BM, BN, WM, WN, S, combine>;
  // Raised here and not in gemm_prepare: one attribute per instantiation.
  static std::atomic<uint64_t> done{0};
  once_per_device(done, [&] { VB_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem))); });
  dim3 grid(ceil_div(a.M, BM), ceil_div(a.N, BN), combine ? 1 : split);
  pdl_launch(k, grid, dim3(WM * WN * 32), smem, stream, a, split);
  VB_CUDA_LAUNCHED();
}

struct TiledShape {
  int bm, bn;
};
TiledShape tiled_shape(int M) {
  if (M <= 16) return {16, 128};
  if (M <= 32) return {32, 128};
  if (M <= 64) return {64, 128};
  return {128, 128};  // (128 x 256 with tiled_wide when the segments go to partials)
}
// Whether a tiled CTA sums every segment itself: when the tiles alone fill the GPU (about one
// CTA per SM); otherwise one CTA per (tile, segment) into partials, summed by gemm_reduce or
// a consumer. Either way the same additions in the same order (see the kernel's comment).
// Rows past 64 run the wgmma kernel unless GemmTuning::tiled_wgmma is off (same bits either way).
bool tiled_uses_wgmma(int M) { return M > 64 && tuning().tiled_wgmma; }
bool tiled_combines(int M, int N, int split) {
  if (split <= 1) return true;
  const int forced = tiled_uses_wgmma(M) ? tuning().wgmma_combine : tuning().tiled_combine;
  if (forced >= 0) return forced == 1;
  const TiledShape t = tiled_shape(M);
  return int64_t(ceil_div(M, t.bm)) * ceil_div(N, t.bn) >= 128;
}

template <typename T, bool combine>
void launch_tiled_for_m(const GemmArgs& a, int split, cudaStream_t stream) {
  if (a.M <= 16) return launch_tiled_cfg<T, 16, 128, 1, 8, 8, combine>(a, split, stream);
  if (a.M <= 32) return launch_tiled_cfg<T, 32, 128, 1, 8, 6, combine>(a, split, stream);
  if (a.M <= 64) return launch_tiled_cfg<T, 64, 128, 1, 8, 5, combine>(a, split, stream);
  if (tiled_uses_wgmma(a.M))
    return launch_wgmma<T>(a, split, combine, tuning(), stream);  // (a.tot: 256 rows, adding)
  // Adding segments in the kernel keeps a second set of sums: 16 warps of 32 x 32 fit it in
  // registers (8 warps of 64 x 32 spill); without it, 8 warps of 64 x 32 read less shared memory.
  if (combine) return launch_tiled_cfg<T, 128, 128, 4, 4, 4, true>(a, split, stream);
  // GemmTuning::tiled_wide: 128 x 256 per CTA, 8 warps of 64 x 64 (half the shared-memory reads
  // per MMA of 64 x 32).
  if (tuning().tiled_wide) return launch_tiled_cfg<T, 128, 256, 2, 4, 3, false>(a, split, stream);
  return launch_tiled_cfg<T, 128, 128, 2, 4, 4, false>(a, split, stream);
}
// split == 1 needs no second set of sums: the per-segment kernel with z = 1 stores its one sum.
template <typename T>
void launch_tiled(const GemmArgs& a, int split, cudaStream_t stream) {
  if (split == 1 || a.partial) return launch_tiled_for_m<T, false>(a, split, stream);
  launch_tiled_for_m<T, true>(a, split, stream);
}

// The variant in use: VERBATIM_GEMM=v1|v2|tiled|stream|auto in the environment at first use, else
// auto; tests and benchmarks may switch it (set_gemm_kernel). All give the same bits.
std::atomic<int> g_kernel{-1};
GemmKernel kernel_from_env() {
  const char* e = std::getenv("VERBATIM_GEMM");
  const std::string v = e ? e : "";
  if (v == "v2") return GemmKernel::V2;
  if (v == "v1") return GemmKernel::V1;
  if (v == "tiled") return GemmKernel::Tiled;
  if (v == "stream") return GemmKernel::Stream;
  return GemmKernel::Auto;
}
// Auto: rows above tiled_min_m run the tiled kernel, the rest the stream kernel where its tensor
// maps fit, else v1. Stream: the same, and always the stream kernel up to 64 rows (where it fits).
// (H200 session 21, s21_c, engine-bench ms/step at batch 1 / 8 / 32 / 64, v1 -> stream: 8B 4.99 /
// 5.59 / 8.03 / 12.22 -> 4.78-4.81 / 5.46-5.48 / 7.43 / 9.86-9.89; 1.7B 1.79 / 2.34 / 3.61 / 5.46
// -> 1.74 / 2.24 / 3.52 / 5.04; 0.6B 1.16 / 1.72 / 2.94 / 4.46 -> 1.17 / 1.69 / 2.90 / 4.34.)
int tiled_min_rows() { return tuning().tiled_min_m; }
// The kernel in use takes the stream kernel up to 64 rows (where its tensor maps fit).
bool stream_selected() {
  const GemmKernel k = active_gemm_kernel();
  return k == GemmKernel::Stream || k == GemmKernel::Auto;
}
bool uses_stream(const GemmArgs& a, size_t esize) { return stream_selected() && stream_fits(a, esize); }
bool uses_tiled(int M) {
  const GemmKernel k = active_gemm_kernel();
  if (k == GemmKernel::Stream) return M > kStreamMaxM;
  return k == GemmKernel::Tiled || (k == GemmKernel::Auto && M > tiled_min_rows());
}

// One pass of M rows (a.partial set when split > 1 and the segments go to partials).
template <typename T>
void launch_any(const GemmArgs& a, int split, cudaStream_t stream);
void launch_for_dtype(const GemmArgs& a, int split, DType t, cudaStream_t stream) {
  if (t == DType::BF16) launch_any<bf16>(a, split, stream);
  else if (t == DType::F16) launch_any<f16>(a, split, stream);
  else throw Error("cuda gemm: activations must be bf16 or fp16");
}
template <typename T>
void launch_any(const GemmArgs& a, int split, cudaStream_t stream) {
  if (uses_tiled(a.M)) return launch_tiled<T>(a, split, stream);
  if (uses_stream(a, sizeof(T))) return launch_stream<T>(a, split, stream_tuning(a), stream);
  if (active_gemm_kernel() == GemmKernel::V2 && a.M <= kV2MaxM) {
    gemm_prepare();
    return launch_v2_for_m<T>(a, split, stream);
  }
  launch_for_m<T>(a, split, stream);
}

// Rows per pass of the wgmma kernel adding segments on 256-row CTAs (sums in the workspace): whole
// 256-row tiles that fit, and every pass over 64 rows (fewer would not run the wgmma kernel). 0:
// not that kernel (GemmTuning::wgmma_sum_rows 128, by size too small, or no pass fits), 128-row
// CTAs in one pass.
int wgmma_sum_pass_rows(int M, int N, int K, size_t workspace_bytes) {
  const int rows = tuning().wgmma_sum_rows;
  if (!tiled_uses_wgmma(M) || rows == 128) return 0;
  // By size (-1): 256 rows where K is long and the tiles still fill the GPU. H200, session 10, 2,048
  // rows: 8B qkv / o (K 4,096; 384 / 256 CTAs) 269 / 267 TFLOP/s on 256 rows against 259 / 255 on
  // 128; 0.6B o (64 CTAs of 256 rows) 110 against 214, qkv / gate_up (K 1,024) 188 / 193 against
  // 198 / 202.
  if (rows != 256 && (K < 4096 || int64_t(ceil_div(M, 256)) * ceil_div(N, 128) < 128)) return 0;
  const size_t fit = workspace_bytes / gemm_impl::wgmma_tot_bytes(256, N);
  int pass = int(std::min<size_t>(size_t(ceil_div(M, 256)), fit)) * 256;
  while (pass > 256 && M % pass > 0 && M % pass <= 64) pass -= 256;
  return pass > 0 && (M % pass == 0 || M % pass > 64) ? pass : 0;
}

}  // namespace

GemmKernel active_gemm_kernel() {
  int k = g_kernel.load(std::memory_order_relaxed);
  if (k < 0) {
    k = int(kernel_from_env());
    g_kernel.store(k, std::memory_order_relaxed);
  }
  return GemmKernel(k);
}
void set_gemm_kernel(GemmKernel k) { g_kernel.store(int(k), std::memory_order_relaxed); }
const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::V1: return "v1";
    case GemmKernel::V2: return "v2";
    case GemmKernel::Tiled: return "tiled";
    case GemmKernel::Stream: return "stream";
    case GemmKernel::Auto: break;
  }
  return "auto";
}

GemmTuning gemm_tuning() { return tuning(); }
void set_gemm_tuning(const GemmTuning& t) {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  g_tuning = t;
  g_tuning_set = true;
}

bool gemm_sums_in_kernel(int M, int N, int split) {
  return split > 1 && uses_tiled(M) && tiled_combines(M, N, split);
}

void gemm_prepare() {
  static std::atomic<uint64_t> done{0};
  once_per_device(done, [] {
    set_v2_smem_limits<bf16>();
    set_v2_smem_limits<f16>();
  });
}

int gemm_split_for(int N, int K) {
  // Enough warps to stream W for one row (about 1024 warps of 16 columns), segments of >= 256 k.
  // A function of (N, K) only: the same weight always sums in the same segments, whatever M.
  // (H200 run 3 tried 2048 warps, segments >= 128 and 8-column decode tiles: slower.)
  const int groups = ceil_div(N, 16);
  int s = 1;
  while (groups * s < 1024 && K % (64 * s) == 0 && K / (2 * s) >= 256) s *= 2;
  return s;
}

size_t gemm_workspace_bytes(int M, int N, int split) {
  return split > 1 ? size_t(split) * size_t(M) * size_t(N) * sizeof(float) : 0;
}

std::string gemm_tile_name(int M) {
  if (uses_tiled(M)) {
    if (tiled_uses_wgmma(M))  // (split layers that add their segments: wgmma_sum_rows)
      return tuning().wgmma_rows == 256 ? "tiled-wgmma:m256n128k64" : "tiled-wgmma:m128n128k64";
    const TiledShape t = tiled_shape(M);
    return "tiled-cpasync:m" + std::to_string(t.bm) + "n" + std::to_string(t.bn);
  }
  if (stream_selected() && M <= kStreamMaxM)  // (where the tensor maps fit)
    return M <= 16 ? "stream-tma:m16n64s" + std::to_string(tuning().stream_stages16)
                   : M <= 32 ? "stream-tma:m32n64s" + std::to_string(tuning().stream_stages32)
                             : "stream-tma:m64n64s3";
  if (active_gemm_kernel() == GemmKernel::V2 && M <= kV2MaxM) {
    if (M <= 16) return "v2-cpasync:m16n16s8";
    if (M <= 32) return "v2-cpasync:m32n16s6";
    return "v2-cpasync:m64n16s4";
  }
  if (M <= 16) return tuning().v1_unroll16 == 8 ? "mma16816:m16n16u8" : "mma16816:m16n16u4";
  if (M <= 32) return "mma16816:m32n16u" + std::to_string(tuning().v1_unroll32);
  if (M <= 64 && tuning().v1_m64 == 0) return "mma16816:m64n16u2";
  if (M <= 64 && tuning().v1_m64 == 3) return "mma16816:m64n16u4";
  if (M <= 64 && tuning().v1_m64 == 2) return "mma16816:m32n16u4x2";
  return "mma16816:m64n32u2";
}

bool gemm_silu_mul_ok(int M, int K, int I, int split) {
  static const bool on = [] {
    const char* e = std::getenv("VERBATIM_GEMM_SILU");
    return !(e && std::string(e) == "0");
  }();
  // v1 up to 32 rows: on the H200 (session 8, s8_silu, 8B) the epilogue made steps of 1 / 8 rows
  // 0.6-0.9% faster, 32 rows the same, and 64 rows 0.8% slower than the separate kernel. Past 64
  // rows the wgmma kernel's epilogue, where it runs (gate and up in 64-column halves of a tile).
  const bool v1 = M >= 1 && M <= 32 && I % 32 == 0;
  const bool wg = M > 64 && uses_tiled(M) && tiled_uses_wgmma(M) && I % 64 == 0;
  if (split == 1) return on && (v1 || wg) && K % 8 == 0;
  // Split W (the 0.6B / 1.7B gate_up at decode): the stream kernel adds the segments itself, one
  // launch instead of the split GEMM and silu_mul_from, where its items (32 gate + 32 up columns,
  // every segment) fit one wave of the SMs: H200 session 22 (s22_h, ms/step at batch 1 / 8 / 32, 2
  // rounds, off -> on): 0.6B (96 items) 1.094-1.096 / 1.493-1.496 / 2.710-2.717 -> 1.083-1.088 /
  // 1.470-1.474 / 2.684-2.696; 1.7B (192 items: 1.45 waves) 1.691-1.706 / 2.098-2.112 / 3.389 ->
  // 1.703-1.715 / 2.092-2.105 / 3.402-3.410. VERBATIM_GEMM_SILU_SPLIT=0: never; 2: at any item count.
  static const int split_mode = env_int("VERBATIM_GEMM_SILU_SPLIT", 1);
  const bool wave = split_mode == 2 || (split_mode == 1 && I / 32 <= sm_count());
  return on && wave && split > 1 && v1 && stream_selected() && K % (32 * split) == 0;
}

void gemm_silu_mul(const void* x, int M, int K, const void* W, int I, DType t, void* out, cudaStream_t stream,
                   int split) {
  if (!gemm_silu_mul_ok(M, K, I, split))
    throw Error("cuda gemm_silu_mul: needs 1..32 rows and I % 32 == 0, or > 64 rows on wgmma and I % 64 == 0; K % 8 "
                "== 0; a split W only on the stream kernel at 1..32 rows");
  GemmArgs a{x, W, M, 2 * I, K, K, I, split > 1 ? K / split : K, out, nullptr, nullptr};
  a.silu_cols = I;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    if (M > 64) return launch_wgmma<T>(a, 1, false, tuning(), stream);
    if (uses_stream(a, sizeof(T))) return launch_stream<T>(a, split, stream_tuning(a), stream);
    if (split > 1) throw Error("cuda gemm_silu_mul: a split W needs the stream kernel (16-byte aligned x and W)");
    launch_up_to_32<T, true>(a, 1, stream);
  };
  if (t == DType::BF16) go(bf16{});
  else if (t == DType::F16) go(f16{});
  else throw Error("cuda gemm_silu_mul: activations must be bf16 or fp16");
}

void gemm(const void* x, int M, int K, int ldx, const void* W, int N, DType t, int split, GemmOut out,
          float* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (M <= 0) return;
  if (K % 8 || N % 8 || ldx % 8)
    throw Error("cuda gemm: K (" + std::to_string(K) + "), N (" + std::to_string(N) +
                ") and the row stride must be multiples of 8");
  // Segments of whole 8-element loads (a segment shorter than 32 k zero-fills its one chunk).
  if (split > 1 && (K % (8 * split))) throw Error("cuda gemm: split " + std::to_string(split) + " does not divide K");
  const int ldy = out.ldy ? out.ldy : N;
  GemmArgs a{x, W, M, N, K, ldx, ldy, split > 1 ? K / split : K, out.y, out.y32, nullptr};
  const size_t ebytes = dtype_size(t);
  // Rows [m0, m0 + rows) of the GEMM: each row is computed the same way in any slice.
  auto slice = [&](int m0, int rows) {
    GemmArgs s = a;
    s.M = rows;
    s.x = static_cast<const char*>(x) + size_t(m0) * ldx * ebytes;
    if (out.y) s.y = static_cast<char*>(out.y) + size_t(m0) * ldy * ebytes;
    if (out.y32) s.y32 = out.y32 + size_t(m0) * ldy;
    return s;
  };
  int rows_per_pass = M;
  if (split > 1 && out.partials_only) {
    if (gemm_workspace_bytes(M, N, split) > workspace_bytes) throw Error("cuda gemm: partials do not fit the workspace");
    GemmArgs s = a;
    s.partial = workspace;
    launch_for_dtype(s, split, t, stream);
    return;
  }
  if (split > 1 && gemm_sums_in_kernel(M, N, split)) {
    // The tiled kernel adds the segments itself, in segment order: no partials, no reduce. The
    // wgmma kernel on 256-row CTAs keeps its running sums in the workspace: rows in passes of
    // whole 256-row tiles that fit (none fit: 128-row CTAs, sums in shared memory).
    const int pass = workspace ? wgmma_sum_pass_rows(M, N, K, workspace_bytes) : 0;
    if (pass == 0) return launch_for_dtype(a, split, t, stream);
    for (int m0 = 0; m0 < M; m0 += pass) {
      GemmArgs s = slice(m0, std::min(pass, M - m0));
      s.tot = workspace;
      launch_for_dtype(s, split, t, stream);
    }
    return;
  }
  if (split > 1) {
    // Slice M so the partials fit the workspace.
    const size_t per_row = size_t(split) * size_t(N) * sizeof(float);
    rows_per_pass = int(std::min<size_t>(size_t(M), workspace_bytes / per_row));
    if (rows_per_pass <= 0) throw Error("cuda gemm: workspace too small for one row");
  }
  for (int m0 = 0; m0 < M; m0 += rows_per_pass) {
    GemmArgs s = slice(m0, std::min(rows_per_pass, M - m0));
    if (split > 1) s.partial = workspace;
    launch_for_dtype(s, split, t, stream);
    if (split > 1) {
      const int64_t pairs = int64_t(s.M) * N / 2;
      const int threads = 256;
      const int blocks = ceil_div(pairs, threads);
      if (t == DType::BF16)
        pdl_launch(gemm_reduce_kernel<bf16>, dim3(blocks), dim3(threads), 0, stream, workspace, s.M, N, split, s.y,
                   s.y32, ldy);
      else
        pdl_launch(gemm_reduce_kernel<f16>, dim3(blocks), dim3(threads), 0, stream, workspace, s.M, N, split, s.y,
                   s.y32, ldy);
      VB_CUDA_LAUNCHED();
    }
  }
}

}  // namespace verbatim::cuda
