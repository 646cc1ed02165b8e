// GEMM y = x · W^T for prefill on Hopper's warpgroup MMA (wgmma), with v1's bits.
//
// Why it can: wgmma m64nNk16 sums a k16 step exactly as mma.sync m16n8k16 does for the same
// operands in the same k slots (bench/mma_probe.cu, H200: 0 differing outputs in every case).
// v1 (gemm.cu) sums each 32-k chunk as two k16 steps whose slots take fixed chunk offsets: thread
// tig's 16-byte load (offsets 8·tig .. +7) gives word q (offsets 8·tig + 2q, +1) to step q >> 1,
// slots 8·(q & 1) + 2·tig, +1. So this kernel issues, per chunk, the same two steps in the same
// order (docs/numerics.md, "CUDA: one order, several kernels"):
// - x (operand A) comes from registers, loaded from shared memory exactly as the tiled kernel
//   loads v1's A words (rows of 64 bytes packed, one 16-byte read per row and quad lane);
// - W (operand B) is read by wgmma from shared memory in the no-swizzle K-major layout: 8-row x
//   16-byte core matrices, one per (8-row group, step s, k group g); row r's core-matrix row holds
//   words (t = 0..3, q = 2s + g) of its chunk. Staging is therefore a 4 x 4 transpose of 4-byte
//   words per row and chunk. x and W come into a raw ring of S stages (rows of 64 bytes packed) by
//   one tensor copy each per chunk (TMA, completing on the stage's mbarrier; session 11: 8B prefill
//   111 -> 89 ms) or, where tensor maps do not fit, by every thread's 16-byte cp.async; one
//   iteration before the chunk is read each thread moves its own units' words to the staged layout
//   (a second ring of 2 + LAG buffers). Each thread waits for the stage itself (its own cp.async
//   writes, or the barrier's phase), so the move needs no CTA barrier of its own, no register holds
//   W across iterations, and the copy's latency hides behind S - 2 stages of MMAs. (Sessions 6-8 held W in
//   registers between its load and its store: ncu found the kernel waiting on those loads, and
//   through shared memory it is 1.16-1.35x faster on the 8B shapes, H200 session 9.)
// Segments (split-K) and zero-fill past a segment's end or past M / N are v1's: chunks of a
// segment ascend from its start, a segment sum starts at 0, the CTA either adds its segments in
// segment order (combine) or stores one segment's sum to the partials. tests/cuda_ops_test
// GemmKernelsAreV1BitForBit compares it with v1 byte for byte.
//
// Tile: BM rows (BM / 64 warpgroups of 64 rows; each warp of a warpgroup holds 16 rows, as
// mma.sync's A fragment) x 128 columns per CTA; KC chunks of 32 k per pipeline stage, S stages;
// LAG stages of MMAs (0 or 1) still running while the next stage's fragments are loaded.
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
#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda::gemm_impl {
namespace {

constexpr int kBN = 128;
constexpr int kChunkBytesB = wgmma_layout::kChunkBytes;  // one 32-k chunk of the CTA's W rows
static_assert(kBN == wgmma_layout::kRows, "the W staging map is made for the CTA's columns");
__device__ __forceinline__ void st_shared32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most N of this warpgroup's committed MMA groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// TMA (TMA = true): x's and W's raw chunks by one tensor copy each per chunk, issued by thread 0 and
// completing on the stage's mbarrier, instead of 16-byte cp.async by every thread (ncu session 10:
// the copies' address and predicate work and their issue were the 256-row kernel's top stalls).
// The same bytes land in the same places (a box of 32 k x rows is x's and W's raw chunk layout,
// rows of 64 bytes packed); rows past M or N come back as zeros, as cp.async's zero-fill.
// Box (k0 .. k0 + 31, rows row0 ..) of the tensor map to shared memory at dst, completing on bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int k0, int row0, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k0), "r"(row0), "r"(bar)
      : "memory");
}

// Shared-memory matrix descriptor, no swizzle (gemm_wgmma_layout.h): start address, LBO = the
// k-group stride, SBO = the 8-row-group stride.
__device__ __forceinline__ uint64_t b_desc(uint32_t addr) {
  using namespace wgmma_layout;
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(kLbo >> 4) << 16) | (uint64_t(kSbo >> 4) << 32);
}

#define VB_WGMMA_M64N128K16_RS(TY) \
    asm volatile(                                                                                                  \
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                 \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                               \
        "{"                                                                                                        \
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                                   \
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                                         \
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                                         \
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"                                          \
        "}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"                                                              \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),          \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),    \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])   \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));

// d += a (64 x 16, registers) · B (16 x 128, shared memory), one k16 step for the warpgroup.
template <typename T>
__device__ __forceinline__ void wgmma_step(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    VB_WGMMA_M64N128K16_RS("bf16");
  } else {
    VB_WGMMA_M64N128K16_RS("f16");
  }
}

// Shared memory: S stages of x and raw W, 2 + LAG buffers of staged W, and combine's sums at 128 rows
// (then TMA's S stage barriers).
template <int BM, int KC, int S, int LAG, bool combine>
constexpr size_t wgmma_smem_bytes() {
  return size_t(S) * KC * (BM * 64 + kChunkBytesB) + size_t(2 + LAG) * KC * kChunkBytesB +
         (combine && BM == 128 ? 64 * 2 * BM * 4 : 0);
}

template <typename T, int BM, int KC, int S, int LAG, bool combine, bool TMA>
__global__ void __launch_bounds__(2 * BM, 1)
    gemm_wgmma_kernel(GemmArgs a, int split, const __grid_constant__ CUtensorMap tmx,
                      const __grid_constant__ CUtensorMap tmw) {
  static_assert(S >= 3, "stage p + 1 must be waited for while stage p is multiplied");
  static_assert(LAG == 0 || LAG == 1, "stages of MMAs left running when the next is prepared");
  static_assert(LAG == 0 || KC == 1, "with one stage running, a segment's end is found at a stage's start");
  constexpr int kSets = LAG + 1;                // sets of A fragments
  constexpr int kStagedBufs = 2 + LAG;          // staged W buffers
  static_assert(BM == 128 || BM == 256, "warpgroups of 64 rows, 2 or 4");
  constexpr int kThreads = 2 * BM;                     // 4 warps (128 threads) per 64 rows
  constexpr int kChunkBytesA = BM * 64;                // one 32-k chunk of the CTA's x rows
  constexpr int kXUnits = BM * 4 / kThreads;           // 16-byte units of x per thread and chunk: 2
  constexpr int kWUnits = wgmma_layout::kUnits / kThreads;  // of W: 2 (BM 128) or 1 (BM 256)
  constexpr int kStageBytes = KC * (kChunkBytesA + kChunkBytesB);  // x and raw W of a stage
  constexpr int kStagedBytes = KC * kChunkBytesB;                  // W in wgmma's layout, one buffer
  pdl_begin();  // before any memory access or return (common.cuh)
  extern __shared__ __align__(128) uint8_t wg_smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * kBN;
  const int s_first = combine ? 0 : int(blockIdx.z);
  const int s_count = combine ? split : 1;
  const int cps = (a.kseg + 31) >> 5;  // chunks per segment (the last one zero-filled past its end)
  const int chunks = s_count * cps;
  const int stages = (chunks + KC - 1) / KC;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const uint32_t base = smem_u32(wg_smem);
  const uint32_t staged_base = base + uint32_t(S * kStageBytes);
  // TMA: stage st's barrier; its use n (stage p = n S + st) completes phase n, parity n & 1.
  const uint32_t full_base = base + uint32_t(wgmma_smem_bytes<BM, KC, S, LAG, combine>());
  auto full = [&](int st) { return full_base + uint32_t(st) * 8u; };

  // This thread's units of each chunk, fixed for the whole K loop: unit u = h * kThreads + tid is
  // row u / 4, 16-byte group ct = u % 4 (a quad of lanes reads a row's 64 bytes), at u * 16 in the
  // chunk's x / raw W. Row pointers and bounds once, here.
  const int cr = tid >> 2, ct = tid & 3;
  const T* xrow[kXUnits];
  const T* wrow[kWUnits];
  bool xin[kXUnits], win[kWUnits];
  uint32_t wdst[kWUnits];
#pragma unroll
  for (int h = 0; h < kXUnits; ++h) {
    const int m = m0 + cr + (kThreads / 4) * h;
    xin[h] = m < a.M;
    xrow[h] = x + int64_t(xin[h] ? m : 0) * a.ldx + ct * 8;
  }
#pragma unroll
  for (int h = 0; h < kWUnits; ++h) {
    const wgmma_layout::CopyUnit cu = wgmma_layout::copy_unit(h * kThreads + tid);
    const int n = a.silu_cols == 0 ? n0 + cu.r : (cu.r < 64 ? 0 : a.silu_cols - 64) + blockIdx.y * 64 + cu.r;
    win[h] = n < a.N;
    wrow[h] = w + int64_t(win[h] ? n : 0) * a.K + ct * 8;
    wdst[h] = uint32_t(wgmma_layout::staged_word(cu.r, cu.t, 0));
  }
  // The next chunk to load: its segment and offset in it (chunks are loaded in ascending order).
  int ld_seg = s_first, ld_kin = 0;
  auto load_chunk = [&](int st, int j) {
    const int kbase = ld_seg * a.kseg + ld_kin;
    const bool kin = ld_kin + ct * 8 < a.kseg;  // zero-fill past the segment's end, as v1
    const uint32_t sa = base + uint32_t(st * kStageBytes + j * kChunkBytesA);
    const uint32_t sw = base + uint32_t(st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
#pragma unroll
    for (int h = 0; h < kXUnits; ++h) {
      const bool in = kin && xin[h];
      cp_async_ca(sa + uint32_t(h * kThreads + tid) * 16u, in ? xrow[h] + kbase : x, in ? 16 : 0);
    }
#pragma unroll
    for (int h = 0; h < kWUnits; ++h) {
      const bool in = kin && win[h];
      cp_async_cg(sw + uint32_t(h * kThreads + tid) * 16u, in ? wrow[h] + kbase : w, in ? 16 : 0);
    }
    ld_kin += 32;
    if (ld_kin >= a.kseg) ld_kin = 0, ++ld_seg;
  };
  // TMA (thread 0): stage p's chunks, the barrier armed with their bytes (whole boxes: rows past
  // M or N count, zero-filled). Segments are whole chunks here (the host checks kseg % 32 == 0).
  auto load_stage_tma = [&](int p) {
    const int st = p % S, n = min(KC, chunks - p * KC);
    mbar_arrive_expect_tx_at(full(st), uint32_t(n * (kChunkBytesA + kChunkBytesB)));
#pragma unroll
    for (int j = 0; j < KC; ++j) {
      if (j >= n) break;
      const int kbase = ld_seg * a.kseg + ld_kin;
      const uint32_t sa = base + uint32_t(st * kStageBytes + j * kChunkBytesA);
      const uint32_t sw = base + uint32_t(st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
      tma_load_2d(sa, &tmx, kbase, m0, full(st));
      if (a.silu_cols == 0) {
        tma_load_2d(sw, &tmw, kbase, n0, full(st));
      } else {  // 64-row boxes: the gate rows, then the up rows (as copy_unit's rows 0..63, 64..127)
        tma_load_2d(sw, &tmw, kbase, blockIdx.y * 64, full(st));
        tma_load_2d(sw + 64 * 64, &tmw, kbase, a.silu_cols + blockIdx.y * 64, full(st));
      }
      ld_kin += 32;
      if (ld_kin >= a.kseg) ld_kin = 0, ++ld_seg;
    }
  };
  // This thread's raw units of chunk j of stage st to staged buffer b: word q of a unit to
  // staged_word(r, t, q), where wgmma's slots read v1's k set.
  auto stage_w = [&](int st, int b, int j) {
    const uint4* raw = reinterpret_cast<const uint4*>(wg_smem + st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
    const uint32_t sb = staged_base + uint32_t(b * kStagedBytes + j * kChunkBytesB);
    using wgmma_layout::kLbo;
    using wgmma_layout::kStepBytes;
#pragma unroll
    for (int h = 0; h < kWUnits; ++h) {
      const uint4 v = raw[h * kThreads + tid];
      const uint32_t d = sb + wdst[h];
      st_shared32(d, v.x);                      // q = 0: step 0, k group 0
      st_shared32(d + kLbo, v.y);               // q = 1: step 0, k group 1
      st_shared32(d + kStepBytes, v.z);         // q = 2: step 1, k group 0
      st_shared32(d + kStepBytes + kLbo, v.w);  // q = 3: step 1, k group 1
    }
  };

  // combine: the running sum of whole segments, one column of 64 floats per thread ([e][tid]:
  // conflict-free, coalesced), so acc alone holds registers. 128 rows: in shared memory past the
  // stages. 256 rows: that would take 128 KB, so in the workspace (a.tot), one slice per CTA; a
  // CTA's 128 KB is rewritten every segment and stays in L2. Either way each thread reads back
  // only its own earlier writes (program order, no fence).
  float acc[64];
  float* tot = BM == 128    ? reinterpret_cast<float*>(wg_smem + S * kStageBytes + kStagedBufs * kStagedBytes)
                : combine ? a.tot + (int64_t(blockIdx.y) * gridDim.x + blockIdx.x) * (64 * kThreads)
                          : nullptr;
#pragma unroll
  for (int e = 0; e < 64; ++e) acc[e] = 0.0f;

  // Prologue: stages 0 .. S - 2 requested (cp.async group g = stage g); stage 0's W staged.
  if constexpr (TMA) {
    if (tid == 0) {
      for (int st = 0; st < S; ++st) mbar_init_at(full(st), 1);
    }
    __syncthreads();  // initialized before any copy completes on them
    if (tid == 0)
      for (int st = 0; st < S - 1 && st < stages; ++st) load_stage_tma(st);
    mbar_wait_at(full(0), 0);
  } else {
#pragma unroll
    for (int st = 0; st < S - 1; ++st) {
#pragma unroll
      for (int j = 0; j < KC; ++j)
        if (st * KC + j < chunks) load_chunk(st, j);
      cp_async_commit();
    }
    cp_async_wait<S - 2>();
  }
#pragma unroll
  for (int j = 0; j < KC; ++j)
    if (j < chunks) stage_w(0, 0, j);
  const int row_a = (warp >> 2) * 64 + (warp & 3) * 16 + gid;  // this thread's A rows: row_a, row_a + 8
  // A fragments, LAG + 1 sets: with LAG 1, stage p's MMAs read set p & 1 while stage p + 1's are
  // loaded into the other. wgmma reads its A registers asynchronously, so a set may be rewritten
  // only after the wait that covers the MMAs reading it (PTX: undefined otherwise; reusing one set
  // per chunk gave wrong sums on the H200 in session 6). The loop below runs two stages per pass so
  // that each set is named at compile time (a runtime index would put af in local memory).
  uint32_t af[kSets][KC][2][4] = {};
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
  auto stage = [&](int p, auto set_tag) {
    constexpr int A = decltype(set_tag)::value % kSets;
    // This warpgroup's MMAs of stage p - 1 - LAG (the last to read set A and staged buffer
    // p % kStagedBufs) are done. LAG 1: stage p - 1's may still run while this stage is prepared, so
    // the tensor cores need not wait for the barrier and the fragment loads below; a segment's end
    // is then handled here, at a stage's start (one chunk per stage), where all must be done
    // (ptxas serializes the MMAs if the sums are reset on a path where some may still run).
    if (LAG == 1 && combine && p > 0 && mm_kin == cps) end_segment(p);
    else wgmma_wait<LAG>();
    // ... and only now may af[A], which they read, be rewritten: keep it live (unmoved) until here.
#pragma unroll
    for (int j = 0; j < KC; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        asm volatile("" : "+r"(af[A][j][h][0]), "+r"(af[A][j][h][1]), "+r"(af[A][j][h][2]), "+r"(af[A][j][h][3]));
    fence_proxy_async();  // this thread's staged words of stage p visible to wgmma
    // Every thread's x copies and staged W of stage p are in place (each waited for its own copies
    // in the iteration before); every warpgroup is done with stage p - LAG - 1's staged buffer.
    __syncthreads();
    const int st = p % S, b = p % kStagedBufs;
#pragma unroll
    for (int j = 0; j < KC; ++j) {
      const uint8_t* sa = wg_smem + st * kStageBytes + j * kChunkBytesA;
      const uint4 lo = reinterpret_cast<const uint4*>(sa)[row_a * 4 + tig];
      const uint4 hi = reinterpret_cast<const uint4*>(sa)[(row_a + 8) * 4 + tig];
      af[A][j][0][0] = lo.x, af[A][j][0][1] = hi.x, af[A][j][0][2] = lo.y, af[A][j][0][3] = hi.y;  // step 1: q = 0, 1
      af[A][j][1][0] = lo.z, af[A][j][1][1] = hi.z, af[A][j][1][2] = lo.w, af[A][j][1][3] = hi.w;  // step 2: q = 2, 3
    }
#pragma unroll
    for (int j = 0; j < KC; ++j) {
      const int c = p * KC + j;
      if (c >= chunks) break;
      if constexpr (combine) {
        if (LAG == 0 && c > 0 && mm_kin == cps) end_segment(c);
        ++mm_kin;
      }
      const uint32_t sb = staged_base + uint32_t(b * kStagedBytes + j * kChunkBytesB);
      wgmma_fence();
      wgmma_step<T>(acc, af[A][j][0], b_desc(sb));
      wgmma_step<T>(acc, af[A][j][1], b_desc(sb + wgmma_layout::kStepBytes));
      wgmma_commit();
    }
    // While the tensor cores run stage p (and p - 1 with LAG 1): this thread's copies of stage
    // p + 1 (group p + 1 of the S - 1 + p committed) have landed; its W words go to buffer
    // (p + 1) % kStagedBufs, last read by stage p - LAG - 1's MMAs, which every warpgroup finished
    // before the barrier above.
    // (TMA: every thread waits for stage p + 1's barrier, so x is visible to its fragment loads too.)
    if constexpr (TMA) {
      if (p + 1 < stages) mbar_wait_at(full((p + 1) % S), uint32_t((p + 1) / S) & 1u);
    } else {
      cp_async_wait<S - 3>();
    }
    if (p + 1 < stages) {
#pragma unroll
      for (int j = 0; j < KC; ++j)
        if ((p + 1) * KC + j < chunks) stage_w((p + 1) % S, (p + 1) % kStagedBufs, j);
    }
    // Stage p + S - 1 into stage p - 1's buffers: its x was read into af (synchronous loads) and
    // its raw W staged before the barrier above (TMA: and every thread waited for that stage's
    // previous phase before it).
    if constexpr (TMA) {
      if (tid == 0 && p + S - 1 < stages) load_stage_tma(p + S - 1);
    } else {
      if (p + S - 1 < stages) {
#pragma unroll
        for (int j = 0; j < KC; ++j)
          if ((p + S - 1) * KC + j < chunks) load_chunk((p + S - 1) % S, j);
      }
      cp_async_commit();  // every iteration, empty or not: group g stays stage g
    }
  };
  if constexpr (kSets == 1) {
    // One set: one body (two copies of it were 5% slower on 8B gate_up, H200 session 10).
    for (int p = 0; p < stages; ++p) stage(p, std::integral_constant<int, 0>{});
  } else {
    for (int p = 0; p < stages; p += 2) {
      stage(p, std::integral_constant<int, 0>{});
      if (p + 1 < stages) stage(p + 1, std::integral_constant<int, 1>{});
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
  const int m_base = m0 + (warp >> 2) * 64 + (warp & 3) * 16;
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
        *reinterpret_cast<uint32_t*>(static_cast<T*>(a.y) + int64_t(m) * a.ldy + blockIdx.y * 64 + jn * 8 + tig * 2) =
            pack2<T>(o0, o1);
      }
    }
    return;
  }
  if constexpr (combine) {
    GemmArgs o = a;
    o.partial = nullptr;  // the sum is whole: store it as the unsplit kernel would
    store_tile<T, 1, 16>(o, out, m_base, n0, 0, gid, tig);
  } else {
    store_tile<T, 1, 16>(a, out, m_base, n0, s_first, gid, tig);
  }
}

// The driver's tensor-map encoder, through the runtime (no link to libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    VB_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || p == nullptr) throw Error("cuda gemm: no cuTensorMapEncodeTiled in the driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}
// A row-major [rows, cols] matrix of T (row stride ld elements) read in boxes of 32 x box_rows,
// no swizzle (rows of 64 bytes packed in shared memory), zeros outside it.
template <typename T>
CUtensorMap tensor_map(const void* base, int cols, int rows, int ld, int box_rows) {
  CUtensorMap m{};
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * sizeof(T)};
  const cuuint32_t box[2] = {32, cuuint32_t(box_rows)}, step[2] = {1, 1};
  const CUtensorMapDataType dt =
      std::is_same_v<T, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = tensor_map_encoder()(&m, dt, 2, const_cast<void*>(base), dims, strides, box, step,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw Error("cuda gemm: cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) + ")");
  return m;
}
// Where TMA can bring what cp.async would: segments of whole chunks (no zero-fill inside K), and
// the 16-byte alignment of addresses and row strides that tensor maps need.
bool tma_fits(const GemmArgs& a, size_t esize) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.kseg % 32 == 0 && aligned(a.x) && aligned(a.w) && (size_t(a.ldx) * esize) % 16 == 0 &&
         (size_t(a.K) * esize) % 16 == 0;
}

template <typename T, int BM, bool combine>
void launch_cfg(const GemmArgs& a, int split, bool tma, cudaStream_t stream) {
  // H200, session 10 (gemm-bench, 2,048 rows, cp.async copies): 256 rows wait for each stage's MMAs
  // (LAG 0) with two chunks a stage, 4 stages (8B qkv 269 TFLOP/s, gate_up 339); one stage left
  // running would need a second set of A fragments, which at two chunks passes a 512-thread CTA's
  // 128 registers, and at one chunk a stage was slower (261, 280). 128 rows: one chunk a stage, 8
  // stages, one stage of MMAs left running (0.6B o 214 against 195, down 237 against 215).
  // Session 11, with TMA copies: 256 rows at one chunk a stage, LAG 1, 8 stages still lost (8B
  // gate_up 463 against 507 TFLOP/s, qkv 386 against 411; 8B prefill 93.3 against 89.2 ms).
  constexpr int KC = BM == 256 ? 2 : 1, S = BM == 256 ? 4 : 8, LAG = BM == 256 ? 0 : 1;
  constexpr size_t smem = wgmma_smem_bytes<BM, KC, S, LAG, combine>() + S * sizeof(uint64_t);
  static_assert(smem <= 227 * 1024, "wgmma GEMM stages exceed shared memory");
  auto* k_tma = gemm_wgmma_kernel<T, BM, KC, S, LAG, combine, true>;
  auto* k_cp = gemm_wgmma_kernel<T, BM, KC, S, LAG, combine, false>;
  static std::atomic<uint64_t> done{0};
  once_per_device(done, [&] {
    VB_CUDA(cudaFuncSetAttribute(k_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    VB_CUDA(cudaFuncSetAttribute(k_cp, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  });
  dim3 grid(ceil_div(a.M, BM), a.silu_cols > 0 ? a.silu_cols / 64 : ceil_div(a.N, kBN), combine ? 1 : split);
  if (tma && tma_fits(a, sizeof(T))) {
    const CUtensorMap mx = tensor_map<T>(a.x, a.K, a.M, a.ldx, BM);
    const CUtensorMap mw = tensor_map<T>(a.w, a.K, a.N, a.K, a.silu_cols > 0 ? 64 : kBN);
    pdl_launch(k_tma, grid, dim3(2 * BM), smem, stream, a, split, mx, mw);
  } else {
    const CUtensorMap none{};
    pdl_launch(k_cp, grid, dim3(2 * BM), smem, stream, a, split, none, none);
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
    if (a.tot) return launch_cfg<T, 256, true>(a, split, t.wgmma_tma, stream);
    return launch_cfg<T, 128, true>(a, split, t.wgmma_tma, stream);  // the sums fill the rest of shared memory
  }
  if (t.wgmma_rows == 256) return launch_cfg<T, 256, false>(a, split, t.wgmma_tma, stream);
  launch_cfg<T, 128, false>(a, split, t.wgmma_tma, stream);
}
template void launch_wgmma<__nv_bfloat16>(const GemmArgs&, int, bool, const GemmTuning&, cudaStream_t);
template void launch_wgmma<__half>(const GemmArgs&, int, bool, const GemmTuning&, cudaStream_t);

}  // namespace verbatim::cuda::gemm_impl
