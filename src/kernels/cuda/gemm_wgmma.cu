// GEMM y = x · W^T for prefill on Hopper's warpgroup MMA (wgmma), with v1's bits.
//
// Why it can: wgmma m64nNk16 sums a k16 step exactly as mma.sync m16n8k16 does for the same
// operands in the same k slots (bench/mma_probe.cu, H200: 0 differing outputs in every case), and
// a step's sum depends only on the set of 16 k it takes, not on which slot takes which k (mma_probe,
// session 13). v1 (gemm.cu) sums each 32-k chunk as two k16 steps over chunk elements 0..15 and
// 16..31 (its slots take them in another order, loaded 8 bytes a lane); this kernel issues the
// same two steps per chunk, in the same order, in the natural slot order (docs/numerics.md, "CUDA:
// one order, several kernels"):
// - x (operand A) and W (operand B) are both read by wgmma from shared memory in the K-major
//   64-byte-swizzle layout (gemm_wgmma_layout.h): a chunk is its rows of 64 bytes, 16-byte groups
//   swizzled, which is at once what one tensor copy of a box (32 k x rows) with the 64-byte swizzle
//   writes and what wgmma reads, so nothing is moved between the copy and the MMA.
// - Copies: per chunk, one tensor copy of x and one of W (TMA, issued by thread 0, completing on
//   the stage's mbarrier; session 11: 8B prefill 111 -> 89 ms against cp.async) or, where tensor
//   maps do not fit, every thread's 16-byte cp.async into the same places. S stages in flight.
//   (A first try with four no-swizzle boxes of 8 k per chunk gave the right bits at 184-205
//   TFLOP/s, half the staged kernel's: boxes 16 bytes wide are slow to copy.)
// (Until session 13 the steps took v1's strided k sets, 8·tig + {0..3} and 8·tig + {4..7}, which
// no tensor copy can lay out: every thread moved W's 4-byte words into wgmma's layout each chunk,
// a copy through registers, a second ring of buffers and a barrier per stage.)
// Segments (split-K) and zero-fill past a segment's end or past M / N are v1's: chunks of a
// segment ascend from its start, a segment sum starts at 0, the CTA either adds its segments in
// segment order (combine) or stores one segment's sum to the partials. tests/cuda_ops_test
// GemmKernelsAreV1BitForBit compares it with v1 byte for byte.
//
// Tile: BM rows (BM / 64 warpgroups of 64 rows; each warp of a warpgroup holds 16 rows of the
// accumulator, as mma.sync's) x 128 columns per CTA; KC chunks of 32 k per pipeline stage, S
// stages; LAG stages of MMAs (0 or 1) still running while the next stage's are issued.
// BM = 256 halves the W bytes each output needs from L2 (GemmTuning::wgmma_rows). Combine's second
// set of sums takes 64 KB of shared memory at 128 rows; at 256 (GemmTuning::wgmma_sum_rows) it is
// kept in the GEMM workspace instead (a.tot), so the split layers get the larger tile too.
// SiLU epilogue (a.silu_cols = I > 0, gemm_silu_mul, split 1): the CTA's W rows 0..63 are gate rows
// 64 y .., rows 64..127 the up rows I + 64 y ..; which CTA computes a column never changes its
// sum. Each thread then holds gate column c in acc[4j + e] and up column c in acc[4 (j + 8) + e]
// and writes round(round(silu(round(g))) * round(u)), silu_mul_from's arithmetic on the values the
// GEMM would have stored.
#include <cuda.h>  // CUtensorMap (types only: the encoder comes through the runtime's entry point)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

#include <string>

#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/gemm_wgmma.h"
#include "kernels/cuda/gemm_tma.cuh"
#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda::gemm_impl {
namespace {

constexpr int kBN = 128;
constexpr int kChunkBytesB = wgmma_layout::chunk_bytes(kBN);  // one 32-k chunk of the CTA's W rows
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most N of this warpgroup's committed MMA groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Shared-memory matrix descriptor, K-major with the 64-byte swizzle (layout type 2, gemm_wgmma_layout.h):
// start address (a chunk's rows + 32 bytes for step 1), SBO = the 8-row-group stride; LBO is not
// used by a swizzled K-major operand whose k16 step lies inside one swizzled row (1, as CUTLASS).
__device__ __forceinline__ uint64_t sw64_desc(uint32_t addr) {
  using namespace wgmma_layout;
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(kSbo >> 4) << 32) | (uint64_t(2) << 62);
}
// The same in the 128-byte swizzle (layout type 1; a pair: rows of 128 bytes, SBO 1,024).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  using namespace wgmma_layout;
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(kPairSbo >> 4) << 32) | (uint64_t(1) << 62);
}

#define VB_WGMMA_M64N128K16_SS(TY) \
    asm volatile(                                                                                                  \
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                 \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                               \
        "{"                                                                                                        \
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                                   \
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                                         \
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                                         \
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"                                          \
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                         \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),          \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),    \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])   \
        : "l"(desc_a), "l"(desc_b));

// d += A (64 x 16, shared memory) · B (16 x 128, shared memory), one k16 step for the warpgroup.
template <typename T>
__device__ __forceinline__ void wgmma_step(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    VB_WGMMA_M64N128K16_SS("bf16");
  } else {
    VB_WGMMA_M64N128K16_SS("f16");
  }
}

// Shared memory: S stages of x and W chunks, and combine's sums at 128 rows (then TMA's S stage
// barriers).
template <int BM, int KC, int S, bool combine>
constexpr size_t wgmma_smem_bytes() {
  return size_t(S) * KC * (wgmma_layout::chunk_bytes(BM) + kChunkBytesB) + (combine && BM == 128 ? 64 * 2 * BM * 4 : 0);
}

// PAIR (TMA, KC 2, segments of whole stages): a stage's two chunks of x and of W arrive as one box
// of 64 k each in the 128-byte swizzle (wgmma_layout "pairs"; rows of 128 bytes instead of 64, half
// the rows a copy walks), read by the same four k16 steps in the same order.
template <typename T, int BM, int KC, int S, int LAG, bool combine, bool TMA, bool PAIR = false>
__global__ void __launch_bounds__(2 * BM, 1)
    gemm_wgmma_kernel(GemmArgs a, int split, const __grid_constant__ CUtensorMap tmx,
                      const __grid_constant__ CUtensorMap tmw) {
  static_assert(LAG == 0 || LAG == 1, "stages of MMAs left running when the next is issued");
  static_assert(S >= 2 + LAG, "stage p + S - 1 - LAG is loaded while stage p is multiplied");
  // LAG 1 with combine: a segment's end is found at a stage's start, so the host runs it only where
  // segments are whole stages (launch_cfg: chunks per segment % KC == 0).
  static_assert(BM == 128 || BM == 256, "warpgroups of 64 rows, 2 or 4");
  static_assert(!PAIR || (TMA && KC == 2), "pairs: one tensor copy of two chunks");
  using namespace wgmma_layout;
  constexpr int kThreads = 2 * BM;                     // 4 warps (128 threads) per 64 rows
  constexpr int kChunkBytesA = chunk_bytes(BM);        // one 32-k chunk of the CTA's x rows
  constexpr int kXUnits = BM * 4 / kThreads;           // 16-byte units of x per thread and chunk: 2
  constexpr int kWUnits = kBN * 4 / kThreads;          // of W: 2 (BM 128) or 1 (BM 256)
  constexpr int kStageBytes = KC * (kChunkBytesA + kChunkBytesB);  // x and W of a stage
  constexpr int kAhead = S - 1 - LAG;                  // stages loaded ahead of the one multiplied
  pdl_begin();  // before any memory access or return (common.cuh)
  // The swizzle is a function of address bits 4-8 (64-byte) or 4-9 (128-byte, pairs): chunk and
  // pair buffers start at multiples of 1 KB (every chunk is a multiple of 8 KB) from a 1 KB-aligned
  // base.
  extern __shared__ __align__(1024) uint8_t wg_smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gid = lane >> 2, tig = lane & 3;
  // Tiles: (row tile, column tile, segment) flattened, row tiles fastest; this CTA takes tiles
  // blockIdx.x, + gridDim.x, ... (one each unless the host launched fewer CTAs than tiles, TMA
  // only: then the copies of a CTA's next tile start while it finishes the last one).
  const int tiles_x = (a.M + BM - 1) / BM;
  const int tiles_y = a.silu_cols > 0 ? a.silu_cols / 64 : (a.N + kBN - 1) / kBN;
  const int tiles = tiles_x * tiles_y * (combine ? 1 : split);
  const int my_tiles = int(blockIdx.x) < tiles ? (tiles - 1 - int(blockIdx.x)) / int(gridDim.x) + 1 : 0;
  struct Tile {
    int m0, n0, by, s_first;
  };
  auto tile_at = [&](int i) {  // this CTA's i-th tile
    const int t = int(blockIdx.x) + i * int(gridDim.x), rest = t / tiles_x;
    Tile r;
    r.by = rest % tiles_y;
    r.m0 = (t % tiles_x) * BM;
    r.n0 = r.by * kBN;
    r.s_first = combine ? 0 : rest / tiles_y;
    return r;
  };
  const Tile first = tile_at(0);
  const int m0 = first.m0, n0 = first.n0, s_first = first.s_first;  // (the cp.async path: one tile)
  const int s_count = combine ? split : 1;
  const int cps = (a.kseg + 31) >> 5;  // chunks per segment (the last one zero-filled past its end)
  const int chunks = s_count * cps;
  const int stages = (chunks + KC - 1) / KC;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const uint32_t base = smem_u32(wg_smem);
  // TMA: stage st's barrier; its use n (stage p = n S + st) completes phase n, parity n & 1.
  const uint32_t full_base = base + uint32_t(wgmma_smem_bytes<BM, KC, S, combine>());
  auto full = [&](int st) { return full_base + uint32_t(st) * 8u; };
  auto chunk_a = [&](int st, int j) { return base + uint32_t(st * kStageBytes + j * kChunkBytesA); };
  auto chunk_b = [&](int st, int j) {
    return base + uint32_t(st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
  };

  // cp.async path: this thread's units of each chunk (unit_offset), fixed for the whole K loop:
  // unit u = h * kThreads + tid is row u / 4, 8-k group u % 4. Row pointers and bounds once, here.
  const int cr = tid >> 2, ct = tid & 3;
  const T* xrow[kXUnits];
  const T* wrow[kWUnits];
  bool xin[kXUnits], win[kWUnits];
#pragma unroll
  for (int h = 0; h < kXUnits; ++h) {
    const int m = m0 + cr + (kThreads / 4) * h;
    xin[h] = m < a.M;
    xrow[h] = x + int64_t(xin[h] ? m : 0) * a.ldx + ct * 8;
  }
#pragma unroll
  for (int h = 0; h < kWUnits; ++h) {
    const int r = cr + (kThreads / 4) * h;
    const int n = a.silu_cols == 0 ? n0 + r : (r < 64 ? 0 : a.silu_cols - 64) + first.by * 64 + r;
    win[h] = n < a.N;
    wrow[h] = w + int64_t(win[h] ? n : 0) * a.K + ct * 8;
  }
  // The next chunk to load: its segment and offset in it (chunks are loaded in ascending order).
  int ld_seg = s_first, ld_kin = 0;
  auto load_chunk = [&](int st, int j) {
    const int kbase = ld_seg * a.kseg + ld_kin;
    const bool kin = ld_kin + ct * 8 < a.kseg;  // zero-fill past the segment's end, as v1
#pragma unroll
    for (int h = 0; h < kXUnits; ++h) {
      const bool in = kin && xin[h];
      cp_async_ca(chunk_a(st, j) + uint32_t(unit_offset(h * kThreads + tid)), in ? xrow[h] + kbase : x, in ? 16 : 0);
    }
#pragma unroll
    for (int h = 0; h < kWUnits; ++h) {
      const bool in = kin && win[h];
      cp_async_cg(chunk_b(st, j) + uint32_t(unit_offset(h * kThreads + tid)), in ? wrow[h] + kbase : w, in ? 16 : 0);
    }
    ld_kin += 32;
    if (ld_kin >= a.kseg) ld_kin = 0, ++ld_seg;
  };
  // TMA (thread 0): stage p's chunks, one box of x and one of W per chunk (or pair), the barrier
  // armed with their bytes (whole boxes: rows past M or N count, zero-filled). Segments are whole
  // chunks here (the host checks kseg % 32 == 0).
  // g: this CTA's stage count over all its tiles; called for g = 0, 1, 2, ... in order, so the
  // loader's place (its tile, the stage in it, the next chunk's segment and offset) moves by
  // additions (session 15: divisions here, on thread 0's path to its MMAs, cost the kernel ~20%).
  int ld_p = 0, ld_i = 0;
  Tile ld_tile = first;
  auto load_stage_tma = [&](int g) {
    const Tile& tl = ld_tile;
    const int st = g % S, n = min(KC, chunks - ld_p * KC);
    mbar_arrive_expect_tx_at(full(st), uint32_t(n * (kChunkBytesA + kChunkBytesB)));
    // Boxes of one chunk, or of two (PAIR: the host runs pairs only where every stage is two
    // chunks of one segment, so n == 2).
    constexpr int kBoxK = PAIR ? 64 : 32, kBoxRowBytes = PAIR ? kPairRowBytes : kRowBytes;
#pragma unroll
    for (int j = 0; j < KC; j += kBoxK / 32) {
      if (j >= n) break;
      const int kbase = ld_seg * a.kseg + ld_kin;
      tma_load_2d(chunk_a(st, j), &tmx, kbase, tl.m0, full(st));
      if (a.silu_cols == 0) {
        tma_load_2d(chunk_b(st, j), &tmw, kbase, tl.n0, full(st));
      } else {  // 64-row boxes: the gate rows, then the up rows (rows 0..63, 64..127 of the box)
        tma_load_2d(chunk_b(st, j), &tmw, kbase, tl.by * 64, full(st));
        tma_load_2d(chunk_b(st, j) + uint32_t(64 * kBoxRowBytes), &tmw, kbase, a.silu_cols + tl.by * 64, full(st));
      }
      ld_kin += kBoxK;
      if (ld_kin >= a.kseg) ld_kin = 0, ++ld_seg;
    }
    if (++ld_p == stages) {  // the next tile's first stage
      ld_p = 0;
      ld_tile = tile_at(++ld_i);
      ld_seg = ld_tile.s_first, ld_kin = 0;
    }
  };

  // combine: the running sum of whole segments, one column of 64 floats per thread ([e][tid]:
  // conflict-free, coalesced), so acc alone holds registers. 128 rows: in shared memory past the
  // stages. 256 rows: that would take 128 KB, so in the workspace (a.tot), one slice per CTA; a
  // CTA's 128 KB is rewritten every segment and stays in L2. Either way each thread reads back
  // only its own earlier writes (program order, no fence).
  float acc[64];
  float* tot = BM == 128    ? reinterpret_cast<float*>(wg_smem + S * kStageBytes)
                : combine ? a.tot + int64_t(blockIdx.x) * (64 * kThreads)
                          : nullptr;

  // Prologue: stages 0 .. kAhead - 1 requested (cp.async group g = stage g).
  const int total = my_tiles * stages;
  if constexpr (TMA) {
    if (tid == 0) {
      for (int st = 0; st < S; ++st) mbar_init_at(full(st), 1);
    }
    __syncthreads();  // initialized before any copy completes on them
    if (tid == 0)
      for (int g = 0; g < kAhead && g < total; ++g) load_stage_tma(g);
  } else {
#pragma unroll
    for (int st = 0; st < kAhead; ++st) {
#pragma unroll
      for (int j = 0; j < KC; ++j)
        if (st * KC + j < chunks) load_chunk(st, j);
      cp_async_commit();
    }
  }
  const int wg_row = (warp >> 2) * 64;  // this warpgroup's first row in the CTA tile
  int mm_kin = 0;  // chunks of the current segment multiplied so far (combine)
  // A segment ended before chunk c: add its sum in segment order (from segment 0), start the next
  // at 0. Every MMA issued so far must be done (each chunk's are committed as a group).
  auto end_segment = [&](int c) {
    wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < 64; ++e) {
      float& t = tot[e * kThreads + tid];
      t = c == cps ? acc[e] : fadd(t, acc[e]);
      acc[e] = 0.0f;
    }
    mm_kin = 0;
  };
  for (int i = 0; i < my_tiles; ++i) {
    const Tile tl = tile_at(i);
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[e] = 0.0f;
    mm_kin = 0;
    for (int p = 0; p < stages; ++p) {
      const int g = i * stages + p;  // the stage's place in the ring: buffer g % S, use g / S
      // This warpgroup's MMAs of stage p - 1 - LAG (the last to read the buffers that stage
      // p + kAhead is loaded into, below) are done. LAG 1: stage p - 1's may still run while this
      // stage's are issued; a segment's end is then handled here, at a stage's start (one chunk per
      // stage), where all must be done (ptxas serializes the MMAs if the sums are reset on a path
      // where some may still run).
      // (Each chunk's MMAs are one commit group, so a stage is KC groups.)
      if (LAG == 1 && combine && p > 0 && mm_kin == cps) end_segment(p * KC);
      else wgmma_wait<LAG * KC>();
      const int st = g % S;
      if constexpr (TMA) {
        mbar_wait_at(full(st), uint32_t(g / S) & 1u);  // stage p's x and W have landed
      } else {
        cp_async_wait<kAhead - 1>();  // this thread's copies of stage p have landed
        fence_proxy_async();          // ... and are visible to wgmma (the async proxy)
      }
      // Every thread's copies of stage p are in place (cp.async); every warpgroup is done with stage
      // p - 1 - LAG's buffers.
      __syncthreads();
#pragma unroll
      for (int j = 0; j < KC; ++j) {
        const int c = p * KC + j;
        if (c >= chunks) break;
        if constexpr (combine) {
          if (LAG == 0 && c > 0 && mm_kin == cps) end_segment(c);
          ++mm_kin;
        }
        wgmma_fence();
        if constexpr (PAIR) {  // the stage's x and W regions hold both chunks: steps 2j, 2j + 1
          const uint32_t sa = chunk_a(st, 0) + uint32_t(wg_row * kPairRowBytes), sb = chunk_b(st, 0);
          wgmma_step<T>(acc, sw128_desc(sa + step_start(2 * j)), sw128_desc(sb + step_start(2 * j)));
          wgmma_step<T>(acc, sw128_desc(sa + step_start(2 * j + 1)), sw128_desc(sb + step_start(2 * j + 1)));
        } else {
          const uint32_t sa = chunk_a(st, j) + uint32_t(wg_row * kRowBytes), sb = chunk_b(st, j);
          wgmma_step<T>(acc, sw64_desc(sa + step_start(0)), sw64_desc(sb + step_start(0)));
          wgmma_step<T>(acc, sw64_desc(sa + step_start(1)), sw64_desc(sb + step_start(1)));
        }
        wgmma_commit();
      }
      // Stage p + kAhead into the buffers of stage p - 1 - LAG, which every warpgroup finished with
      // before the barrier above (TMA: and every thread waited for that buffer's previous phase).
      if constexpr (TMA) {
        if (tid == 0 && g + kAhead < total) load_stage_tma(g + kAhead);  // (maybe the next tile's)
      } else {
        if (p + kAhead < stages) {
#pragma unroll
          for (int j = 0; j < KC; ++j)
            if ((p + kAhead) * KC + j < chunks) load_chunk((p + kAhead) % S, j);
        }
        cp_async_commit();  // every iteration, empty or not: group g stays stage g
      }
    }
    wgmma_wait<0>();
    if constexpr (!TMA) cp_async_wait<0>();  // (TMA: every stage's barrier was waited for)

    // acc[4j + e] is mma.sync's fragment of columns 8j .. 8j + 7 of this warp's 16 rows.
    float out[1][16][4];
    // Always true when combine runs (split > 1), but spelled out: the unconditional form makes
    // ptxas serialize the wgmmas (C7515, "non wgmma instructions defining accumulator registers").
    const bool whole = combine && chunks > cps;
#pragma unroll
    for (int jn = 0; jn < 16; ++jn)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if constexpr (combine)
          out[0][jn][e] = whole ? fadd(tot[(4 * jn + e) * kThreads + tid], acc[4 * jn + e]) : acc[4 * jn + e];
        else out[0][jn][e] = acc[4 * jn + e];
      }
    const int m_base = tl.m0 + (warp >> 2) * 64 + (warp & 3) * 16;
    if (!combine && a.silu_cols > 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m_base + h * 8 + gid;
        if (m >= a.M) continue;
#pragma unroll
        for (int jn = 0; jn < 8; ++jn) {
          const float* g = out[0][jn] + 2 * h;
          const float* u = out[0][jn + 8] + 2 * h;
          const float o0 = fmul(round_as<T>(silu_f32(round_as<T>(g[0]))), round_as<T>(u[0]));
          const float o1 = fmul(round_as<T>(silu_f32(round_as<T>(g[1]))), round_as<T>(u[1]));
          *reinterpret_cast<uint32_t*>(static_cast<T*>(a.y) + int64_t(m) * a.ldy + tl.by * 64 + jn * 8 + tig * 2) =
              pack2<T>(o0, o1);
        }
      }
    } else if constexpr (combine) {
      GemmArgs o = a;
      o.partial = nullptr;  // the sum is whole: store it as the unsplit kernel would
      store_tile<T, 1, 16>(o, out, m_base, tl.n0, 0, gid, tig);
    } else {
      store_tile<T, 1, 16>(a, out, m_base, tl.n0, tl.s_first, gid, tig);
    }
  }  // tiles
}

// Shared memory of a configuration: the stages, combine's sums, then S barriers (TMA).
template <int BM, int KC, int S, bool combine>
constexpr size_t wgmma_launch_smem() {
  constexpr size_t smem = wgmma_smem_bytes<BM, KC, S, combine>() + S * sizeof(uint64_t);
  static_assert(smem <= 227 * 1024, "wgmma GEMM stages exceed shared memory");
  return smem;
}
template <typename T, int BM, int KC, int S, int LAG, bool combine, bool TMA, bool PAIR = false>
void launch_kernel(const GemmArgs& a, int split, dim3 grid, const CUtensorMap& mx, const CUtensorMap& mw,
                   cudaStream_t stream) {
  constexpr size_t smem = wgmma_launch_smem<BM, KC, S, combine>();
  auto* k = gemm_wgmma_kernel<T, BM, KC, S, LAG, combine, TMA, PAIR>;
  static std::atomic<uint64_t> done{0};  // one attribute per instantiation
  once_per_device(done, [&] { VB_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem))); });
  pdl_launch(k, grid, dim3(2 * BM), smem, stream, a, split, mx, mw);
}

// LAG 1 or 0, as the host chose.
template <typename T, int BM, int KC, int S, bool combine, bool TMA, bool PAIR = false>
void launch_lagged(bool lag1, const GemmArgs& a, int split, dim3 grid, const CUtensorMap& mx, const CUtensorMap& mw,
                   cudaStream_t stream) {
  if (lag1) launch_kernel<T, BM, KC, S, 1, combine, TMA, PAIR>(a, split, grid, mx, mw, stream);
  else launch_kernel<T, BM, KC, S, 0, combine, TMA, PAIR>(a, split, grid, mx, mw, stream);
}

template <typename T, int BM, bool combine>
void launch_cfg(const GemmArgs& a, int split, const GemmTuning& t, cudaStream_t stream) {
  // H200, session 10 (gemm-bench, 2,048 rows, cp.async copies): 256 rows wait for each stage's MMAs
  // (LAG 0) with two chunks a stage, 4 stages (8B qkv 269 TFLOP/s, gate_up 339); at one chunk a
  // stage with one stage left running, slower (261, 280). 128 rows: one chunk a stage, 8 stages,
  // one stage of MMAs left running (0.6B o 214 against 195, down 237 against 215). Session 11,
  // with TMA copies: 256 rows at one chunk a stage, LAG 1, 8 stages still lost (8B gate_up 463
  // against 507 TFLOP/s, qkv 386 against 411; 8B prefill 93.3 against 89.2 ms). Session 14 (x and
  // W read by wgmma straight from the copies): a K loop with no CTA barrier, per-stage full and
  // empty mbarriers, every warp releasing a stage after wgmma_wait<1>, lost too (8B prefill 80.1
  // ms with these stages, 84.0 at 8 one-chunk stages, against 77.6; gate_up 534 / 457 against 584
  // TFLOP/s; bench/results/h200_s14_loads.log).
  // Session 15: 256 rows with one stage of MMAs left running (LAG 1, GemmTuning::wgmma_lag) where
  // the segments are whole stages; otherwise LAG 0.
  constexpr int KC = BM == 256 ? 2 : 1, S = BM == 256 ? 4 : 8;
  const bool lag1 = t.wgmma_lag == 1 && (!combine || ((a.kseg + 31) / 32) % KC == 0);  // (256 rows)
  const bool tma = t.wgmma_tma && tma_fits(a, sizeof(T));
  // One CTA per tile (the kernel's order: row tiles fastest), or (TMA, GemmTuning::wgmma_persist)
  // one per SM, each taking every SM-count-th tile.
  const int tiles = ceil_div(a.M, BM) * (a.silu_cols > 0 ? a.silu_cols / 64 : ceil_div(a.N, kBN)) * (combine ? 1 : split);
  const dim3 grid(tma && t.wgmma_persist ? std::min(tiles, sm_count()) : tiles);
  // Pairs: every stage two chunks of one segment (segments of whole 64 k).
  const bool pair = BM == 256 && tma && t.wgmma_pairs && a.kseg % 64 == 0;
  CUtensorMap mx{}, mw{};
  if (tma) {
    mx = tensor_map<T>(a.x, a.K, a.M, a.ldx, BM, pair);
    mw = tensor_map<T>(a.w, a.K, a.N, a.K, a.silu_cols > 0 ? 64 : kBN, pair);
  }
  if constexpr (BM == 256) {
    if (pair) launch_lagged<T, BM, KC, S, combine, true, true>(lag1, a, split, grid, mx, mw, stream);
    else if (tma) launch_lagged<T, BM, KC, S, combine, true>(lag1, a, split, grid, mx, mw, stream);
    else launch_lagged<T, BM, KC, S, combine, false>(lag1, a, split, grid, mx, mw, stream);
  } else {  // 128 rows: LAG 1 only
    if (tma) launch_kernel<T, BM, KC, S, 1, combine, true>(a, split, grid, mx, mw, stream);
    else launch_kernel<T, BM, KC, S, 1, combine, false>(a, split, grid, mx, mw, stream);
  }
  VB_CUDA_LAUNCHED();
}

}  // namespace

size_t wgmma_tot_bytes(int M, int N) {
  return size_t(ceil_div(M, 256)) * size_t(ceil_div(N, kBN)) * 64 * 512 * sizeof(float);
}

template <typename T>
void launch_wgmma(const GemmArgs& a, int split, bool combine, const GemmTuning& t, cudaStream_t stream) {
  if (combine && split > 1) {
    if (a.tot) return launch_cfg<T, 256, true>(a, split, t, stream);
    return launch_cfg<T, 128, true>(a, split, t, stream);  // the sums fill the rest of shared memory
  }
  if (t.wgmma_rows == 256) return launch_cfg<T, 256, false>(a, split, t, stream);
  launch_cfg<T, 128, false>(a, split, t, stream);
}
template void launch_wgmma<__nv_bfloat16>(const GemmArgs&, int, bool, const GemmTuning&, cudaStream_t);
template void launch_wgmma<__half>(const GemmArgs&, int, bool, const GemmTuning&, cudaStream_t);

}  // namespace verbatim::cuda::gemm_impl
