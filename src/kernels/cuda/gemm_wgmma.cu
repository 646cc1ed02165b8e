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
//   words per row and chunk, done by the stores: each thread loads 16 coalesced bytes of a row
//   into registers and stores its 4 words to their 4 core matrices D iterations later (so the
//   load's latency hides behind D stages of MMAs; GemmTuning::wgmma_depth, 2 by default). The
//   session-5 version copied 4-byte words with cp.async: ncu found 60% of its global sectors
//   excessive and most of its integer work in that copy (session 6).
// Segments (split-K) and zero-fill past a segment's end or past M / N are v1's: chunks of a
// segment ascend from its start, a segment sum starts at 0, the CTA either adds its segments in
// segment order (combine) or stores one segment's sum to the partials. tests/cuda_ops_test
// GemmKernelsAreV1BitForBit compares it with v1 byte for byte.
//
// Tile: 128 rows x 128 columns per CTA, two warpgroups of 64 rows (each warp of a warpgroup holds
// 16 rows, as mma.sync's A fragment); KC chunks of 32 k per pipeline stage, S stages (cp.async).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/gemm_common.cuh"
#include "kernels/cuda/gemm_wgmma.h"
#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda::gemm_impl {
namespace {

constexpr int kBM = 128, kBN = 128, kThreads = 256;
constexpr int kChunkBytesA = kBM * 64, kChunkBytesB = wgmma_layout::kChunkBytes;  // one 32-k chunk of x / of W
static_assert(kBN == wgmma_layout::kRows, "the W staging map is made for the CTA's columns");

// 16 bytes of W, streamed past L1 (each is read once per CTA). Not volatile: W never changes
// during the kernel, so the compiler may schedule the load early.
__device__ __forceinline__ uint4 ld_weights16(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ void st_shared32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// The cp.async writes (generic proxy) made visible to wgmma's operand reads (async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

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

// D: iterations between loading a stage's W into registers and storing it to shared memory (1 or
// 2 <= S - 2; each adds KC x 8 registers). The bits never depend on it.
template <typename T, int KC, int S, bool combine, int D>
__global__ void __launch_bounds__(kThreads, 1) gemm_wgmma_kernel(GemmArgs a, int split) {
  static_assert(D >= 1 && D <= S - 2, "W must be stored before the barrier of the iteration that reads it");
  pdl_begin();  // before any memory access or return (common.cuh)
  constexpr int kStageBytes = KC * (kChunkBytesA + kChunkBytesB);
  extern __shared__ __align__(128) uint8_t wg_smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const int s_first = combine ? 0 : int(blockIdx.z);
  const int s_count = combine ? split : 1;
  const int cps = (a.kseg + 31) >> 5;  // chunks per segment (the last one zero-filled past its end)
  const int chunks = s_count * cps;
  const int stages = (chunks + KC - 1) / KC;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const uint32_t base = smem_u32(wg_smem);

  // This thread's share of each chunk, fixed for the whole K loop: units h * 256 + tid (h = 0, 1),
  // row cr + 64 h, 16-byte group ct (wgmma_layout::copy_unit). Row pointers and bounds once, here.
  const int cr = tid >> 2, ct = tid & 3;
  const T* xrow[2];
  const T* wrow[2];
  bool xin[2], win[2];
  uint32_t wdst[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = m0 + cr + 64 * h, n = n0 + cr + 64 * h;
    xin[h] = m < a.M;
    win[h] = n < a.N;
    xrow[h] = x + int64_t(xin[h] ? m : 0) * a.ldx + ct * 8;
    wrow[h] = w + int64_t(win[h] ? n : 0) * a.K + ct * 8;
    const wgmma_layout::CopyUnit cu = wgmma_layout::copy_unit(h * kThreads + tid);
    wdst[h] = uint32_t(wgmma_layout::staged_word(cu.r, cu.t, 0));
  }
  // The next chunk to load: its segment and offset in it (chunks are loaded in ascending order).
  int ld_seg = s_first, ld_kin = 0;
  // Chunk into slot j of stage st: x by cp.async (packed rows of 64 bytes), W into registers `wr`
  // (coalesced 16-byte loads), stored by store_w D iterations later.
  auto load_chunk = [&](int st, int j, uint4 (&wr)[2]) {
    const int kbase = ld_seg * a.kseg + ld_kin;
    const bool kin = ld_kin + ct * 8 < a.kseg;  // zero-fill past the segment's end, as v1
    const uint32_t sa = base + uint32_t(st * kStageBytes + j * kChunkBytesA);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool in = kin && xin[h];
      cp_async_ca(sa + uint32_t(h * kThreads + tid) * 16u, in ? xrow[h] + kbase : x, in ? 16 : 0);
      wr[h] = (kin && win[h]) ? ld_weights16(wrow[h] + kbase) : make_uint4(0u, 0u, 0u, 0u);
    }
    ld_kin += 32;
    if (ld_kin >= a.kseg) ld_kin = 0, ++ld_seg;
  };
  // W's words to where wgmma's slots read v1's k set: word q of a unit to staged_word(r, t, q).
  auto store_w = [&](int st, int j, const uint4 (&wr)[2]) {
    const uint32_t sb = base + uint32_t(st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
    using wgmma_layout::kLbo;
    using wgmma_layout::kStepBytes;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t d = sb + wdst[h];
      st_shared32(d, wr[h].x);                      // q = 0: step 0, k group 0
      st_shared32(d + kLbo, wr[h].y);               // q = 1: step 0, k group 1
      st_shared32(d + kStepBytes, wr[h].z);         // q = 2: step 1, k group 0
      st_shared32(d + kStepBytes + kLbo, wr[h].w);  // q = 3: step 1, k group 1
    }
  };

  // combine: the running sum of whole segments lives in shared memory past the stages, one
  // column of 64 floats per thread ([e][tid]: conflict-free), so acc alone holds registers.
  float acc[64];
  float* tot = reinterpret_cast<float*>(wg_smem + S * kStageBytes);
#pragma unroll
  for (int e = 0; e < 64; ++e) acc[e] = 0.0f;

  // Prologue: stages 0 .. S - 2 loaded; W of stages 0 .. S - 2 - D stored now, the last D stages'
  // held in registers. In the loop, stage g's W is loaded at iteration g - (S - 1) and stored at
  // g - (S - 1) + D, so the load's latency hides behind D stages of MMAs; its registers are
  // wreg[g % D].
  uint4 wreg[D][KC][2];
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
#pragma unroll
    for (int j = 0; j < KC; ++j)
      if (st * KC + j < chunks) {
        load_chunk(st, j, wreg[st % D][j]);
        if (st < S - 1 - D) store_w(st, j, wreg[st % D][j]);
      }
    cp_async_commit();
  }
  const int row_a = (warp >> 2) * 64 + (warp & 3) * 16 + gid;  // this thread's A rows: row_a, row_a + 8
  // A fragments of one stage, each chunk in its own registers: wgmma reads its A registers
  // asynchronously, so none may be rewritten before the wait that covers it (PTX: undefined
  // otherwise; reusing one set per chunk gave wrong sums on the H200 in session 6).
  uint32_t af[KC][2][4] = {};
  // p0 steps by D and dp is a constant once unrolled, so wreg's index (p + const) % D is static.
  for (int p0 = 0; p0 < stages; p0 += D) {
#pragma unroll
    for (int dp = 0; dp < D; ++dp) {
      const int p = p0 + dp;
      if (p >= stages) break;
      cp_async_wait<S - 2>();
      wgmma_wait_all();      // this warpgroup's MMAs of stage p - 1 are done: its stage may be refilled
      // ... and only now may af, which they read, be rewritten: keep af live (unmoved) until here.
#pragma unroll
      for (int j = 0; j < KC; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          asm volatile("" : "+r"(af[j][h][0]), "+r"(af[j][h][1]), "+r"(af[j][h][2]), "+r"(af[j][h][3]));
      fence_proxy_async();   // this thread's copies of stage p visible to wgmma
      __syncthreads();       // every thread's copies of stage p landed; no one still reads stage p - 1
      const int st = p % S;
#pragma unroll
      for (int j = 0; j < KC; ++j) {
        const uint8_t* sa = wg_smem + st * kStageBytes + j * kChunkBytesA;
        const uint4 lo = reinterpret_cast<const uint4*>(sa)[row_a * 4 + tig];
        const uint4 hi = reinterpret_cast<const uint4*>(sa)[(row_a + 8) * 4 + tig];
        af[j][0][0] = lo.x, af[j][0][1] = hi.x, af[j][0][2] = lo.y, af[j][0][3] = hi.y;  // step 1: words q = 0, 1
        af[j][1][0] = lo.z, af[j][1][1] = hi.z, af[j][1][2] = lo.w, af[j][1][3] = hi.w;  // step 2: words q = 2, 3
      }
#pragma unroll
      for (int j = 0; j < KC; ++j) {
        const int c = p * KC + j;
        if (c >= chunks) break;
        if constexpr (combine) {
          if (c > 0 && c % cps == 0) {
            // A segment ended: add its sum in segment order (from segment 0), start the next at 0.
            wgmma_wait_all();
#pragma unroll
            for (int e = 0; e < 64; ++e) {
              float& t = tot[e * kThreads + tid];
              t = c == cps ? acc[e] : fadd(t, acc[e]);
              acc[e] = 0.0f;
            }
          }
        }
        const uint32_t sb = base + uint32_t(st * kStageBytes + KC * kChunkBytesA + j * kChunkBytesB);
        wgmma_fence();
        wgmma_step<T>(acc, af[j][0], b_desc(sb));
        wgmma_step<T>(acc, af[j][1], b_desc(sb + wgmma_layout::kStepBytes));
        wgmma_commit();
      }
      // While the tensor cores run stage p's MMAs: W of stage p + S - 1 - D (loaded D iterations
      // ago) to its buffer, last read by stage p - 1 - D <= p - 2's MMAs (waited for by every thread
      // before the barrier above); then stage p + S - 1 (buffer of stage p - 1, likewise free): x
      // copies, W loads into the registers just stored (same index: the stages differ by D).
      const int kSet = (dp + S - 1) % D;  // a constant once dp's loop is unrolled
      if (p + S - 1 - D < stages) {
#pragma unroll
        for (int j = 0; j < KC; ++j)
          if ((p + S - 1 - D) * KC + j < chunks) store_w((p + S - 1 - D) % S, j, wreg[kSet][j]);
      }
      if (p + S - 1 < stages) {
#pragma unroll
        for (int j = 0; j < KC; ++j)
          if ((p + S - 1) * KC + j < chunks) load_chunk((p + S - 1) % S, j, wreg[kSet][j]);
      }
      cp_async_commit();
    }
  }
  wgmma_wait_all();
  cp_async_wait<0>();

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
  if constexpr (combine) {
    GemmArgs o = a;
    o.partial = nullptr;  // the sum is whole: store it as the unsplit kernel would
    store_tile<T, 1, 16>(o, out, m_base, n0, 0, gid, tig);
  } else {
    store_tile<T, 1, 16>(a, out, m_base, n0, s_first, gid, tig);
  }
}

template <typename T, int KC, int S, bool combine, int D>
void launch_cfg(const GemmArgs& a, int split, cudaStream_t stream) {
  constexpr size_t smem = size_t(S) * KC * (kChunkBytesA + kChunkBytesB) + (combine ? 64 * kThreads * 4 : 0);
  static_assert(smem <= 227 * 1024, "wgmma GEMM stages exceed shared memory");
  auto* k = gemm_wgmma_kernel<T, KC, S, combine, D>;
  static std::atomic<uint64_t> done{0};
  once_per_device(done, [&] { VB_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem))); });
  dim3 grid(ceil_div(a.M, kBM), ceil_div(a.N, kBN), combine ? 1 : split);
  pdl_launch(k, grid, dim3(kThreads), smem, stream, a, split);
  VB_CUDA_LAUNCHED();
}

template <typename T, int D>
void launch_depth(const GemmArgs& a, int split, bool combine, cudaStream_t stream) {
  if (combine && split > 1) return launch_cfg<T, 2, 4, true, D>(a, split, stream);
  launch_cfg<T, 2, 4, false, D>(a, split, stream);
}

}  // namespace

template <typename T>
void launch_wgmma(const GemmArgs& a, int split, bool combine, int depth, cudaStream_t stream) {
  if (depth == 2) return launch_depth<T, 2>(a, split, combine, stream);
  launch_depth<T, 1>(a, split, combine, stream);
}
template void launch_wgmma<__nv_bfloat16>(const GemmArgs&, int, bool, int, cudaStream_t);
template void launch_wgmma<__half>(const GemmArgs&, int, bool, int, cudaStream_t);

}  // namespace verbatim::cuda::gemm_impl
