// The streaming decode GEMM (VERBATIM_GEMM=stream, up to 64 rows): y = x · W^T with v1's bits,
// W and x brought into shared memory by TMA instead of through registers.
//
// Why: at decode the GEMMs read W once and do little arithmetic, so their speed is how many bytes
// stay in flight. v1 keeps one load round per warp in registers (load, wait, MMAs, load again);
// here one producer warp keeps S stages of 256 k (W: 64 rows x 512 bytes, x: the row tile) in
// flight per SM while four consumer warps run the MMAs of the stage that has landed.
//
// Bits: each output element is the sum over its segment's 32-k chunks in ascending order, each
// chunk two k16 steps (chunk elements 0..15, then 16..31) into one fp32 accumulator that starts at
// 0, chunks wholly past the segment end skipped: v1's steps on v1's k sets in v1's order. The
// slots are the natural ones (ldmatrix from the 128-byte-swizzle layout TMA writes), and a step's
// sum depends only on its set of 16 k, not on which slot takes which (bench/mma_probe.cu, session
// 13), as gemm_wgmma.cu relies on. Segments (split-K) are v1's: each item stores its segment's sum
// to the partials (or the output when split == 1). tests/cuda_ops_test GemmKernelsAreV1BitForBit
// compares it with v1 byte for byte.
//
// Work: items are (64-column tile, segment) (with the SiLU epilogue: 32 gate + 32 up columns over
// every segment, added in the kernel), item i on CTA i % grid (one CTA per SM); the producer
// runs on into a CTA's next item while the consumers finish the last, so the ring never drains
// between items. Rows past M and columns past N come from TMA as zeros and are never stored.
#include "kernels/cuda/gemm_stream.h"

#include <algorithm>
#include <atomic>

#include "kernels/cuda/gemm_tma.cuh"
#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda::gemm_impl {
namespace {

constexpr int kCols = 64;         // W rows (output columns) per item: 4 consumer warps x 16
constexpr int kBoxK = 64;         // k per tensor copy: rows of 128 bytes, 128-byte swizzle
constexpr int kStageK = 256;      // k per stage: 4 boxes
constexpr int kBoxes = kStageK / kBoxK;
constexpr int kConsumers = 4;
constexpr int kThreads = (kConsumers + 1) * 32;  // + the producer warp

constexpr int kWBoxBytes = kCols * 128;
template <int MT>
constexpr int x_box_bytes() {
  return MT * 16 * 128;
}
template <int MT>
constexpr int stage_bytes() {
  return kBoxes * (kWBoxBytes + x_box_bytes<MT>());
}
// The stages (1,024-byte aligned, as the 128-byte swizzle needs), then 2 S mbarriers.
template <int MT, int S>
constexpr size_t smem_bytes() {
  return 1024 + size_t(S) * stage_bytes<MT>() + 2 * S * sizeof(uint64_t);
}

// Byte offset of 16-byte group g (k 8g .. 8g + 7) of row r in a box of 64 k x rows, as TMA's
// 128-byte swizzle lays it (checked on the CPU against the pair layout: tests/wgmma_layout_test.cpp).
__device__ __forceinline__ uint32_t swizzled(int r, int g) { return uint32_t(wgmma_layout::pair_group_offset(r, g)); }
// Item i: columns n0 .. (a tile of 64, or 32 gate + 32 up columns with SILU) of K segments
// s0 .. s1 - 1 (one segment; with SILU all of them, added in the kernel).
struct Item {
  int n0, s0, s1;
};
__device__ __forceinline__ Item item_at(const GemmArgs& a, int item, int tiles, int cols, int split, bool silu) {
  const int s = silu ? 0 : item / tiles;
  return {(item % tiles) * cols, s, silu ? split : s + 1};
}
__device__ __forceinline__ int seg_begin(const GemmArgs& a, int s) { return s * a.kseg; }
__device__ __forceinline__ int seg_end(const GemmArgs& a, int s) { return min(a.K, s * a.kseg + a.kseg); }

// SILU (gemm_silu_mul): an item is gate columns 32 y .. 32 y + 31 (W rows 0-31 of the
// stage) and the same up columns (W rows silu_cols + 32 y ..: stage rows 32-63). Warp w takes gate
// columns 8 w .. 8 w + 7 as its first group of 8 and the same up columns as its second, so each
// lane holds both sums of its outputs and writes round(round(silu(round(g))) * round(u)) (v1's
// SiLU epilogue arithmetic) with no exchange through shared memory and no barrier. Which warp and
// MMA column computes a sum does not change it: each column's k steps are the same. With split > 1
// the item runs its segments in order, each from 0, and adds them as the consumers of split-K
// partials do (gemm_partials: segment 0, + 1, + 2, ...) before the epilogue: silu_mul_from's bits
// after the split GEMM, in one launch.
template <typename T, int MT, int S, bool SILU>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_stream_kernel(GemmArgs a, int split, int preload, int l2_stages, const __grid_constant__ CUtensorMap tmx,
                       const __grid_constant__ CUtensorMap tmw) {
  extern __shared__ uint8_t stream_smem[];
  const uint32_t base = (smem_u32(stream_smem) + 1023u) & ~1023u;
  const uint32_t bars = base + uint32_t(S * stage_bytes<MT>());
  auto full = [&](int st) { return bars + uint32_t(8 * st); };
  auto empty = [&](int st) { return bars + uint32_t(8 * (S + st)); };
  auto w_box = [&](int st, int b) { return base + uint32_t(st * stage_bytes<MT>() + b * kWBoxBytes); };
  auto x_box = [&](int st, int b) {
    return base + uint32_t(st * stage_bytes<MT>() + kBoxes * kWBoxBytes + b * x_box_bytes<MT>());
  };
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {  // (shared memory only: before the PDL wait, overlapping the kernel before)
    for (int st = 0; st < S; ++st) {
      mbar_init_at(full(st), 1);
      mbar_init_at(empty(st), kConsumers);
    }
  }
  __syncthreads();  // the barriers exist before anyone waits on them
  constexpr int cols = SILU ? 32 : kCols;  // W rows of the tensor map's box an item starts at
  const int tiles = SILU ? a.silu_cols / 32 : (a.N + kCols - 1) / kCols, items = SILU ? tiles : tiles * split;
  const bool producer = warp == kConsumers && lane == 0;
  // The producer's copies of stage g (k from kb of an item's columns n0 to k_end): W's boxes
  // and / or x's. expect: the stage's arrival with the byte count of both (issued with W's).
  auto issue = [&](int g, int kb, int n0, int k_end, bool w, bool x) {
    const int st = g % S;
    const int boxes = min(kBoxes, (k_end - kb + kBoxK - 1) / kBoxK);  // none wholly past the segment
    if (w) mbar_arrive_expect_tx_at(full(st), uint32_t(boxes * (kWBoxBytes + x_box_bytes<MT>())));
    for (int b = 0; b < boxes; ++b) {
      if (w) {
        tma_load_2d(w_box(st, b), &tmw, kb + b * kBoxK, n0, full(st));
        if constexpr (SILU) tma_load_2d(w_box(st, b) + 32 * 128, &tmw, kb + b * kBoxK, a.silu_cols + n0, full(st));
      }
      if (x) tma_load_2d(x_box(st, b), &tmx, kb + b * kBoxK, 0, full(st));
    }
  };
  // GemmTuning::stream_preload: W's boxes of the ring's first stages before the PDL wait, so a CTA
  // resident while the kernel before runs starts with them in flight. W is written at load only
  // (read_step_inputs_before_pdl, common.cuh); x, written by the kernel before, comes after the
  // wait. Scheduling only: the same words land in the same slots for the same MMAs.
  // preload: that many of the ring's first stages (at most S); l2_stages: W's boxes of that many
  // stages past those into L2 as well.
  const int P = min(preload, S);
  int pre = 0;  // stages whose W was issued before the wait (the producer lane's count)
  if (producer && P > 0) {
    int g = 0;
    for (int item = blockIdx.x; item < items && g < P + l2_stages; item += gridDim.x) {
      const auto [n0, s0, s1] = item_at(a, item, tiles, cols, split, SILU);
      for (int s = s0; s < s1 && g < P + l2_stages; ++s) {
        const int k_end = seg_end(a, s);
        for (int kb = seg_begin(a, s); kb < k_end && g < P + l2_stages; kb += kStageK, ++g) {
          if (g < P) {
            issue(g, kb, n0, k_end, true, false);
            pre = g + 1;
            continue;
          }
          for (int b = 0; b < kBoxes && kb + b * kBoxK < k_end; ++b) {
            tma_prefetch_2d(&tmw, kb + b * kBoxK, n0);
            if constexpr (SILU) tma_prefetch_2d(&tmw, kb + b * kBoxK, a.silu_cols + n0);
          }
        }
      }
    }
  }
  pdl_begin();  // before any other global memory access or return (common.cuh); the setup above overlaps

  if (warp == kConsumers) {  // the producer: one lane issues every copy
    if (lane != 0) return;
    int g = 0;  // stages issued by this CTA so far (the ring position and its use count)
    for (int item = blockIdx.x; item < items; item += gridDim.x) {
      const auto [n0, s0, s1] = item_at(a, item, tiles, cols, split, SILU);
      for (int s = s0; s < s1; ++s) {
        const int k_end = seg_end(a, s);
        for (int kb = seg_begin(a, s); kb < k_end; kb += kStageK, ++g) {
          const int st = g % S, use = g / S;
          if (use > 0) mbar_wait_at(empty(st), uint32_t((use - 1) & 1));  // its last readers are done
          issue(g, kb, n0, k_end, g >= pre, true);
        }
      }
    }
    return;
  }

  // Consumers: warp w computes columns n0 + 16 w .. + 15 of every item (NT = 2 groups of 8).
  const int gid = lane >> 2, tig = lane & 3;
  // ldmatrix rows: W's matrices are (columns 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15)
  // of the warp's 16, i.e. b0 / b1 of column group 0 then of group 1; x's are (rows 0-7, k 0-7),
  // (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) of a 16-row tile: a0 .. a3 (PTX m16n8k16 fragments).
  // SILU: group 0 is the warp's 8 gate columns (W rows 8 w ..), group 1 the same 8 up columns
  // (W rows 32 + 8 w ..), so each lane holds g and u of the same outputs (silu_pairs_store).
  const int w_row = SILU ? (lane >> 4) * 32 + warp * 8 + (lane & 7) : warp * 16 + (lane >> 4) * 8 + (lane & 7);
  const int w_grp = (lane >> 3) & 1;
  const int x_row = lane & 15, x_grp = lane >> 4;
  int g = 0;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const auto [n0, s0, s1] = item_at(a, item, tiles, cols, split, SILU);
    float acc[MT][2][4], tot[MT][2][4];  // tot: SILU's sum of the segments so far
    for (int s = s0; s < s1; ++s) {
      const int k_end = seg_end(a, s);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;
      for (int kb = seg_begin(a, s); kb < k_end; kb += kStageK, ++g) {
        const int st = g % S;
        mbar_wait_at(full(st), uint32_t((g / S) & 1));
#pragma unroll
        for (int c = 0; c < kStageK / 32; ++c) {
          if (kb + c * 32 >= k_end) break;  // warp-uniform: v1 skips a chunk wholly past the segment
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            const int kk = c * 32 + step * 16;  // the step's first k in the stage
            const int b = kk / kBoxK, grp = (kk % kBoxK) / 8;
            uint32_t wv[4];
            ldmatrix_x4_at(wv, w_box(st, b) + swizzled(w_row, grp + w_grp));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
              uint32_t xv[4];
              ldmatrix_x4_at(xv, x_box(st, b) + swizzled(i * 16 + x_row, grp + x_grp));
              mma16816<T>(acc[i][0], xv, wv[0], wv[1]);
              mma16816<T>(acc[i][1], xv, wv[2], wv[3]);
            }
          }
        }
        __syncwarp();  // every lane's reads of the stage are done
        if (lane == 0) mbar_arrive_at(empty(st));
      }
      if constexpr (SILU) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) tot[i][j][c] = s == s0 ? acc[i][j][c] : fadd(tot[i][j][c], acc[i][j][c]);
      }
    }
    if constexpr (SILU) {
      silu_pairs_store<T, MT>(a, tot, n0 + warp * 8, gid, tig);
    } else {
      store_tile<T, MT, 2>(a, acc, 0, n0 + warp * 16, s0, gid, tig);
    }
  }
}

template <typename T, int MT, int S, bool SILU>
void launch_mt(const GemmArgs& a, int split, const StreamTuning& t, cudaStream_t stream) {
  constexpr size_t smem = smem_bytes<MT, S>();
  static_assert(smem <= 227 * 1024, "stream GEMM stages exceed shared memory");
  auto* k = gemm_stream_kernel<T, MT, S, SILU>;
  static std::atomic<uint64_t> done{0};  // one attribute per instantiation
  once_per_device(done, [&] { VB_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem))); });
  const CUtensorMap mx = tensor_map<T>(a.x, a.K, a.M, a.ldx, MT * 16, true);
  const CUtensorMap mw = tensor_map<T>(a.w, a.K, a.N, a.K, SILU ? 32 : kCols, true);
  const int items = SILU ? a.silu_cols / 32 : ceil_div(a.N, kCols) * split;
  pdl_launch(k, dim3(std::min(items, sm_count())), dim3(kThreads), smem, stream, a, split, t.preload, t.l2_stages, mx, mw);
  VB_CUDA_LAUNCHED();
}
// Stages as deep as ~200 KB of shared memory allow at 33-64 rows (one CTA per SM); at <= 16 rows
// GemmTuning::stream_stages16 (3, 4 or 5: under PDL a shallower ring leaves room to be resident
// beside the kernel before), at 17-32 rows stream_stages32 (3 or 4).
template <typename T, bool SILU>
void launch_for_rows(const GemmArgs& a, int split, const StreamTuning& t, cudaStream_t stream) {
  if (a.M <= 16) {
    if (t.stages16 == 3) return launch_mt<T, 1, 3, SILU>(a, split, t, stream);
    if (t.stages16 == 4) return launch_mt<T, 1, 4, SILU>(a, split, t, stream);
    return launch_mt<T, 1, 5, SILU>(a, split, t, stream);
  }
  if (a.M <= 32) {
    if (t.stages32 == 3) return launch_mt<T, 2, 3, SILU>(a, split, t, stream);
    return launch_mt<T, 2, 4, SILU>(a, split, t, stream);
  }
  if constexpr (!SILU) launch_mt<T, 4, 3, false>(a, split, t, stream);
}

}  // namespace

bool stream_fits(const GemmArgs& a, size_t esize) {
  const bool silu_ok = a.silu_cols == 0 || (a.silu_cols % 32 == 0 && a.M <= 32);
  return a.M >= 1 && a.M <= kStreamMaxM && silu_ok && tma_fits(a, esize);
}

template <typename T>
void launch_stream(const GemmArgs& a, int split, const StreamTuning& t, cudaStream_t stream) {
  if (a.silu_cols > 0) return launch_for_rows<T, true>(a, split, t, stream);
  launch_for_rows<T, false>(a, split, t, stream);
}
template void launch_stream<__nv_bfloat16>(const GemmArgs&, int, const StreamTuning&, cudaStream_t);
template void launch_stream<__half>(const GemmArgs&, int, const StreamTuning&, cudaStream_t);

}  // namespace verbatim::cuda::gemm_impl
