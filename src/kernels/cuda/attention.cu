// Paged causal attention (and the KV-cache write) under the contract: one kernel for prefill,
// chunked prefill and decode.
//
// Per (token, head) the arithmetic is cpu::attention's: keys in tiles of kAttnTile (64) absolute
// positions; per tile s = dot(q, k) * scale, m' = max(m, max s), a = (m == -inf) ? 0 : exp(m - m'),
// p = round(exp(s - m')) (rounded before P·V), l = l * a + (sum of the tile's p), acc = acc * a +
// (the tile's P·V from 0), all with the reference's exp_f32 and no FMA (p's rounding through
// round_exp_candidate where that is provably the recipe's, common.cuh). The dot products and the
// tile's P·V run on tensor cores (mma.sync m16n8k16, k ascending in steps of 16), so those sums
// are grouped differently from the CPU's 16 lanes, but identically for every batch.
// Split-KV: keys are grouped in parts of `part_tokens` positions (a fixed size in tokens, never a
// fixed count). A token whose keys span several parts gets one (m, l, acc) state per part; the
// merge folds them in part order: m' = max(m, m_i), l = l·e^(m-m') + l_i·e^(m_i-m'), acc likewise
// (the fold and ring kernels fold a row's one-tile states in the CTA with the same step, in order).
// The rows of one CTA are (query token, head of the kv group) pairs of one sequence; rows never
// interact in an MMA, and a row skips tiles past its own position, so a row's result depends on
// its q and on K/V at positions 0..pos only: not on which other rows share the CTA.
#include <atomic>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/ops.h"

namespace verbatim::cuda {
namespace {

constexpr int kTile = 64;   // keys per tile
static_assert(kTile == verbatim::cpu::kAttnTile, "the CUDA tiles must be the CPU reference's tiles");
constexpr int kRows = 64;   // (token, head) rows per CTA: 4 warps x 16
constexpr int kThreads = 128;
constexpr float kNegInf = -__builtin_huge_valf();

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
// 16 bytes, or (bytes == 0) 16 zero bytes without reading src.
__device__ __forceinline__ void cp_async16_zfill(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
// The barrier gets this thread's arrival once every cp.async it has issued so far has landed (the
// arrival is counted in the barrier's init count: .noinc).
__device__ __forceinline__ void cp_async_arrive_on(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
// sm_90 bulk copies into shared memory, completing on an mbarrier (one phase per CTA here).
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) { mbar_init_at(smem_addr(bar), count); }
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  mbar_arrive_expect_tx_at(smem_addr(bar), bytes);
}
__device__ __forceinline__ void bulk_copy_to_smem(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) { mbar_arrive_at(smem_addr(bar)); }
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) { mbar_wait_at(smem_addr(bar), parity); }
__device__ __forceinline__ void mbar_wait_phase0(uint64_t* bar) { mbar_wait(bar, 0); }

// One stage of a K and a V tile, rows padded so that fragment reads hit distinct banks: K rows are
// read 8 bytes per lane (rows 8 words apart mod 32: the 4 rows of a half warp never share a
// bank), V rows by ldmatrix (rows 4 words apart mod 32: the 8 rows of a matrix never do).
template <int HD> struct Smem {
  static constexpr int kKStride = HD + 16;
  static constexpr int kVStride = HD + 8;
  static constexpr size_t kKElems = size_t(kTile) * kKStride;
  static constexpr size_t kVElems = size_t(kTile) * kVStride;
  static constexpr size_t kStageElems = kKElems + kVElems;  // K then V
};

// pos / block_size and pos % block_size for positions >= 0: shifts when the block size is a power
// of two (the usual case), a division otherwise. Addresses only: the same quotient either way.
struct BlockDiv {
  int bs, shift;
  bool pow2;
  __device__ __forceinline__ explicit BlockDiv(int bs_) : bs(bs_), shift(0), pow2((bs_ & (bs_ - 1)) == 0) {
#ifdef __CUDA_ARCH__  // __ffs is device-only; the host pass never runs this
    shift = __ffs(bs_) - 1;
#endif
  }
  __device__ __forceinline__ int quot(int pos) const { return pow2 ? pos >> shift : pos / bs; }
  __device__ __forceinline__ int rem(int pos) const { return pow2 ? pos & (bs - 1) : pos % bs; }
};

// The cache blocks of a tile's positions [t0, limit) (limit <= t0 + 64). When they number <= 32
// (block_size >= 3) each lane reads one block id once and `of` passes it around with a shuffle:
// a block-table read per copy made each copy wait for an L2 round trip (addresses only: what is
// read is the same). `of` is called by every lane of the warp together; positions >= limit get 0.
struct TileBlocks {
  const int32_t* bt;
  BlockDiv div;
  int first, limit, mine;
  bool cached;
  __device__ __forceinline__ TileBlocks(const int32_t* bt_, int t0, int limit_, int block_size_)
      : bt(bt_), div(block_size_), first(div.quot(t0)), limit(limit_) {
    const int nblk = limit > t0 ? div.quot(limit - 1) - first + 1 : 0;
    const int lane = threadIdx.x & 31;
    cached = nblk <= 32;  // warp-uniform
    mine = (cached && lane < nblk) ? bt[first + lane] : 0;
  }
  __device__ __forceinline__ int of(int pos) const {
    const int b = __shfl_sync(0xffffffffu, mine, min(max(div.quot(pos) - first, 0), 31));
    return cached ? b : (pos < limit ? bt[div.quot(pos)] : 0);
  }
  // The cache slot of a position (every lane together, as `of`).
  __device__ __forceinline__ int64_t slot(int pos) const { return int64_t(of(pos)) * div.bs + div.rem(pos); }
};

// Loads keys [t0, t0 + 64) of the kv head into smem; positions >= limit are zero-filled (never
// read from the cache: they may not exist, and zeros keep masked products exactly 0). Called by
// every thread of the CTA (TileBlocks shuffles; the trip count is the same for the whole warp).
template <typename T, int HD, int WARPS>
__device__ __forceinline__ void load_tile(T* ks, T* vs, const T* kc, const T* vc, const int32_t* bt, int t0, int limit,
                                          int block_size, int kv_heads, int kvh) {
  constexpr int kChunks = HD / 8;
  const TileBlocks blocks(bt, t0, min(t0 + kTile, limit), block_size);
#pragma unroll 4
  for (int idx = threadIdx.x; idx < kTile * kChunks; idx += WARPS * 32) {
    const int key = idx / kChunks, c = idx % kChunks;
    const int pos = t0 + key;
    const int64_t slot = blocks.slot(pos);
    T* kd = ks + key * Smem<HD>::kKStride + c * 8;
    T* vd = vs + key * Smem<HD>::kVStride + c * 8;
    if (pos < limit) {
      const int64_t off = (slot * kv_heads + kvh) * HD + c * 8;
      cp_async16(kd, kc + off);
      cp_async16(vd, vc + off);
    } else {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
    }
  }
}

// The per-row quantities one warp gets from one tile of 64 keys (rows gid and gid + 8 of its 16):
// mn = max(m_in, max of the tile's scores) for rows with keys in the tile (`active`), the tile's
// probabilities p = round(exp(s - mn)) summed in a fixed order (`sum`, quad tree), and o = P·V
// from 0 (`o`, MMA over the keys in steps of 16). Inactive rows get p = 0 and keep m_in.
// The q.k dims of an MMA slot (every attention kernel, for q and for k alike): in k16 step kk,
// thread tig's slots 2tig, 2tig+1 take dims 16kk + 4tig, +1 and its slots 2tig+8, 2tig+9 take
// dims 16kk + 4tig + 2, +3. Each step sums the same 16 dims as the plain slot order, and a
// thread's 4 dims are one 8-byte load: a quad reads 32 contiguous bytes of a key row (one whole
// sector; the plain order read 4-byte words, half sectors). Where the words come from: the tile
// in shared memory, or (KFromGlobal) the cache.
template <typename T, int HD>
struct KFromSmem {
  const T* ks;
  __device__ __forceinline__ uint2 at(int nt, int kk) const {
    const int lane = threadIdx.x & 31;
    return *reinterpret_cast<const uint2*>(ks + (nt * 8 + (lane >> 2)) * Smem<HD>::kKStride + (lane & 3) * 4 + kk * 16);
  }
};
// The tile kernel's sources, from the cache. rows[nt]: this thread's key row at dim 4·tig, or null
// past the part (zeros, as the smem tile's fill). KFromGlobal reads each word where the MMA uses it;
// KInRegs loads all of them first (8·HD/16 words: HD <= 128), so all the tile's K bytes are in
// flight at once instead of as the MMAs reach them.
template <typename T, int HD>
struct KFromGlobal {
  const T* rows[8];
  __device__ __forceinline__ uint2 at(int nt, int kk) const {
    return rows[nt] ? *reinterpret_cast<const uint2*>(rows[nt] + kk * 16) : make_uint2(0u, 0u);
  }
};
template <typename T, int HD>
struct KInRegs {
  uint2 w[8][HD / 16];
  __device__ __forceinline__ explicit KInRegs(const KFromGlobal<T, HD>& g) {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) w[nt][kk] = g.at(nt, kk);
  }
  __device__ __forceinline__ uint2 at(int nt, int kk) const { return w[nt][kk]; }
};
struct NothingBeforePV {
  __device__ __forceinline__ void operator()() const {}
};
// Two probabilities (scores v0, v1 against maxima m0, m1; a = the row takes keys) rounded to T
// and packed: round_exp_candidate's values, `unsure` set where either needs the recipe instead
// (prob_pair_exact). Masked keys (v = -inf) and inactive rows get 0; otherwise v <= m.
template <typename T>
__device__ __forceinline__ uint32_t prob_pair(float v0, float m0, bool a0, float v1, float m1, bool a1, bool& unsure) {
  const float v[2] = {v0, v1}, m[2] = {m0, m1};
  const bool a[2] = {a0, a1};
  float c[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const bool need = a[e] && v[e] != kNegInf;
    bool sure;
    const float g = round_exp_candidate<T>(fsub(v[e], m[e]), sure);
    c[e] = need ? g : 0.0f;
    unsure |= need && !sure;
  }
  return pack2<T>(c[0], c[1]);
}
template <typename T>
__device__ __forceinline__ uint32_t prob_pair_exact(float v0, float m0, bool a0, float v1, float m1, bool a1) {
  const float v[2] = {v0, v1}, m[2] = {m0, m1};
  const bool a[2] = {a0, a1};
  float c[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const float x = round_as<T>(exp_nonpos_f32(fsub(v[e], m[e])));
    c[e] = (a[e] && v[e] != kNegInf) ? x : 0.0f;
  }
  return pack2<T>(c[0], c[1]);
}
// The probabilities of row halves h in [H0, H1) (rows gid + 8h of the warp's 16) from their scores
// in s: mn, the ordered sum and p in place (tile_scores' comment). h is the innermost loop, so with
// both halves in one call their chains (the max, the exps, the ordered sum, the shuffles)
// interleave: the operations on each element and the order of each row's sums are the same
// whichever halves one call takes, so the bits are too. Every element's exp is computed, then
// selected (p = 0 for masked keys and inactive rows), not branched around: a thread's 16 or 32 exps
// are independent chains the compiler interleaves (s13_attn, 8B 2,048-token prefill with both
// halves interleaved: 88.0 / 88.1 ms selected, 89.0 / 89.2 branched, 89.7 / 89.7 neither).
// pw[nt][h]: the pair (s[nt][2h], s[nt][2h + 1]) as T, packed once: it is both the rounding of p
// (select then round = round then select, as round(0) = 0) and the P·V operand (p_frags).
template <typename T, int H0, int H1>
__device__ __forceinline__ void tile_probs(float (&s)[8][4], uint32_t (&pw)[8][2], int t0, const int (&pos)[2],
                                           const bool (&active)[2], const float (&m_in)[2], float scale,
                                           float (&mn)[2], float (&sum)[2]) {
  const int tig = threadIdx.x & 3;
  float mt[2] = {kNegInf, kNegInf}, sm[2] = {0.0f, 0.0f};
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int h = H0; h < H1; ++h) {
        const int kp = t0 + nt * 8 + tig * 2 + e;
        const float v = kp <= pos[h] ? fmul(s[nt][2 * h + e], scale) : kNegInf;
        s[nt][2 * h + e] = v;
        mt[h] = fmaxf(mt[h], v);
      }
#pragma unroll
  for (int h = H0; h < H1; ++h) mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 1));
#pragma unroll
  for (int h = H0; h < H1; ++h) mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 2));
#pragma unroll
  for (int h = H0; h < H1; ++h) mn[h] = active[h] ? fmaxf(m_in[h], mt[h]) : m_in[h];
  // p rounded to T: round_exp_candidate's where it is sure, else the recipe, for each key block nt
  // at once (the warp votes; s34_b measured 0.005% of bf16 arguments and 0.05% of fp16 ones
  // unsure, so ~0.6% / ~6% of a warp's 128-element blocks run the recipe). s keeps the scores.
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    bool unsure = false;
#pragma unroll
    for (int h = H0; h < H1; ++h)
      pw[nt][h] = prob_pair<T>(s[nt][2 * h], mn[h], active[h], s[nt][2 * h + 1], mn[h], active[h], unsure);
    if (__any_sync(0xffffffffu, unsure)) {
#pragma unroll
      for (int h = H0; h < H1; ++h)
        pw[nt][h] = prob_pair_exact<T>(s[nt][2 * h], mn[h], active[h], s[nt][2 * h + 1], mn[h], active[h]);
    }
  }
  // Each row's sum over its p in key order (nt, then e).
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int h = H0; h < H1; ++h) {
      s[nt][2 * h] = lo_f<T>(pw[nt][h]);
      s[nt][2 * h + 1] = hi_f<T>(pw[nt][h]);
      sm[h] = fadd(fadd(sm[h], s[nt][2 * h]), s[nt][2 * h + 1]);
    }
  // Quad sum in a fixed tree; every lane of the quad ends with the same bits.
#pragma unroll
  for (int h = H0; h < H1; ++h) sm[h] = fadd(sm[h], __shfl_xor_sync(0xffffffffu, sm[h], 1));
#pragma unroll
  for (int h = H0; h < H1; ++h) sm[h] = fadd(sm[h], __shfl_xor_sync(0xffffffffu, sm[h], 2));
#pragma unroll
  for (int h = H0; h < H1; ++h) sum[h] = sm[h];
}
// What tile_probs gives a half with no active row (p = 0, sum = +0, mn = m_in), without its exps.
__device__ __forceinline__ void idle_half(float (&s)[8][4], uint32_t (&pw)[8][2], int h, const float (&m_in)[2],
                                          float (&mn)[2], float (&sum)[2]) {
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    s[nt][2 * h] = s[nt][2 * h + 1] = 0.0f;
    pw[nt][h] = 0u;
  }
  mn[h] = m_in[h];
  sum[h] = 0.0f;
}
// tile_compute's first half: the scores, then the probabilities in s (rows gid, gid + 8 of key
// block nt at s[nt][2h], s[nt][2h + 1]) and packed as T in pw (tile_probs), mn, sum and active. Unless INTERLEAVE, a half whose rows
// are all inactive skips its exps (a decode item has rows = the kv group, < 8 on Qwen3), the halves
// one after the other; INTERLEAVE (the fold kernel, where every row of a prefill item is valid)
// runs both halves interleaved (tile_probs). Same bits either way.
// The scores of key block nt (8 keys) for this thread's rows: one MMA chain over the head dims,
// k16 steps ascending (tile_scores' per block; the split kernel's warps each take two blocks).
template <typename T, int HD, typename KSrc>
__device__ __forceinline__ void score_block(const uint32_t (&qa)[HD / 16][4], const KSrc& kf, int nt, float (&s)[4]) {
#pragma unroll
  for (int c = 0; c < 4; ++c) s[c] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    const uint2 b = kf.at(nt, kk);
    mma16816<T>(s, qa[kk], b.x, b.y);
  }
}
template <typename T, int HD, typename KSrc, bool INTERLEAVE = false>
__device__ __forceinline__ void tile_scores(const uint32_t (&qa)[HD / 16][4], const KSrc& kf, int t0,
                                            const int (&pos)[2], const bool (&valid)[2], const float (&m_in)[2],
                                            float scale, float (&s)[8][4], uint32_t (&pw)[8][2], float (&mn)[2],
                                            float (&sum)[2], bool (&active)[2]) {
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) score_block<T, HD>(qa, kf, nt, s[nt]);
#pragma unroll
  for (int h = 0; h < 2; ++h) active[h] = valid[h] && t0 <= pos[h];  // a row skips tiles past its own position
  if constexpr (INTERLEAVE) {
    tile_probs<T, 0, 2>(s, pw, t0, pos, active, m_in, scale, mn, sum);
  } else {
    if (__any_sync(0xffffffffu, active[0])) tile_probs<T, 0, 1>(s, pw, t0, pos, active, m_in, scale, mn, sum);
    else idle_half(s, pw, 0, m_in, mn, sum);
    if (__any_sync(0xffffffffu, active[1])) tile_probs<T, 1, 2>(s, pw, t0, pos, active, m_in, scale, mn, sum);
    else idle_half(s, pw, 1, m_in, mn, sum);
  }
}
// V's fragments of key block j (16 keys) for output columns 8 nt .. 8 nt + 15 (ldmatrix).
template <typename T, int HD>
__device__ __forceinline__ void v_frags(const T* vs, int j, int nt, uint32_t (&b)[4]) {
  const int lane = threadIdx.x & 31, mi = lane >> 3, ri = lane & 7;
  const T* src = vs + (j * 16 + (mi & 1) * 8 + ri) * Smem<HD>::kVStride + (nt + (mi >> 1)) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(smem_addr(src)));
}
// The probabilities as MMA A fragments, key block j (16 keys) in pa[j], from tile_probs' packed pairs.
__device__ __forceinline__ void p_frags(const uint32_t (&pw)[8][2], uint32_t (&pa)[4][4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    pa[j][0] = pw[2 * j][0];
    pa[j][1] = pw[2 * j][1];
    pa[j][2] = pw[2 * j + 1][0];
    pa[j][3] = pw[2 * j + 1][1];
  }
}
// The transposed tile (the ring kernel's consumers on items of <= 8 rows): keys as the MMA's m and
// the query rows as its n, so Q·K^T and P·V take 32 MMAs each instead of 64 (an m16 tile of rows
// held the kv group, 2 or 4 rows on Qwen3, in 16). Each score and each P·V element is the same
// products over the same k16 slots, accumulated in the same order (k ascending; key blocks j
// ascending), with the operands' roles swapped: that the MMA then gives the same bits is what
// cuda_ops_test checks (the ring kernel against the tile kernel + merge, on every shape).
// An 8 x 8 b16 matrix transposed across the warp (thread t: row t / 4, columns 2 (t % 4), +1).
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
// V^T's A fragments of key block j (16 keys) for output dims 16 mt .. 16 mt + 15 (ldmatrix.trans;
// v_frags' matrices with the roles of their two index bits swapped).
template <typename T, int HD>
__device__ __forceinline__ void vt_frags(const T* vs, int j, int mt, uint32_t (&a)[4]) {
  const int lane = threadIdx.x & 31, mi = lane >> 3, ri = lane & 7;
  const T* src = vs + (j * 16 + (mi >> 1) * 8 + ri) * Smem<HD>::kVStride + (2 * mt + (mi & 1)) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem_addr(src)));
}
// One tile from m = -inf in the transposed layout, for rows 2 tig + c (c = 0, 1) of this thread:
// s^T[mt][e] is key 16 mt + 8 (e >> 1) + gid, row 2 tig + (e & 1); o^T[mt][e] is dim
// 16 mt + 8 (e >> 1) + gid, row 2 tig + (e & 1). qb[kk]: q's B fragments, row gid (load_q's
// words 0 and 2 of row gid). mn, sum: tile_probs' for the rows, p rounded as there, and each row's
// sum in tile_probs' order: the chain of quad lane tig' over keys 8 nt + 2 tig' + e (nt, then e),
// then the quad tree ((tig' 0 + 1) + (2 + 3)). Key 8 nt + 2 tig' + e sits in the lane of gid
// 2 tig' + e, so a lane pair (gid 2 tig', 2 tig' + 1) swaps one row's values and each runs one
// chain (even gid: row 2 tig, odd: row 2 tig + 1); lanes 8 and 16 apart hold the tree's partners.
// kf: K's words as tile_scores takes them (kf.at(nt, kk): key 8 nt + gid, dims 16 kk + 4 tig .. + 3);
// vs: V in Smem's layout.
template <typename T, int HD, typename KSrc>
__device__ __forceinline__ void tile_compute_tr(const uint32_t (&qb)[HD / 16][2], const KSrc& kf, const T* vs, int t0,
                                                const int (&pos)[2], const bool (&valid)[2], float scale,
                                                float (&mn)[2], float (&sum)[2], bool (&active)[2],
                                                float (&o)[HD / 16][4]) {
  const int lane = threadIdx.x & 31, gid = lane >> 2;
  const bool odd = gid & 1;
  float s[4][4];
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
    for (int c = 0; c < 4; ++c) s[mt][c] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const uint2 k0 = kf.at(2 * mt, kk), k1 = kf.at(2 * mt + 1, kk);  // keys 16 mt + gid, + 8
      const uint32_t ka[4] = {k0.x, k1.x, k0.y, k1.y};
      mma16816<T>(s[mt], ka, qb[kk][0], qb[kk][1]);
    }
  }
#pragma unroll
  for (int c = 0; c < 2; ++c) active[c] = valid[c] && t0 <= pos[c];
  float mx[2] = {kNegInf, kNegInf};
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = e & 1, kp = t0 + mt * 16 + (e >> 1) * 8 + gid;
      const float v = kp <= pos[c] ? fmul(s[mt][e], scale) : kNegInf;
      s[mt][e] = v;
      mx[c] = fmaxf(mx[c], v);
    }
#pragma unroll
  for (int x = 4; x <= 16; x *= 2)
#pragma unroll
    for (int c = 0; c < 2; ++c) mx[c] = fmaxf(mx[c], __shfl_xor_sync(0xffffffffu, mx[c], x));
#pragma unroll
  for (int c = 0; c < 2; ++c) mn[c] = active[c] ? fmaxf(kNegInf, mx[c]) : kNegInf;
  // p rounded to T and packed as (row 2 tig, row 2 tig + 1) pairs, the sums' p and P^T's operand:
  // round_exp_candidate's where sure, else the recipe, a key block mt at a time (tile_probs' way).
  uint32_t pw[4][2];
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
    bool unsure = false;
#pragma unroll
    for (int hb = 0; hb < 2; ++hb)
      pw[mt][hb] = prob_pair<T>(s[mt][2 * hb], mn[0], active[0], s[mt][2 * hb + 1], mn[1], active[1], unsure);
    if (__any_sync(0xffffffffu, unsure)) {
#pragma unroll
      for (int hb = 0; hb < 2; ++hb)
        pw[mt][hb] = prob_pair_exact<T>(s[mt][2 * hb], mn[0], active[0], s[mt][2 * hb + 1], mn[1], active[1]);
    }
  }
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int hb = 0; hb < 2; ++hb) {
      s[mt][2 * hb] = lo_f<T>(pw[mt][hb]);
      s[mt][2 * hb + 1] = hi_f<T>(pw[mt][hb]);
    }
  // The ordered sums: key block nt = 2 mt + (e >> 1); this lane's row is 2 tig + odd.
  float sm = 0.0f;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int hb = 0; hb < 2; ++hb) {
      const float mine = odd ? s[mt][2 * hb + 1] : s[mt][2 * hb];
      const float give = odd ? s[mt][2 * hb] : s[mt][2 * hb + 1];  // the partner's row
      const float got = __shfl_xor_sync(0xffffffffu, give, 4);
      sm = fadd(sm, odd ? got : mine);  // e = 0: gid 2 tig' first
      sm = fadd(sm, odd ? mine : got);
    }
  sm = fadd(sm, __shfl_xor_sync(0xffffffffu, sm, 8));
  sm = fadd(sm, __shfl_xor_sync(0xffffffffu, sm, 16));
  const float other = __shfl_xor_sync(0xffffffffu, sm, 4);
  sum[0] = odd ? other : sm;
  sum[1] = odd ? sm : other;
  // P^T's B fragments: an 8 x 8 block (keys 16 j + 8 hb + gid, rows 2 tig, +1) transposed is
  // (rows gid, keys 16 j + 8 hb + 2 tig, +1), the B words of k slots 8 hb + 2 tig, +1.
  uint32_t pb[4][2];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    pb[j][0] = movmatrix_trans(pw[j][0]);
    pb[j][1] = movmatrix_trans(pw[j][1]);
  }
#pragma unroll
  for (int mt = 0; mt < HD / 16; ++mt)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[mt][c] = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int mt = 0; mt < HD / 16; ++mt) {
      uint32_t a[4];
      vt_frags<T, HD>(vs, j, mt, a);
      mma16816<T>(o[mt], a, pb[j][0], pb[j][1]);
    }
}
// before_pv() runs after the scores and probabilities, before V is read (the tile kernel waits
// for its V copy there, so the copy overlaps Q·K^T).
template <typename T, int HD, typename KSrc, typename BeforePV = NothingBeforePV>
__device__ __forceinline__ void tile_compute(const uint32_t (&qa)[HD / 16][4], const KSrc& kf, const T* vs, int t0,
                                             const int (&pos)[2], const bool (&valid)[2], const float (&m_in)[2],
                                             float scale, float (&mn)[2], float (&sum)[2], bool (&active)[2],
                                             float (&o)[HD / 8][4], BeforePV before_pv = {}) {
  float s[8][4];
  uint32_t pw[8][2];
  tile_scores<T, HD>(qa, kf, t0, pos, valid, m_in, scale, s, pw, mn, sum, active);
  before_pv();
#pragma unroll
  for (int n = 0; n < HD / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[n][c] = 0.0f;
  uint32_t pa[4][4];
  p_frags(pw, pa);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt += 2) {
      uint32_t b[4];
      v_frags<T, HD>(vs, j, nt, b);
      mma16816<T>(o[nt], pa[j], b[0], b[1]);
      mma16816<T>(o[nt + 1], pa[j], b[2], b[3]);
    }
  }
}

// The part states' fold, the same functions in the merge kernel, the fold kernel and the ring
// kernel's folder: the scalars (m, l) and their factors, then each element of acc with them.
__device__ __forceinline__ float fold_elem(float acc, float oi, float fa, float fb) {
  return fadd(fmul(acc, fa), fmul(oi, fb));
}
__device__ __forceinline__ void fold_scalars(float& m, float& l, float mi, float li, float& fa, float& fb) {
  const float mn = fmaxf(m, mi);
  fa = exp_nonpos_f32(fsub(m, mn));  // m, mi <= mn
  fb = exp_nonpos_f32(fsub(mi, mn));
  l = fold_elem(l, li, fa, fb);
  m = mn;
}

// Rows of the CTA for this thread: (token, head, position) of rows gid and gid + 8 of its warp.
// row_warp: the warp's place in the item's rows (its warp index; 0 in the ring kernel, whose
// consumer warps all hold rows 0..15).
template <int HD>
__device__ __forceinline__ void row_setup(const AttnArgs& a, const AttnItem& item, int kvh, int (&pos)[2],
                                          int (&token)[2], int (&head)[2], bool (&valid)[2],
                                          int row_warp = int(threadIdx.x >> 5)) {
  const int group = a.heads / a.kv_heads;
  const int R = item.count * group;
  const int warp = row_warp, gid = (threadIdx.x & 31) >> 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + h * 8 + gid;
    valid[h] = r < R;
    token[h] = item.first + (valid[h] ? r / group : 0);
    head[h] = kvh * group + (valid[h] ? r % group : 0);
    pos[h] = valid[h] ? a.positions[token[h]] : -1;
  }
}
template <typename T, int HD>
__device__ __forceinline__ void load_q(const AttnArgs& a, const int (&token)[2], const int (&head)[2],
                                       const bool (&valid)[2], uint32_t (&qa)[HD / 16][4]) {
  const int tig = threadIdx.x & 3;
  const T* q = static_cast<const T*>(a.q);
  const int64_t ld = a.q_ld ? a.q_ld : int64_t(a.heads) * HD;
  const T* qr0 = q + int64_t(token[0]) * ld + int64_t(head[0]) * HD;
  const T* qr1 = q + int64_t(token[1]) * ld + int64_t(head[1]) * HD;
#pragma unroll
  for (int ks = 0; ks < HD / 16; ++ks) {  // the slot map of KFromSmem's comment
    const int d = ks * 16 + tig * 4;
    const uint2 q0 = valid[0] ? *reinterpret_cast<const uint2*>(qr0 + d) : make_uint2(0u, 0u);
    const uint2 q1 = valid[1] ? *reinterpret_cast<const uint2*>(qr1 + d) : make_uint2(0u, 0u);
    qa[ks][0] = q0.x;
    qa[ks][1] = q1.x;
    qa[ks][2] = q0.y;
    qa[ks][3] = q1.y;
  }
}
// The transposed tiles' rows of this thread: 2 tig + c (c = 0, 1), as row_setup's.
__device__ __forceinline__ void row_setup_tr(const AttnArgs& a, const AttnItem& item, int kvh, int (&pos)[2],
                                             int (&token)[2], int (&head)[2], bool (&valid)[2]) {
  const int group = a.heads / a.kv_heads;
  const int R = item.count * group;
  const int tig = threadIdx.x & 3;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const int r = 2 * tig + c;
    valid[c] = r < R;
    token[c] = item.first + (valid[c] ? r / group : 0);
    head[c] = kvh * group + (valid[c] ? r % group : 0);
    pos[c] = valid[c] ? a.positions[token[c]] : -1;
  }
}
// acc[n] holds output columns 8 (n0 + n) .. + 7 (n0 > 0: the split kernel's warps, a slice each).
template <typename T, int HD, int NT>
__device__ __forceinline__ void store_out(const AttnArgs& a, int token, int head, const float (&acc)[NT][4], int h,
                                          float l, int n0 = 0) {
  const int tig = threadIdx.x & 3;
  T* o = static_cast<T*>(a.out) + (int64_t(token) * a.heads + head) * HD + n0 * 8;
#pragma unroll
  for (int n = 0; n < NT; ++n)
    *reinterpret_cast<uint32_t*>(o + n * 8 + tig * 2) = pack2<T>(fdiv(acc[n][2 * h], l), fdiv(acc[n][2 * h + 1], l));
}

// A part's result: the output itself for a row whose keys all lie in part 0, else the part's
// state (m, l, acc) for attention_merge. acc: columns from 8 n0 (store_out's); write_ml: whether
// this thread's quad writes the state's m and l (the split kernel's warp 0 only).
template <typename T, int HD, int NT>
__device__ __forceinline__ void store_part(const AttnArgs& a, const AttnItem& item, const int (&token)[2],
                                           const int (&head)[2], const int (&pos)[2], const bool (&valid)[2], int p0,
                                           const float (&m)[2], const float (&l)[2], const float (&acc)[NT][4],
                                           int n0 = 0, bool write_ml = true) {
  const int tig = threadIdx.x & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!valid[h] || pos[h] < p0) continue;
    if (pos[h] / a.part_tokens == 0) {
      store_out<T, HD>(a, token[h], head[h], acc, h, l[h], n0);
    } else {
      const int64_t st = int64_t(a.state_base[token[h]] + item.part) * a.heads + head[h];
      float* sp = a.states + st * (HD + 4);
      if (tig == 0 && write_ml) {
        sp[0] = m[h];
        sp[1] = l[h];
      }
#pragma unroll
      for (int n = 0; n < NT; ++n)
        *reinterpret_cast<float2*>(sp + 4 + (n0 + n) * 8 + tig * 2) = make_float2(acc[n][2 * h], acc[n][2 * h + 1]);
    }
  }
}

// store_out for the transposed tiles' row 2 tig + c: acc[mt][2 hb + c] is dim 16 mt + 8 hb + gid
// (tile_compute_tr's o).
template <typename T, int HD>
__device__ __forceinline__ void store_out_tr(const AttnArgs& a, int token, int head, const float (&acc)[HD / 16][4],
                                             int c, float l) {
  const int gid = (threadIdx.x & 31) >> 2;
  T* o = static_cast<T*>(a.out) + (int64_t(token) * a.heads + head) * HD;
#pragma unroll
  for (int mt = 0; mt < HD / 16; ++mt)
#pragma unroll
    for (int hb = 0; hb < 2; ++hb) o[mt * 16 + hb * 8 + gid] = from_f<T>(fdiv(acc[mt][2 * hb + c], l));
}

// One warp folds the part states of one (multi-part token, head) in part order, then out = acc / l.
// The states of kMergeAhead parts are loaded before they are folded (independent loads in
// flight instead of one memory round trip per part). The fold's factors need only the running
// maximum, never l or acc, so lane j takes part p0 + j's: the running maximum before and after it
// (the same fmaxf over the same parts in the same order, done by every lane) and its two exps,
// all lanes at once; then the fold itself runs in part order with each part's factors taken from
// its lane: fold_scalars' operations on the same values, in the same order, so the same bits. Serial,
// the exps of 15 parts at 1k context were most of the merge's time (ncu: ~1,700 instructions a
// warp at 6 cycles each, session 36); this way 0.6B decode is 3.4% faster at 1 and 4 sequences
// (H100, session 46).
// States are read through L2 (ld.global.cg): with the merge fused into the attention kernel,
// other CTAs of the same grid wrote them, and L1 is not coherent across SMs.
template <typename T, int HD>
__device__ __forceinline__ void merge_row(const AttnArgs& a, int token, int base, int head, int parts, int lane) {
  constexpr int kMergeAhead = HD >= 256 ? 8 : 16;
  constexpr int kPer = (HD + 31) / 32;
  const float* st = a.states + (int64_t(base) * a.heads + head) * (HD + 4);
  const int64_t stride = int64_t(a.heads) * (HD + 4);
  float m = __ldcg(st), l = __ldcg(st + 1);
  float acc[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) acc[c] = (lane + 32 * c < HD) ? __ldcg(st + 4 + lane + 32 * c) : 0.0f;
  for (int p0 = 1; p0 < parts; p0 += kMergeAhead) {
    const int n = min(kMergeAhead, parts - p0);  // parts in this round
    float pa[kMergeAhead][kPer];
    // Lane j < n: part p0 + j's m and l.
    const float* sl = st + (p0 + min(lane, n - 1)) * stride;
    const float mj = __ldcg(sl), lj = __ldcg(sl + 1);
#pragma unroll
    for (int j = 0; j < kMergeAhead; ++j) {
      if (j < n) {
        const float* sp = st + (p0 + j) * stride;
#pragma unroll
        for (int c = 0; c < kPer; ++c) pa[j][c] = (lane + 32 * c < HD) ? __ldcg(sp + 4 + lane + 32 * c) : 0.0f;
      }
    }
    // The running maximum before (m_before) and after (m_after) lane j's part, as fold_scalars
    // takes it part by part.
    float run = m, m_before = m, m_after = m;
#pragma unroll
    for (int j = 0; j < kMergeAhead; ++j) {
      const float mi = __shfl_sync(0xffffffffu, mj, j);
      if (j < n) {
        if (j == lane) m_before = run;
        run = fmaxf(run, mi);
        if (j == lane) m_after = run;
      }
    }
    const float fa_j = exp_nonpos_f32(fsub(m_before, m_after));  // fold_scalars' fa and fb of part p0 + j
    const float fb_j = exp_nonpos_f32(fsub(mj, m_after));
#pragma unroll
    for (int j = 0; j < kMergeAhead; ++j) {
      const float fa = __shfl_sync(0xffffffffu, fa_j, j), fb = __shfl_sync(0xffffffffu, fb_j, j);
      const float li = __shfl_sync(0xffffffffu, lj, j);
      if (j < n) {
        l = fold_elem(l, li, fa, fb);  // fold_scalars' l
#pragma unroll
        for (int c = 0; c < kPer; ++c)
          if (lane + 32 * c < HD) acc[c] = fold_elem(acc[c], pa[j][c], fa, fb);
      }
    }
    m = run;
  }
  T* o = static_cast<T*>(a.out) + (int64_t(token) * a.heads + head) * HD;
#pragma unroll
  for (int c = 0; c < kPer; ++c)
    if (lane + 32 * c < HD) o[lane + 32 * c] = from_f<T>(fdiv(acc[c], l));
}

// One atomic add with release and acquire semantics at GPU scope (the fused merge's count).
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// The merge fused into the attention kernels (AttnArgs::merge_counters set): after its states
// are stored, each CTA of an item with several parts counts itself done on the item's counter;
// the CTA that counts last folds every multi-part row of the item with merge_row, the merge
// kernel's arithmetic in the same order, so the bits do not depend on which CTA finishes last.
// Ordering: the CTA barrier puts every thread's state stores before thread 0's count, whose
// release makes them visible with it; the last CTA's acquire (same atomic), then the barrier,
// put the other CTAs' states before its reads. One acq_rel atomic per CTA, as cooperative
// groups' grid sync fences from one thread (s8_merge: a __threadfence in every thread, fence.sc
// each, made the fused kernels slower than the separate merge). The last CTA puts the counter
// back to 0 for the next launch (no other CTA of the item touches it any more).
template <typename T, int HD, int WARPS>
__device__ __forceinline__ void merge_if_last(const AttnArgs& a, const AttnItem& item, int kvh, int maxpos) {
  const int nparts = maxpos / a.part_tokens + 1;
  if (a.merge_counters == nullptr || nparts == 1) return;  // uniform over the CTA
  int last = 0;
  if constexpr (WARPS > 1) __syncthreads(); else __syncwarp();
  if (threadIdx.x == 0) {
    int* c = a.merge_counters + int64_t(item.first) * a.kv_heads + kvh;
    last = atomic_add_acq_rel_gpu(c, 1) == nparts - 1;
    if (last) *c = 0;
  }
  if constexpr (WARPS > 1) {
    last = __syncthreads_or(last);
  } else {
    last = __shfl_sync(0xffffffffu, last, 0);
    __syncwarp();  // lane 0's acquire before the other lanes' reads
  }
  if (!last) return;
  const int group = a.heads / a.kv_heads;
  const int lane = threadIdx.x & 31;
  for (int r = int(threadIdx.x >> 5); r < item.count * group; r += WARPS) {
    const int token = item.first + r / group;
    const int parts = a.positions[token] / a.part_tokens + 1;
    if (parts > 1) merge_row<T, HD>(a, token, a.state_base[token], kvh * group + r % group, parts, lane);
  }
}

// Per-part items: the part's tiles in the reference's online softmax; a single-part row is
// finished here, a multi-part row's state goes to attention_merge.
template <typename T, int HD, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) attention_part_kernel(AttnArgs a, int item_offset) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  // Step inputs first (read_step_inputs_before_pdl in common.cuh): they overlap the kernel before.
  const AttnItem item = a.items[item_offset + blockIdx.x];
  if (item.count == 0) return;  // graph padding (uniform over the CTA: before any barrier)
  const int kvh = blockIdx.y;
  const int R = item.count * (a.heads / a.kv_heads);
  const int warp = threadIdx.x >> 5;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  const int32_t* bt = a.block_tables + item.bt_offset;
  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  const int p0 = item.part * a.part_tokens;
  const int p1 = min(p0 + a.part_tokens, maxpos + 1);
  int pos[2], token[2], head[2];
  bool valid[2];
  row_setup<HD>(a, item, kvh, pos, token, head, valid);
  pdl_begin();  // q, K and V are written by the kernels before this one
  const bool warp_active = warp * 16 < R;
  uint32_t qa[HD / 16][4];
  load_q<T, HD>(a, token, head, valid, qa);

  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  float acc[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[n][c] = 0.0f;
  const int ntiles = p1 > p0 ? (p1 - p0 + kTile - 1) / kTile : 0;
  if (ntiles > 0)
    load_tile<T, HD, WARPS>(smem, smem + Smem<HD>::kKElems, kc, vc, bt, p0, p1, a.block_size, a.kv_heads, kvh);
  cp_async_commit();
  for (int it = 0; it < ntiles; ++it) {
    const int t0 = p0 + it * kTile;
    const int buf = it & 1;
    if (it + 1 < ntiles) {  // only parts of several tiles use the second stage
      T* nb = smem + size_t(buf ^ 1) * Smem<HD>::kStageElems;
      load_tile<T, HD, WARPS>(nb, nb + Smem<HD>::kKElems, kc, vc, bt, t0 + kTile, p1, a.block_size, a.kv_heads, kvh);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // this tile's K/V are in smem for every warp
    const T* ks = smem + size_t(buf) * Smem<HD>::kStageElems;
    const T* vs = ks + Smem<HD>::kKElems;
    if (warp_active) {
      float mn[2], sum[2], o[HD / 8][4];
      bool active[2];
      tile_compute<T, HD>(qa, KFromSmem<T, HD>{ks}, vs, t0, pos, valid, m, a.scale, mn, sum, active, o);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!active[h]) continue;
        const float alpha = (m[h] == kNegInf) ? 0.0f : exp_nonpos_f32(fsub(m[h], mn[h]));  // m <= mn
        l[h] = fadd(fmul(l[h], alpha), sum[h]);
#pragma unroll
        for (int n = 0; n < HD / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) acc[n][2 * h + e] = fadd(fmul(acc[n][2 * h + e], alpha), o[n][2 * h + e]);
        m[h] = mn[h];
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_part<T, HD>(a, item, token, head, pos, valid, p0, m, l, acc);
  merge_if_last<T, HD, WARPS>(a, item, kvh, maxpos);
}

// The per-part kernel's update of a fresh state (m = -inf, l = 0, acc = 0: alpha = 0) by one tile
// (mn, sum, o: tile_compute's), for kernels whose parts are one tile: l = 0·0 + sum, acc = 0·0 + o,
// m = mn for rows with keys in the tile; other rows keep the fresh state (o zeroed). o: NT column
// blocks (all of the row's, or a split-kernel warp's slice).
template <int NT>
__device__ __forceinline__ void fresh_tile_state(const bool (&active)[2], const float (&mn)[2], const float (&sum)[2],
                                                 float (&o)[NT][4], float (&m)[2], float (&l)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m[h] = kNegInf;
    l[h] = 0.0f;
    if (!active[h]) {
#pragma unroll
      for (int n = 0; n < NT; ++n) o[n][2 * h] = o[n][2 * h + 1] = 0.0f;
      continue;
    }
    l[h] = fadd(fmul(0.0f, 0.0f), sum[h]);
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) o[n][2 * h + e] = fadd(fmul(0.0f, 0.0f), o[n][2 * h + e]);
    m[h] = mn[h];
  }
}

// Items of <= 16 rows whose parts are one tile, while their CTAs fit the GPU at 2 per SM (decode
// at batch 1-2): the four-warp per-part kernel's work split over its warps, where that kernel
// leaves warp 0 all of it (every row sits in warp 0's m16 tile). Warp w copies and scores keys
// 16 w .. 16 w + 15 (each score is its own MMA chain over the head dims: the same bits in any
// warp); the rows' maxima meet in shared memory (a max is exact in any order); warp w's
// probabilities (each a function of its score and the row's max alone) go to shared memory; then
// every warp sums all 64 of a row in key order with tile_probs' chain and quad tree (so every warp
// holds the same l) and computes P·V for output columns HD/4 w .. HD/4 (w + 1) over all 64 keys
// (each column its own MMA chain, key blocks j ascending, as tile_compute's). So every value is
// the per-part kernel's, bit for bit (cuda_ops_test compares them); the serial chain of warp 0
// shrinks to a quarter of the MMAs and exps plus two CTA barriers.
template <typename T, int HD>
__global__ void __launch_bounds__(128) attention_split_kernel(AttnArgs a, int item_offset) {
  static_assert(HD >= 64, "four warps take HD / 32 output column blocks each, an even count");
  constexpr int kNt = HD / 32;        // output column blocks (8 wide) of a warp
  constexpr int kChunks = HD / 8;     // 16-byte chunks of a key row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* ks = reinterpret_cast<T*>(smem_raw);
  T* vs = ks + Smem<HD>::kKElems;
  float* row_max = reinterpret_cast<float*>(smem_raw + Smem<HD>::kStageElems * sizeof(T));  // [warp][16 rows]
  uint32_t* probs = reinterpret_cast<uint32_t*>(row_max + 4 * 16);  // [key block 8][half 2][lane 32]
  // Step inputs first (read_step_inputs_before_pdl in common.cuh), the block ids included.
  const AttnItem item = a.items[item_offset + blockIdx.x];
  if (item.count == 0) return;  // graph padding (uniform over the CTA: before any barrier)
  const int kvh = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  const int p0 = item.part * kTile;
  const int p1 = min(p0 + kTile, maxpos + 1);
  const int k0 = p0 + warp * 16;  // this warp's keys
  const TileBlocks blocks(a.block_tables + item.bt_offset, k0, min(k0 + 16, p1), a.block_size);
  int pos[2], token[2], head[2];
  bool valid[2];
  row_setup<HD>(a, item, kvh, pos, token, head, valid, 0);  // every warp holds rows 0..15
  pdl_begin();  // q, K and V are written by the kernels before this one
  // K, then V, of this warp's keys; keys past the part are zeros (load_tile's reason).
#pragma unroll
  for (int kv = 0; kv < 2; ++kv) {
    const T* src = kv ? vc : kc;
    T* dst = kv ? vs : ks;
    const int stride = kv ? Smem<HD>::kVStride : Smem<HD>::kKStride;
#pragma unroll 4
    for (int idx = lane; idx < 16 * kChunks; idx += 32) {
      const int key = idx / kChunks, c = idx % kChunks, p = k0 + key;
      const int64_t slot = blocks.slot(p);
      T* d = dst + (warp * 16 + key) * stride + c * 8;
      if (p < p1) cp_async16(d, src + (slot * a.kv_heads + kvh) * HD + c * 8);
      else *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
    }
    cp_async_commit();
  }
  uint32_t qa[HD / 16][4];
  load_q<T, HD>(a, token, head, valid, qa);
  bool active[2], any[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    active[h] = valid[h] && p0 <= pos[h];
    any[h] = __any_sync(0xffffffffu, active[h]);  // the same in every warp: the same rows
  }
  cp_async_wait<1>();
  __syncwarp();  // this warp's K rows, copied by its lanes
  float s[2][4];
#pragma unroll
  for (int j = 0; j < 2; ++j) score_block<T, HD>(qa, KFromSmem<T, HD>{ks}, 2 * warp + j, s[j]);
  // Scale and mask (tile_probs'), this warp's maxima per row.
  float mt[2] = {kNegInf, kNegInf};
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int kp = p0 + (2 * warp + j) * 8 + tig * 2 + e;
        const float v = kp <= pos[h] ? fmul(s[j][2 * h + e], a.scale) : kNegInf;
        s[j][2 * h + e] = v;
        mt[h] = fmaxf(mt[h], v);
      }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 1));
    mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 2));
    if (tig == 0) row_max[warp * 16 + h * 8 + gid] = mt[h];
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp's maxima, and every V row, are in shared memory
  float mn[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = kNegInf;
#pragma unroll
    for (int w = 0; w < 4; ++w) mx = fmaxf(mx, row_max[w * 16 + h * 8 + gid]);
    mn[h] = active[h] ? fmaxf(kNegInf, mx) : kNegInf;  // tile_probs' mn from m_in = -inf
  }
  // This warp's probabilities (tile_probs': round_exp_candidate where sure, else the recipe).
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    uint32_t pw[2] = {0u, 0u};
    bool unsure = false;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (any[h]) pw[h] = prob_pair<T>(s[j][2 * h], mn[h], active[h], s[j][2 * h + 1], mn[h], active[h], unsure);
    if (__any_sync(0xffffffffu, unsure)) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (any[h]) pw[h] = prob_pair_exact<T>(s[j][2 * h], mn[h], active[h], s[j][2 * h + 1], mn[h], active[h]);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) probs[((2 * warp + j) * 2 + h) * 32 + lane] = pw[h];
  }
  __syncthreads();  // every key block's probabilities
  uint32_t pw[8][2];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h) pw[nt][h] = probs[(nt * 2 + h) * 32 + lane];
  // Each row's sum in key order (nt, then e), then the quad tree: tile_probs' order exactly; a
  // half without active rows gets idle_half's +0.
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!any[h]) continue;
    float sm = 0.0f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) sm = fadd(fadd(sm, lo_f<T>(pw[nt][h])), hi_f<T>(pw[nt][h]));
    sm = fadd(sm, __shfl_xor_sync(0xffffffffu, sm, 1));
    sm = fadd(sm, __shfl_xor_sync(0xffffffffu, sm, 2));
    sum[h] = sm;
  }
  // P·V, this warp's output columns, key blocks j ascending (tile_compute's order per column).
  uint32_t pa[4][4];
  p_frags(pw, pa);
  float o[kNt][4];
#pragma unroll
  for (int n = 0; n < kNt; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[n][c] = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int n = 0; n < kNt; n += 2) {
      uint32_t b[4];
      v_frags<T, HD>(vs, j, warp * kNt + n, b);
      mma16816<T>(o[n], pa[j], b[0], b[1]);
      mma16816<T>(o[n + 1], pa[j], b[2], b[3]);
    }
  float m[2], l[2];
  fresh_tile_state(active, mn, sum, o, m, l);
  store_part<T, HD>(a, item, token, head, pos, valid, p0, m, l, o, warp * kNt, warp == 0);
  merge_if_last<T, HD, 4>(a, item, kvh, maxpos);
}
template <typename T, int HD>
constexpr size_t split_kernel_smem() {  // one K and V stage, the rows' maxima, the probabilities
  return Smem<HD>::kStageElems * sizeof(T) + 4 * 16 * sizeof(float) + 8 * 2 * 32 * sizeof(uint32_t);
}

// Items of <= 16 rows with parts of one tile (the contract's decode at larger batches): one warp
// per (part, kv head). K fragments come from the cache straight into registers and only V is
// staged in shared memory (17 KB instead of the per-part kernel's 35 KB: twice the warps per SM),
// its copy overlapping Q·K^T. Same arithmetic as the per-part kernel on a one-tile part: the tile
// from m = -inf, then l = 0·0 + sum and acc = 0·0 + P·V (what its running update gives from
// l = 0, acc = 0, alpha = 0), with the same words of K and V in the same MMAs.
// The kernel is latency-bound (a warp's setup, loads and softmax in sequence, 12 warps per SM), so
// its instruction count is its time: each lane copies whole V rows with one bulk copy each (2 per
// lane instead of 32 16-byte copies, each with its block lookup), completing on an mbarrier.
// KPRE: K's words are loaded into registers before the first MMA (KInRegs; head_dim <= 128, as
// 256 would need 256 registers for them), else as the MMAs use them. The launch bound keeps 12
// warps per SM, what shared memory allows (KPRE at head_dim 128: 168 registers, 40 bytes spilled).
template <typename T, int HD, bool KPRE>
__global__ void __launch_bounds__(32, HD <= 128 ? 12 : 1) attention_tile_kernel(AttnArgs a, int item_offset) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* vs = reinterpret_cast<T*>(smem_raw);
  uint64_t* vbar = reinterpret_cast<uint64_t*>(smem_raw + Smem<HD>::kVElems * sizeof(T));
  // Step inputs first (read_step_inputs_before_pdl in common.cuh): they overlap the kernel before.
  const AttnItem item = a.items[item_offset + blockIdx.x];
  if (item.count == 0) return;  // graph padding
  const int kvh = blockIdx.y;
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  const int32_t* bt = a.block_tables + item.bt_offset;
  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  const int p0 = item.part * kTile;
  const int p1 = min(p0 + kTile, maxpos + 1);
  // The tile's block ids (as load_tile), for K's rows and V's copy.
  const TileBlocks blocks(bt, p0, p1, a.block_size);
  int pos[2], token[2], head[2];
  bool valid[2];
  row_setup<HD>(a, item, kvh, pos, token, head, valid);
  pdl_begin();  // q, K and V are written by the kernels before this one
  KFromGlobal<T, HD> kg;
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const int pos = p0 + nt * 8 + gid;
    const int64_t slot = blocks.slot(pos);
    kg.rows[nt] = pos < p1 ? kc + (slot * a.kv_heads + kvh) * HD + tig * 4 : nullptr;
  }
  using KSrc = typename std::conditional<KPRE && HD <= 128, KInRegs<T, HD>, KFromGlobal<T, HD>>::type;
  const KSrc kf(kg);
  // V: keys lane and lane + 32, one bulk copy of a whole row each; rows past the part are zeros.
  constexpr uint32_t kRowBytes = HD * sizeof(T);
  if (lane == 0) mbar_init(vbar, 1);
  __syncwarp();  // the barrier is initialized before any copy completes on it
  if (lane == 0) mbar_arrive_expect_tx(vbar, uint32_t(max(p1 - p0, 0)) * kRowBytes);
#pragma unroll
  for (int r = 0; r < kTile; r += 32) {
    const int key = r + lane, pos = p0 + key;
    const int64_t slot = blocks.slot(pos);
    T* vd = vs + key * Smem<HD>::kVStride;
    if (pos < p1) {
      bulk_copy_to_smem(vd, vc + (slot * a.kv_heads + kvh) * HD, kRowBytes, vbar);
    } else {
#pragma unroll
      for (int c = 0; c < HD / 8; ++c) reinterpret_cast<uint4*>(vd)[c] = make_uint4(0, 0, 0, 0);
    }
  }
  uint32_t qa[HD / 16][4];
  load_q<T, HD>(a, token, head, valid, qa);

  const float fresh[2] = {kNegInf, kNegInf};
  float mn[2], sum[2], o[HD / 8][4];
  bool active[2] = {false, false};
  float m[2], l[2];  // fresh_tile_state's
  // Every path waits for the copies: the CTA must not exit with bulk copies into its smem in flight.
  if (p1 > p0) {
    tile_compute<T, HD>(qa, kf, vs, p0, pos, valid, fresh, a.scale, mn, sum, active, o, [vbar] {
      mbar_wait_phase0(vbar);
      __syncwarp();  // the zero rows other lanes stored are visible too
    });
  } else {
    mbar_wait_phase0(vbar);
  }
  fresh_tile_state(active, mn, sum, o, m, l);
  store_part<T, HD>(a, item, token, head, pos, valid, p0, m, l, o);
  merge_if_last<T, HD, 1>(a, item, kvh, maxpos);
}
template <typename T, int HD>
size_t tile_kernel_smem() { return Smem<HD>::kVElems * sizeof(T) + sizeof(uint64_t); }  // V tile, then its barrier

// The fold kernel's tile loads as bulk copies (addresses only: the same bytes land in the same
// places as load_tile's). Thread tid copies one row per tile: K (tid < 64) or V of key tid & 63,
// one cp.async.bulk completing on the stage's mbarrier instead of 16 cp.async of 16 bytes, each
// with a block lookup and a shuffle (the lookups were most of the cp.async kernel's hot spots,
// ncu session 10). Its block id is read one tile ahead, so no copy waits on a block-table read.
// (ncu session 11: the compiler issues a warp's 32 copies one lane at a time, uniform registers
// each, ~8% of the kernel's stall samples; whole cache blocks by a tensor map would cut that.)
template <typename T, int HD>
struct FoldRowLoader {
  static constexpr uint32_t kRowBytes = HD * sizeof(T);
  const T* src;         // this thread's cache (K or V) at the item's kv head
  T* dst;               // this thread's row in stage 0
  const int32_t* bt;
  BlockDiv div;
  int key, limit;
  int64_t slot_stride;  // elements between cache slots
  int block;            // block id of this thread's key in the next tile to issue
  __device__ __forceinline__ FoldRowLoader(T* smem, const AttnArgs& a, const int32_t* bt_, int kvh, int limit_)
      : bt(bt_), div(a.block_size), key(threadIdx.x & (kTile - 1)), limit(limit_),
        slot_stride(int64_t(a.kv_heads) * HD) {
    const bool is_v = threadIdx.x >= kTile;
    src = static_cast<const T*>(is_v ? a.v_cache : a.k_cache) + int64_t(kvh) * HD;
    dst = is_v ? smem + Smem<HD>::kKElems + key * Smem<HD>::kVStride : smem + key * Smem<HD>::kKStride;
    block = block_of(0);
  }
  __device__ __forceinline__ int block_of(int tile) const {
    const int pos = tile * kTile + key;
    return pos < limit ? bt[div.quot(pos)] : 0;
  }
  // Tile `tile` into stage `buf` on `bar`; positions >= limit get zero rows (never read from the
  // cache, as load_tile). Thread 0 arms the barrier with the bytes the copies bring; a copy that
  // completes before that only drives the transaction count below zero for a while (PTX allows
  // it; the phase cannot end before thread 0's arrival).
  __device__ __forceinline__ void issue(int tile, int buf, uint64_t* bar) {
    const int t0 = tile * kTile, pos = t0 + key;
    T* d = dst + size_t(buf) * Smem<HD>::kStageElems;
    if (threadIdx.x == 0) mbar_arrive_expect_tx(bar, 2 * kRowBytes * uint32_t(min(kTile, limit - t0)));
    if (pos < limit) {
      bulk_copy_to_smem(d, src + (int64_t(block) * div.bs + div.rem(pos)) * slot_stride, kRowBytes, bar);
    } else {
#pragma unroll
      for (int c = 0; c < HD / 8; ++c) reinterpret_cast<uint4*>(d)[c] = make_uint4(0, 0, 0, 0);
    }
    block = block_of(tile + 1);  // in flight while this tile is computed
  }
};

// Whole-row items (contract, parts of one tile): every tile of the rows, each tile's state
// (m_t, 0 + sum, 0 + P·V: the per-part kernel's arithmetic for a one-tile part) folded in order.
// PVC > 0: the tile's P·V is folded into the output PVC columns at a time, as soon as their four
// key blocks are summed (the same MMAs in the same order per element, then the same fold), so the
// tile's whole P·V never occupies registers at once: 3 CTAs per SM instead of 1. PVC 32 keeps
// four MMA chains running instead of two (ncu session 10: the P·V chains' fixed-latency waits).
// PVC 0: the whole tile's P·V, then the fold. BULK: tiles loaded by FoldRowLoader, else by
// load_tile (cp.async). INTERLEAVE (PVC > 0): the tile's two row halves' softmax chains interleaved
// (ncu session 11: 51% of the stall samples were fixed-latency waits at 12 warps per SM). Same bits
// every way (cuda_ops_test AttentionMergeOfManyPartsIsTheFold).
template <typename T, int HD, int PVC, bool BULK, bool INTERLEAVE = false>
__global__ void __launch_bounds__(kThreads, PVC > 0 ? 3 : 1) attention_fold_kernel(AttnArgs a, int item_offset) {
  static_assert(kThreads == 2 * kTile, "BULK: one K or V row per thread");
  pdl_begin();  // before any memory access or return (common.cuh)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem_raw + 2 * Smem<HD>::kStageElems * sizeof(T));  // BULK: per stage
  const AttnItem item = a.items[item_offset + blockIdx.x];
  if (item.count == 0) return;
  const int kvh = blockIdx.y;
  const int R = item.count * (a.heads / a.kv_heads);
  const int warp = threadIdx.x >> 5;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  const int32_t* bt = a.block_tables + item.bt_offset;
  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  int pos[2], token[2], head[2];
  bool valid[2];
  row_setup<HD>(a, item, kvh, pos, token, head, valid);
  const bool warp_active = warp * 16 < R;
  const int ntiles = maxpos / kTile + 1;
  const int limit = maxpos + 1;
  FoldRowLoader<T, HD> rows(smem, a, bt, kvh, limit);
  if constexpr (BULK) {
    if (threadIdx.x == 0) {
      mbar_init(&bars[0], 1);
      mbar_init(&bars[1], 1);
    }
    __syncthreads();  // the barriers are initialized before any copy completes on them
    rows.issue(0, 0, &bars[0]);
  } else {
    load_tile<T, HD, 4>(smem, smem + Smem<HD>::kKElems, kc, vc, bt, 0, limit, a.block_size, a.kv_heads, kvh);
    cp_async_commit();
  }
  uint32_t qa[HD / 16][4];
  load_q<T, HD>(a, token, head, valid, qa);

  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  float acc[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[n][c] = 0.0f;
  if constexpr (BULK) __syncthreads();  // tile 0's zero rows (short sequences) are visible to every warp
  for (int it = 0; it < ntiles; ++it) {
    const int t0 = it * kTile;
    const int buf = it & 1;
    if constexpr (BULK) {
      // Stage buf ^ 1 was last read in iteration it - 1, before its closing barrier.
      if (it + 1 < ntiles) {
        fence_proxy_async();  // this warp's reads of the stage (generic proxy) before the copies (async proxy)
        rows.issue(it + 1, buf ^ 1, &bars[buf ^ 1]);
      }
      // Use n = it / 2 of this stage's barrier: its phase n. Zero rows of this tile were stored
      // before the last iteration's closing barrier (or the one above for tile 0).
      mbar_wait(&bars[buf], uint32_t(it >> 1) & 1u);
    } else {
      if (it + 1 < ntiles) {
        T* nb = smem + size_t(buf ^ 1) * Smem<HD>::kStageElems;
        load_tile<T, HD, 4>(nb, nb + Smem<HD>::kKElems, kc, vc, bt, t0 + kTile, limit, a.block_size, a.kv_heads, kvh);
      }
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
    }
    const T* ks = smem + size_t(buf) * Smem<HD>::kStageElems;
    const T* vs = ks + Smem<HD>::kKElems;
    if (PVC > 0 && warp_active) {
      constexpr int kBlocks = (PVC > 0 && PVC / 8 < HD / 8) ? PVC / 8 : HD / 8;  // 8-column blocks per group
      const float fresh[2] = {kNegInf, kNegInf};
      // Tile 0's factors (0, 1) make its fold into acc = +0 the state itself: +0 · 0 + oi · 1 = oi,
      // as oi (0 + o) is never -0; so every tile runs the same element step, no select.
      float s[8][4], mn[2], sum[2], fa[2] = {0.0f, 0.0f}, fb[2] = {1.0f, 1.0f};
      uint32_t pw[8][2];
      bool active[2];
      tile_scores<T, HD, KFromSmem<T, HD>, INTERLEAVE>(qa, KFromSmem<T, HD>{ks}, t0, pos, valid, fresh, a.scale, s, pw,
                                                   mn, sum, active);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!active[h]) continue;
        const float lt = fadd(0.0f, sum[h]);  // the tile's state, as the per-part kernel leaves it
        if (it == 0) m[h] = mn[h], l[h] = lt;
        else fold_scalars(m[h], l[h], mn[h], lt, fa[h], fb[h]);
      }
      uint32_t pa[4][4];
      p_frags(pw, pa);
#pragma unroll
      for (int nt = 0; nt < HD / 8; nt += kBlocks) {
        float o[kBlocks][4] = {};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#pragma unroll
          for (int q = 0; q < kBlocks; q += 2) {
            uint32_t b[4];
            v_frags<T, HD>(vs, j, nt + q, b);
            mma16816<T>(o[q], pa[j], b[0], b[1]);
            mma16816<T>(o[q + 1], pa[j], b[2], b[3]);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!active[h]) continue;
#pragma unroll
          for (int q = 0; q < kBlocks; ++q)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float& r = acc[nt + q][2 * h + e];
              const float oi = fadd(0.0f, o[q][2 * h + e]);  // as the per-part kernel stores it
              r = fold_elem(r, oi, fa[h], fb[h]);
            }
        }
      }
    } else if (warp_active) {
      const float fresh[2] = {kNegInf, kNegInf};
      float mn[2], sum[2], o[HD / 8][4];
      bool active[2];
      tile_compute<T, HD>(qa, KFromSmem<T, HD>{ks}, vs, t0, pos, valid, fresh, a.scale, mn, sum, active, o);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!active[h]) continue;
        // The tile's state, exactly as the per-part kernel leaves a one-tile part.
        const float lt = fadd(0.0f, sum[h]);
        if (it == 0) {
          m[h] = mn[h];
          l[h] = lt;
#pragma unroll
          for (int n = 0; n < HD / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) acc[n][2 * h + e] = fadd(0.0f, o[n][2 * h + e]);
        } else {
          float fa, fb;
          fold_scalars(m[h], l[h], mn[h], lt, fa, fb);
#pragma unroll
          for (int n = 0; n < HD / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              acc[n][2 * h + e] = fold_elem(acc[n][2 * h + e], fadd(0.0f, o[n][2 * h + e]), fa, fb);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (valid[h]) store_out<T, HD>(a, token[h], head[h], acc, h, l[h]);
}

// Whole-row items of <= 16 rows (the contract's decode at larger batches; parts of one tile): one
// CTA per (item, kv head), three roles. Two producer warps stream the rows' tiles through a ring
// of S stages (cp.async of 16 bytes, each warp instruction two or more whole rows, the stage's
// barrier getting each producer thread's arrival when its copies have landed; zero-filled past the
// rows). CW consumer warps take the tiles in turn (tile t: warp t % CW), each computing its tile's
// state as the tile kernel does (the tile from m = -inf: mn, sum, P·V, the same words of K and V
// in the same MMAs) into its state slot in shared memory. The folder warp folds the states in tile
// order into a running state in its registers (the fold kernel's step: the merge's fold in the
// merge's order) and stores the rows' outputs. So the bits are the tile kernel + merge's and the
// fold kernel's (cuda_ops_test), with no states through memory and no merge launch; the copies of
// later tiles are in flight while earlier ones are computed, and the fold chain is one warp's
// (s23_d: consumers folding in turn into shared memory waited mostly on each other).
// (Bulk copies of one row each, issued one lane at a time, made the producers the limit: s23_a,
// 8B at 32 sequences 100.8 us a layer; so did slot arithmetic per copy: s23_c.)
// A state slot holds each consumer lane's fragment elements (P·V's (n, c) at [(4n + c) * 32 +
// lane], then mn and sum of its rows gid, gid + 8): the folder's lanes hold the same rows.
// TR (launches whose items all have <= 8 rows: every decode step on Qwen3): the consumers compute
// transposed tiles (tile_compute_tr, half the MMAs) and the folder folds them (ring_fold_tr); the
// same arithmetic per element, so the same bits.
// TR (transposed tiles, tile_compute_tr): P·V's (mt, e) at [(4 mt + e) * 32 + lane], then mn and sum
// of rows 2 tig, 2 tig + 1.
template <int HD, bool TR = false>
struct RingState {
  static constexpr int kAcc = (TR ? HD / 4 : HD / 2) * 32;  // floats: HD / 16 (TR) or HD / 8 fragments of 4 a lane
  static constexpr int kFloats = kAcc + 4 * 32;
};
template <typename T, int HD, int CW, int S, bool TR = false>
struct RingLayout {
  // CW <= S: a consumer never waits on a stage's phase while the phase before is still pending
  // (a parity wait cannot tell those apart).
  static_assert(CW <= S, "a consumer may not run a ring ahead of the stage it waits on");
  static constexpr int kProducers = 2;  // each copies the K and V rows of 32 keys
  static constexpr int kFolder = CW;    // warp index of the folder; the producers follow it
  static constexpr int kThreads = (CW + 1 + kProducers) * 32;
  static constexpr size_t kStateOffset = size_t(S) * Smem<HD>::kStageElems * sizeof(T);
  static constexpr size_t kBarOffset = kStateOffset + size_t(CW) * RingState<HD, TR>::kFloats * sizeof(float);
  static constexpr size_t kBytes = kBarOffset + size_t(2 * S + 2 * CW) * sizeof(uint64_t);
};
// The ring's folder on transposed states: the same step as the plain folder's per row and element
// (tile 0 starts the state, a later tile folds into rows with keys in it), then out = acc / l.
template <typename T, int HD, int CW>
__device__ __forceinline__ void ring_fold_tr(const AttnArgs& a, const float* states, uint64_t* state_full,
                                             uint64_t* state_empty, int ntiles, const int (&pos)[2],
                                             const int (&token)[2], const int (&head)[2], const bool (&valid)[2]) {
  using St = RingState<HD, true>;
  const int lane = threadIdx.x & 31;
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f}, acc[HD / 16][4];
  for (int t = 0; t < ntiles; ++t) {
    const int c = t % CW;
    const float* st = states + size_t(c) * St::kFloats;
    mbar_wait(&state_full[c], uint32_t((t / CW) & 1));
    float fa[2] = {0.0f, 0.0f}, fb[2] = {0.0f, 0.0f};
    bool active[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      active[r] = valid[r] && t * kTile <= pos[r];
      const float mn = st[St::kAcc + r * 32 + lane], lt = fadd(0.0f, st[St::kAcc + 64 + r * 32 + lane]);
      if (t == 0) m[r] = mn, l[r] = lt;
      else if (active[r]) fold_scalars(m[r], l[r], mn, lt, fa[r], fb[r]);
    }
#pragma unroll
    for (int mt = 0; mt < HD / 16; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float o = fadd(0.0f, st[(4 * mt + e) * 32 + lane]);
        float& r = acc[mt][e];
        if (t == 0) r = o;
        else if (active[e & 1]) r = fold_elem(r, o, fa[e & 1], fb[e & 1]);
      }
    mbar_arrive(&state_empty[c]);  // this lane's reads of the slot are done
  }
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (valid[r]) store_out_tr<T, HD>(a, token[r], head[r], acc, r, l[r]);
}
template <typename T, int HD, int CW, int S, int MINB, bool TR>
__global__ void __launch_bounds__(RingLayout<T, HD, CW, S, TR>::kThreads, MINB)
    attention_ring_kernel(AttnArgs a, int item_offset) {
  using L = RingLayout<T, HD, CW, S, TR>;
  using St = RingState<HD, TR>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* stages = reinterpret_cast<T*>(smem_raw);
  float* states = reinterpret_cast<float*>(smem_raw + L::kStateOffset);    // [CW] slots, one a consumer
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw + L::kBarOffset);  // [S]: a stage's copies landed
  uint64_t* empty = full + S;                                               // [S]: its consumer has read it
  uint64_t* state_full = empty + S;                                         // [CW]: a slot holds a state
  uint64_t* state_empty = state_full + CW;                                  // [CW]: the folder has read it
  // Step inputs first (read_step_inputs_before_pdl in common.cuh): they overlap the kernel before.
  const AttnItem item = a.items[item_offset + blockIdx.x];
  if (item.count == 0) return;  // graph padding (uniform over the CTA: before any barrier)
  const int kvh = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t* bt = a.block_tables + item.bt_offset;
  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  const int limit = maxpos + 1, ntiles = maxpos / kTile + 1;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], L::kProducers * 32);  // every producer thread, once its copies have landed
      mbar_init(&empty[s], 32);                 // every lane of the consumer, after its reads
    }
    for (int c = 0; c < CW; ++c) {
      mbar_init(&state_full[c], 32);   // every lane of the consumer, after its state's stores
      mbar_init(&state_empty[c], 32);  // every lane of the folder, after its reads
    }
  }
  __syncthreads();  // the barriers are initialized before anyone uses them
  if (warp > L::kFolder) {
    // Producer p: K and V rows of keys 32p .. 32p + 31 of every tile, tile t into stage t % S once
    // the stage's previous tile (t - S) is read. Lane l finds the cache offset of key 32p + l once
    // a tile (block ids of the next tile read ahead); a warp instruction then copies 32 / (HD / 8)
    // whole rows (lane: row lane / (HD / 8), 16-byte chunk lane % (HD / 8)), each lane taking its
    // row's offset by a shuffle.
    constexpr int kChunks = HD / 8, kRowsPer = 32 / kChunks;
    const int sub = lane / kChunks, chunk = lane % kChunks, key0 = (warp - L::kFolder - 1) * 32;
    const T* kc = static_cast<const T*>(a.k_cache) + int64_t(kvh) * HD + chunk * 8;
    const T* vc = static_cast<const T*>(a.v_cache) + int64_t(kvh) * HD + chunk * 8;
    const int64_t slot_stride = int64_t(a.kv_heads) * HD;
    TileBlocks blocks(bt, 0, min(kTile, limit), a.block_size);
    pdl_begin();  // the cache rows of this step are written by the kernels before this one
    for (int t = 0; t < ntiles; ++t) {
      const int s = t % S, t0 = t * kTile;
      const int64_t mine = blocks.slot(t0 + key0 + lane) * slot_stride;  // every lane (a shuffle)
      const bool mine_in = t0 + key0 + lane < limit;  // past the rows: zeros, never read from the cache
      if (t + 1 < ntiles) blocks = TileBlocks(bt, t0 + kTile, min(t0 + 2 * kTile, limit), a.block_size);
      if (t >= S) mbar_wait(&empty[s], uint32_t((t / S - 1) & 1));
      T* ks = stages + size_t(s) * Smem<HD>::kStageElems + (key0 + sub) * Smem<HD>::kKStride + chunk * 8;
      T* vs = stages + size_t(s) * Smem<HD>::kStageElems + Smem<HD>::kKElems + (key0 + sub) * Smem<HD>::kVStride +
              chunk * 8;
#pragma unroll
      for (int i = 0; i < 32 / kRowsPer; ++i) {
        const int r = i * kRowsPer + sub;
        const int64_t off = __shfl_sync(0xffffffffu, mine, r);
        const bool in = __shfl_sync(0xffffffffu, mine_in, r);
        cp_async16_zfill(ks + i * kRowsPer * Smem<HD>::kKStride, kc + (in ? off : 0), in ? 16u : 0u);
        cp_async16_zfill(vs + i * kRowsPer * Smem<HD>::kVStride, vc + (in ? off : 0), in ? 16u : 0u);
      }
      cp_async_arrive_on(&full[s]);
    }
    return;
  }
  int pos[2], token[2], head[2];
  bool valid[2];
  row_setup<HD>(a, item, kvh, pos, token, head, valid, 0);
  if constexpr (TR) {
    // Items of <= 8 rows (the launch's ring_rows): rows 2 tig, 2 tig + 1 of this thread hold the
    // outputs (row_setup's rows gid give q's B fragments).
    int tpos[2], ttoken[2], thead[2];
    bool tvalid[2];
    row_setup_tr(a, item, kvh, tpos, ttoken, thead, tvalid);
    pdl_begin();  // q is written by the kernel before this one
    if (warp == L::kFolder) {
      ring_fold_tr<T, HD, CW>(a, states, state_full, state_empty, ntiles, tpos, ttoken, thead, tvalid);
      return;
    }
    uint32_t qa[HD / 16][4], qb[HD / 16][2];
    load_q<T, HD>(a, token, head, valid, qa);
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) qb[kk][0] = qa[kk][0], qb[kk][1] = qa[kk][2];  // row gid's words
    float* st = states + size_t(warp) * St::kFloats;
    for (int t = warp; t < ntiles; t += CW) {
      const int s = t % S;
      mbar_wait(&full[s], uint32_t((t / S) & 1));
      const T* ks = stages + size_t(s) * Smem<HD>::kStageElems;
      float mn[2], sum[2], o[HD / 16][4];
      bool active[2];
      tile_compute_tr<T, HD>(qb, KFromSmem<T, HD>{ks}, ks + Smem<HD>::kKElems, t * kTile, tpos, tvalid, a.scale, mn,
                             sum, active, o);
      mbar_arrive(&empty[s]);                                                   // this lane's reads of the stage
      if (t >= CW) mbar_wait(&state_empty[warp], uint32_t((t / CW - 1) & 1));  // the folder has read tile t - CW
#pragma unroll
      for (int mt = 0; mt < HD / 16; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) st[(4 * mt + e) * 32 + lane] = o[mt][e];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        st[St::kAcc + c * 32 + lane] = mn[c];
        st[St::kAcc + 64 + c * 32 + lane] = sum[c];
      }
      mbar_arrive(&state_full[warp]);  // this lane's part of the state is stored
    }
    return;
  }
  pdl_begin();  // q is written by the kernel before this one
  bool any_row[2];  // uniform: halves without a row (a decode item of a group < 8) skip the states
#pragma unroll
  for (int h = 0; h < 2; ++h) any_row[h] = __any_sync(0xffffffffu, valid[h]);
  if (warp == L::kFolder) {
    // The fold kernel's step per tile, in tile order: tile 0 starts the state, a later tile folds
    // into it (rows with keys in it); then out = acc / l.
    float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f}, acc[HD / 8][4];
    for (int t = 0; t < ntiles; ++t) {
      const int c = t % CW;
      const float* st = states + size_t(c) * St::kFloats;
      mbar_wait(&state_full[c], uint32_t((t / CW) & 1));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!any_row[h]) continue;
        const bool active = valid[h] && t * kTile <= pos[h];
        const float mn = st[St::kAcc + h * 32 + lane], lt = fadd(0.0f, st[St::kAcc + 64 + h * 32 + lane]);
        float fa = 0.0f, fb = 0.0f;
        if (t == 0) m[h] = mn, l[h] = lt;
        else if (active) fold_scalars(m[h], l[h], mn, lt, fa, fb);
#pragma unroll
        for (int n = 0; n < HD / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float o = fadd(0.0f, st[(4 * n + 2 * h + e) * 32 + lane]);
            float& r = acc[n][2 * h + e];
            if (t == 0) r = o;
            else if (active) r = fold_elem(r, o, fa, fb);
          }
      }
      mbar_arrive(&state_empty[c]);  // this lane's reads of the slot are done
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (valid[h]) store_out<T, HD>(a, token[h], head[h], acc, h, l[h]);
    return;
  }
  uint32_t qa[HD / 16][4];
  load_q<T, HD>(a, token, head, valid, qa);
  const float fresh[2] = {kNegInf, kNegInf};
  float* st = states + size_t(warp) * St::kFloats;
  for (int t = warp; t < ntiles; t += CW) {
    const int s = t % S;
    mbar_wait(&full[s], uint32_t((t / S) & 1));
    const T* ks = stages + size_t(s) * Smem<HD>::kStageElems;
    float mn[2], sum[2], o[HD / 8][4];
    bool active[2];
    tile_compute<T, HD>(qa, KFromSmem<T, HD>{ks}, ks + Smem<HD>::kKElems, t * kTile, pos, valid, fresh, a.scale, mn,
                        sum, active, o);
    mbar_arrive(&empty[s]);                                                   // this lane's reads of the stage
    if (t >= CW) mbar_wait(&state_empty[warp], uint32_t((t / CW - 1) & 1));  // the folder has read tile t - CW
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!any_row[h]) continue;
      st[St::kAcc + h * 32 + lane] = mn[h];
      st[St::kAcc + 64 + h * 32 + lane] = sum[h];
#pragma unroll
      for (int n = 0; n < HD / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) st[(4 * n + 2 * h + e) * 32 + lane] = o[n][2 * h + e];
    }
    mbar_arrive(&state_full[warp]);  // this lane's part of the state is stored
  }
}
// The ring kernel's shapes (consumer warps, stages, CTAs per SM), one per variant; same bits each.
constexpr int kRingMaxHeadDim = 128;  // a stage of head_dim 256 is 68 KB: too few fit
constexpr int kRingVariants = 5;
struct RingKernel {
  void (*fn)(AttnArgs, int);
  size_t smem;
  int threads;
};
template <typename T, int HD, int CW, int S, int MINB, bool TR>
RingKernel ring_of() {
  return {attention_ring_kernel<T, HD, CW, S, MINB, TR>, RingLayout<T, HD, CW, S, TR>::kBytes,
          RingLayout<T, HD, CW, S, TR>::kThreads};
}
template <typename T, int HD, bool TR>
RingKernel ring_kernel_of(int variant) {
  switch (variant) {
    case 1: return ring_of<T, HD, 4, 5, 1, TR>();  // 4 consumers, 5 stages
    case 2: return ring_of<T, HD, 2, 2, 2, TR>();  // 2 consumers, 2 stages, 2 CTAs per SM
    case 3: return ring_of<T, HD, 3, 4, 1, TR>();  // 3 consumers, 4 stages
    case 4: return ring_of<T, HD, 5, 5, 1, TR>();  // 5 consumers, 5 stages (218 KB at head_dim 128)
    default: return ring_of<T, HD, 4, 4, 1, TR>();  // 4 consumers, 4 stages
  }
}
// tr: the transposed tiles (items of <= 8 rows only).
template <typename T, int HD>
RingKernel ring_kernel(int variant, bool tr) {
  return tr ? ring_kernel_of<T, HD, true>(variant) : ring_kernel_of<T, HD, false>(variant);
}
// Whether the ring kernel's launches whose items all have <= 8 rows take the transposed tiles
// (same bits): -1 = VERBATIM_ATTN_RING_TR (default 1; 0 = the plain tiles), else
// set_attention_ring_transposed (tests). H200 s27_a, 8B decode ms at 8 / 32 / 64 sequences, two
// alternated rounds: plain 5.165-5.169 / 6.332-6.341 / 8.608-8.620, transposed 5.027-5.046 /
// 6.115-6.116 / 8.334-8.340; the kernel (ncu) at 16 / 32 / 64: 27.8 / 46.0 / 85.6 us -> 24.8 / 39.6 /
// 76.2.
std::atomic<int> g_ring_tr{-1};
bool ring_transposed() {
  const int v = g_ring_tr.load(std::memory_order_relaxed);
  if (v >= 0) return v == 1;
  static const bool env = env_int("VERBATIM_ATTN_RING_TR", 1) != 0;
  return env;
}
// -1: VERBATIM_ATTN_RING_VARIANT, else set_attention_ring_variant (tests); either may say auto (-1).
std::atomic<int> g_ring_variant{-1};
// Auto: four consumers and five stages at one CTA per SM, or two and two at two per SM, whichever
// has the cheaper waves; a wave of the second costs ~1.85 of the first's (ncu, 8B at 1k context:
// 28.5 us for 128 CTAs, 51.2 for 256). H200 8B ms/step, 4x5 / 2x2 / per-tile kernels + merge:
// 16 sequences 5.475 / 6.187 / 6.002 and 32 6.614 / 6.559 / 7.169 (s23_e); 40 8.067 / 8.627 / 8.195,
// 48 7.957 / 8.469 / 8.377, 56 8.804 / 8.623 / 9.105 (s23_h).
int ring_variant(int ctas) {
  int v = g_ring_variant.load(std::memory_order_relaxed);
  if (v < 0) {
    static const int env = [] {
      const int m = env_int("VERBATIM_ATTN_RING_VARIANT", -1);
      return m >= 0 && m < kRingVariants ? m : -1;
    }();
    v = env;
  }
  if (v >= 0) return v;
  const int w1 = ceil_div(ctas, sm_count()), w2 = ceil_div(ctas, 2 * sm_count());
  return 20 * w1 <= 37 * w2 ? 1 : 2;
}

// One warp per (multi-part token, head): merge_row.
template <typename T, int HD>
__global__ void merge_kernel(AttnArgs a, const int32_t* __restrict__ tokens, const int32_t* __restrict__ num_parts,
                             int count) {
  const int w = blockIdx.x * 4 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (w >= count * a.heads) return;
  const int i = w / a.heads, head = w % a.heads;
  // Step inputs before the wait (read_step_inputs_before_pdl, common.cuh); the states after it.
  const int token = tokens[i];
  const int parts = num_parts[i];
  if (parts <= 1) return;  // graph padding / single-part tokens: finished by the attention kernel
  const int base = a.state_base[token];
  pdl_begin();  // the states are written by the attention kernel before this one
  merge_row<T, HD>(a, token, base, head, parts, lane);
}

template <typename T>
__global__ void kv_write_kernel(const T* __restrict__ k, const T* __restrict__ v, int64_t ld, int64_t T_, int kv_heads,
                                int head_dim, const int32_t* __restrict__ slots, T* __restrict__ kc,
                                T* __restrict__ vc) {
  const int row_chunks = kv_heads * head_dim / 8;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= T_ * row_chunks) return;
  const int64_t t = idx / row_chunks;
  const int c = int(idx % row_chunks);
  const int64_t dst = int64_t(slots[t]) * kv_heads * head_dim + c * 8;
  *reinterpret_cast<uint4*>(kc + dst) = *reinterpret_cast<const uint4*>(k + t * ld + c * 8);
  *reinterpret_cast<uint4*>(vc + dst) = *reinterpret_cast<const uint4*>(v + t * ld + c * 8);
}

template <typename T, int HD>
size_t stage_bytes() { return Smem<HD>::kStageElems * sizeof(T); }  // K and V of one tile

template <typename T, int HD>
size_t fold_smem_bytes() { return 2 * stage_bytes<T, HD>() + 2 * sizeof(uint64_t); }  // two stages, their barriers

template <typename T, int HD>
void prepare_hd() {
  // Shared memory: two stages of K and V tiles (the per-part kernel uses one stage for one-tile parts).
  VB_CUDA(cudaFuncSetAttribute(attention_part_kernel<T, HD, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(2 * stage_bytes<T, HD>())));
  VB_CUDA(cudaFuncSetAttribute(attention_part_kernel<T, HD, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(2 * stage_bytes<T, HD>())));
  if constexpr (HD >= 64)
    VB_CUDA(cudaFuncSetAttribute(attention_split_kernel<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(split_kernel_smem<T, HD>())));
  for (auto* k : {attention_fold_kernel<T, HD, 0, false>, attention_fold_kernel<T, HD, 16, false>,
                  attention_fold_kernel<T, HD, 32, true>, attention_fold_kernel<T, HD, 32, true, true>})
    VB_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(fold_smem_bytes<T, HD>())));
  if constexpr (HD <= kRingMaxHeadDim) {
    for (int v = 0; v < kRingVariants; ++v)
      for (bool tr : {false, true}) {
        const RingKernel k = ring_kernel<T, HD>(v, tr);
        VB_CUDA(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(k.smem)));
      }
  }
}

// Launches of each attention kernel (host side, counted as launched or captured), so a test that
// compares two paths can prove both ran (a dispatch that fell back would pass it vacuously).
std::atomic<uint64_t> g_launches[int(AttnKernel::kCount)];
void count_launch(AttnKernel k) { g_launches[int(k)].fetch_add(1, std::memory_order_relaxed); }
// Warps of the per-part kernel for items of <= 16 rows: 0 = by CTA count, 1 or 4 = forced (tests).
std::atomic<int> g_small_warps{0};
// A same-bits switch: the value a test set (>= 0), else the environment's (read once by the caller).
int switch_value(const std::atomic<int>& set, int env_value) {
  const int v = set.load(std::memory_order_relaxed);
  return v >= 0 ? v : env_value;
}
// Whether one-warp items of one-tile parts run attention_tile_kernel (K from the cache into
// registers) instead of the one-warp per-part kernel: -1 = VERBATIM_ATTN_TILE_KERNEL (default 1),
// 0 = the per-part kernel, 1 = the tile kernel with K loaded before its MMAs, 2 = the tile kernel
// with K read as used (set_attention_tile_kernel for tests). Same bits every way.
std::atomic<int> g_tile_kernel{-1};
int tile_kernel_mode() {
  static const int env = [] {
    const char* e = std::getenv("VERBATIM_ATTN_TILE_KERNEL");
    const std::string s = e ? e : "";
    return s == "0" ? 0 : s == "2" ? 2 : 1;
  }();
  return switch_value(g_tile_kernel, env);
}
// Four-warp CTAs of one-tile parts (decode at 1-4 sequences): 1 = attention_split_kernel (the
// tile's keys and P·V columns split over the warps; four-warp CTAs up to 5 an SM, see
// launch_attention), 0 = attention_part_kernel<4> (warp 0 computes; up to 2 an SM, else the tile
// kernel); -1 = VERBATIM_ATTN_SPLIT_KEYS (default 1). Same bits every way. H100, s37_a, batch 1,
// 3 rounds alternated, ms a step: 0.6B 1.069-1.073 against 1.119-1.125 (-4.6%), 8B 6.025-6.063
// against 6.074-6.110 (-0.6%).
std::atomic<int> g_split_keys{-1};
bool split_keys_mode() {
  static const int env = env_int("VERBATIM_ATTN_SPLIT_KEYS", 1);
  return switch_value(g_split_keys, env) == 1;
}
// The fold kernel's variant (same bits every way): -1 = VERBATIM_ATTN_FOLD_PV (default 3), else
// set by set_attention_fold_pv (tests). 0: whole-tile P·V, cp.async loads; 1: P·V folded 16
// columns at a time, cp.async (session 10); 2: 32 columns, bulk row copies. H200 session 11
// (s11_attn, 2,048-token prefill, ms): 8B 112.7 (1) against 111.2 (2), the kernel 573 -> 533 us a
// layer; 0.6B 21.5 -> 20.7. Bulk copies with 16 columns gave 111.6, cp.async with 32 112.1.
// 3 (the default): 2 with the row halves' softmax interleaved; s13_attn, 2,048-token prefill: 8B
// 88.0 / 88.1 against 89.7 / 89.7 ms, 0.6B 19.6 against 20.5; the kernel 533 -> 484 us a layer.
std::atomic<int> g_fold_pv{-1};
int fold_pv_mode() {
  static const int env = [] {
    const int m = env_int("VERBATIM_ATTN_FOLD_PV", 3);
    return m >= 0 && m <= 3 ? m : 3;
  }();
  return switch_value(g_fold_pv, env);
}
template <typename T, int HD>
auto fold_kernel(int mode) {
  switch (mode) {
    case 0: return attention_fold_kernel<T, HD, 0, false>;
    case 1: return attention_fold_kernel<T, HD, 16, false>;
    case 2: return attention_fold_kernel<T, HD, 32, true>;
    default: return attention_fold_kernel<T, HD, 32, true, true>;
  }
}

template <typename T, int HD>
void launch_attention(const AttnArgs& a, const AttnLaunch& g, cudaStream_t stream) {
  const size_t stages = a.part_tokens > kTile ? 2 : 1;
  if (g.small_end > g.small_begin) {
    // Items of <= 16 rows: the one-warp kernel, or the four-warp kernel for parts of several
    // tiles (each CTA streams them) or when its CTAs fit the GPU at 2 per SM (its registers allow
    // no more). In the four-warp kernel warp 0 holds every row (the others have none, and rows
    // never interact), so the arithmetic is the one-warp kernel's; four warps only issue the tile
    // loads sooner. tests/cuda_ops_test (AttentionMergeOfManyPartsIsTheFold) checks both give
    // the same bits. H200, s2 call 2 (0.6B, 1k context): one-tile parts at batch 64 (8,704 CTAs)
    // 6.5 ms/step with one warp vs 9.3 with four; 1,024-token parts (fast mode) the reverse.
    // Four-warp CTAs of one-tile parts take the split kernel (split_keys_mode), whose warps share
    // the tile's work: 168 registers, 3 CTAs an SM, so it is picked up to 5 CTAs an SM (two
    // waves at most). H100, s37_b, forced against the tile kernel, ms a step at 2 / 4 sequences
    // (~4.1-4.4 CTAs an SM at 4): 0.6B 1.125-1.132 against 1.209-1.226, 1.326-1.332 against
    // 1.333-1.352; 8B 5.996-6.017 against 6.121-6.151, 6.254-6.270 against 6.310-6.332.
    const int ctas = (g.small_end - g.small_begin) * a.kv_heads;
    const int forced = g_small_warps.load(std::memory_order_relaxed);
    bool split_ok = false;
    if constexpr (HD >= 64) split_ok = a.part_tokens == kTile && split_keys_mode();
    const int four_max = (split_ok ? 5 : 2) * sm_count();
    const bool four = forced == 4 || (forced == 0 && (a.part_tokens > kTile || ctas <= four_max));
    const int tile_mode = tile_kernel_mode();
    const bool split = four && split_ok;
    if (split) {
      if constexpr (HD >= 64)
        pdl_launch(attention_split_kernel<T, HD>, dim3(g.small_end - g.small_begin, a.kv_heads), dim3(kThreads),
                   split_kernel_smem<T, HD>(), stream, a, g.small_begin);
      count_launch(AttnKernel::Split);
    } else if (four) {
      pdl_launch(attention_part_kernel<T, HD, 4>, dim3(g.small_end - g.small_begin, a.kv_heads), dim3(kThreads),
                 stages * stage_bytes<T, HD>(), stream, a, g.small_begin);
      count_launch(AttnKernel::PerPart4);
    } else if (a.part_tokens == kTile && tile_mode != 0) {
      pdl_launch(tile_mode == 2 ? attention_tile_kernel<T, HD, false> : attention_tile_kernel<T, HD, true>,
                 dim3(g.small_end - g.small_begin, a.kv_heads), dim3(32), tile_kernel_smem<T, HD>(), stream, a,
                 g.small_begin);
      count_launch(AttnKernel::Tile);
    } else {
      pdl_launch(attention_part_kernel<T, HD, 1>, dim3(g.small_end - g.small_begin, a.kv_heads), dim3(32),
                 stages * stage_bytes<T, HD>(), stream, a, g.small_begin);
      count_launch(AttnKernel::PerPart1);
    }
    VB_CUDA_LAUNCHED();
  }
  if (g.large_end > g.large_begin) {
    pdl_launch(attention_part_kernel<T, HD, 4>, dim3(g.large_end - g.large_begin, a.kv_heads), dim3(kThreads),
               stages * stage_bytes<T, HD>(), stream, a, g.large_begin);
    count_launch(AttnKernel::PerPart4);
    VB_CUDA_LAUNCHED();
  }
  if (g.fold_end > g.fold_begin) {
    pdl_launch(fold_kernel<T, HD>(fold_pv_mode()), dim3(g.fold_end - g.fold_begin, a.kv_heads), dim3(kThreads),
               fold_smem_bytes<T, HD>(), stream, a, g.fold_begin);
    count_launch(AttnKernel::Fold);
    VB_CUDA_LAUNCHED();
  }
  if (g.ring_end > g.ring_begin) {
    if constexpr (HD <= kRingMaxHeadDim) {
      const RingKernel k = ring_kernel<T, HD>(ring_variant((g.ring_end - g.ring_begin) * a.kv_heads),
                                              g.ring_rows <= 8 && ring_transposed());
      pdl_launch(k.fn, dim3(g.ring_end - g.ring_begin, a.kv_heads), dim3(k.threads), k.smem, stream, a,
                 g.ring_begin);
      count_launch(AttnKernel::Ring);
      VB_CUDA_LAUNCHED();
    } else {
      throw Error("cuda attention: the ring kernel takes head_dim <= 128");
    }
  }
}

template <typename T>
void dispatch_hd(const AttnArgs& a, const AttnLaunch& g, cudaStream_t stream) {
  switch (a.head_dim) {
    case 16: return launch_attention<T, 16>(a, g, stream);
    case 32: return launch_attention<T, 32>(a, g, stream);
    case 64: return launch_attention<T, 64>(a, g, stream);
    case 128: return launch_attention<T, 128>(a, g, stream);
    case 256: return launch_attention<T, 256>(a, g, stream);
    default: throw Error("cuda attention: head_dim " + std::to_string(a.head_dim) + " is not 16, 32, 64, 128 or 256");
  }
}

template <typename T, int HD>
void launch_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* parts, int count, cudaStream_t stream) {
  const int warps = count * a.heads;
  pdl_launch(merge_kernel<T, HD>, dim3(ceil_div(warps, 4)), dim3(128), 0, stream, a, tokens, parts, count);
  VB_CUDA_LAUNCHED();
}

template <typename T>
void dispatch_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* parts, int count, cudaStream_t stream) {
  switch (a.head_dim) {
    case 16: return launch_merge<T, 16>(a, tokens, parts, count, stream);
    case 32: return launch_merge<T, 32>(a, tokens, parts, count, stream);
    case 64: return launch_merge<T, 64>(a, tokens, parts, count, stream);
    case 128: return launch_merge<T, 128>(a, tokens, parts, count, stream);
    case 256: return launch_merge<T, 256>(a, tokens, parts, count, stream);
    default: throw Error("cuda attention: unsupported head_dim " + std::to_string(a.head_dim));
  }
}

}  // namespace

int attention_query_tile(int heads_per_kv) { return std::max(1, kRows / heads_per_kv); }
size_t attention_state_floats(int head_dim) { return size_t(head_dim) + 4; }

AttnPlan plan_attention(const int32_t* positions, const int32_t* token_seq, const int32_t* seq_bt_offset, int T,
                        int heads_per_kv, int part_tokens, int max_states, bool allow_fold, bool ring) {
  if (heads_per_kv > kRows) throw Error("cuda attention: more than 64 query heads per kv head");
  if (part_tokens <= 0 || part_tokens % kTile) throw Error("cuda attention: part size must be a multiple of 64");
  if ((allow_fold || ring) && part_tokens != kTile)
    throw Error("cuda attention: folding in the CTA needs parts of one tile");
  AttnPlan plan;
  plan.state_base.assign(size_t(T), -1);
  const int qtile = attention_query_tile(heads_per_kv);
  std::vector<AttnItem> small, large, fold, ring_items;
  int ring_rows = 0;  // the most rows of a ring item in the group
  AttnLaunch cur;
  int states = 0;
  auto last_pos = [&](const AttnItem& it) {
    int m = 0;
    for (int i = it.first; i < it.first + it.count; ++i) m = std::max(m, positions[i]);
    return m;
  };
  auto close_group = [&] {
    // Fold CTAs longest first (most key tiles): the last to launch are short, so the GPU does not
    // wait on a few long ones at the end (a prompt's later tokens see more keys). CTA order only:
    // each item's arithmetic is its own.
    // VERBATIM_ATTN_LONGEST_FIRST=0: the plan's order (for A/B timing).
    static const bool longest_first = [] {
      const char* e = std::getenv("VERBATIM_ATTN_LONGEST_FIRST");
      return !(e && std::string(e) == "0");
    }();
    if (longest_first)
      std::stable_sort(fold.begin(), fold.end(),
                       [&](const AttnItem& x, const AttnItem& y) { return last_pos(x) / kTile > last_pos(y) / kTile; });
    cur.small_begin = int(plan.items.size());
    plan.items.insert(plan.items.end(), small.begin(), small.end());
    cur.small_end = cur.large_begin = int(plan.items.size());
    plan.items.insert(plan.items.end(), large.begin(), large.end());
    cur.large_end = cur.fold_begin = int(plan.items.size());
    plan.items.insert(plan.items.end(), fold.begin(), fold.end());
    cur.fold_end = cur.ring_begin = int(plan.items.size());
    plan.items.insert(plan.items.end(), ring_items.begin(), ring_items.end());
    cur.ring_end = int(plan.items.size());
    cur.ring_rows = ring_rows;
    cur.merge_end = int(plan.merge_tokens.size());
    if (cur.ring_end > cur.small_begin) plan.launches.push_back(cur);
    small.clear();
    large.clear();
    fold.clear();
    ring_items.clear();
    ring_rows = 0;
    cur = AttnLaunch{};
    cur.merge_begin = int(plan.merge_tokens.size());
    states = 0;
  };
  int t = 0;
  while (t < T) {
    // A query tile: up to qtile consecutive tokens of one sequence.
    int end = t + 1;
    while (end < T && end - t < qtile && token_seq[end] == token_seq[t]) ++end;
    const int rows = (end - t) * heads_per_kv;
    int maxpos = 0;
    for (int i = t; i < end; ++i) maxpos = std::max(maxpos, positions[i]);
    const int bt = seq_bt_offset[token_seq[t]];
    if (allow_fold && rows > 16) {
      fold.push_back(AttnItem{t, end - t, -1, bt});  // finished in its CTA: no states
    } else if (ring && rows <= 16) {
      ring_items.push_back(AttnItem{t, end - t, -1, bt});  // finished in its CTA: no states
      ring_rows = std::max(ring_rows, rows);
    } else {
      int tile_states = 0;
      for (int i = t; i < end; ++i) {
        const int parts = positions[i] / part_tokens + 1;
        if (parts > 1) tile_states += parts;
      }
      if (tile_states > max_states) throw Error("cuda attention: workspace too small for one query tile");
      if (states + tile_states > max_states) close_group();
      for (int i = t; i < end; ++i) {
        const int parts = positions[i] / part_tokens + 1;
        if (parts > 1) {
          plan.state_base[size_t(i)] = states;
          states += parts;
          plan.merge_tokens.push_back(i);
          plan.merge_parts.push_back(parts);
        }
      }
      plan.max_states = std::max(plan.max_states, states);
      for (int p = 0; p <= maxpos / part_tokens; ++p) (rows <= 16 ? small : large).push_back(AttnItem{t, end - t, p, bt});
    }
    t = end;
  }
  close_group();
  return plan;
}

void attention_prepare() {
  // Once per device: a function attribute is set in the current device's context only (tensor
  // parallelism runs one rank per device, each on its own thread).
  static std::atomic<uint64_t> done{0};
  int dev = 0;
  VB_CUDA(cudaGetDevice(&dev));
  const uint64_t bit = uint64_t(1) << (dev & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  for (auto* f : {&prepare_hd<bf16, 16>, &prepare_hd<bf16, 32>, &prepare_hd<bf16, 64>, &prepare_hd<bf16, 128>,
                  &prepare_hd<bf16, 256>, &prepare_hd<f16, 16>, &prepare_hd<f16, 32>, &prepare_hd<f16, 64>,
                  &prepare_hd<f16, 128>, &prepare_hd<f16, 256>})
    (*f)();
  (void)sm_count();
  // VERBATIM_ATTN_SMALL_WARPS=1|4 forces the small-item kernel (diagnosis; same bits either way).
  if (const char* e = std::getenv("VERBATIM_ATTN_SMALL_WARPS")) set_attention_small_item_warps(std::atoi(e));
  done.fetch_or(bit, std::memory_order_acq_rel);
}

void set_attention_tile_kernel(int mode) {
  if (mode < -1 || mode > 2) throw Error("cuda attention: tile kernel mode must be -1, 0, 1 or 2");
  g_tile_kernel.store(mode, std::memory_order_relaxed);
}

bool attention_ring_ok(int head_dim) { return head_dim <= kRingMaxHeadDim; }

void set_attention_ring_variant(int variant) {
  if (variant < -1 || variant >= kRingVariants)
    throw Error("cuda attention: ring variant must be -1 to " + std::to_string(kRingVariants - 1));
  g_ring_variant.store(variant, std::memory_order_relaxed);
}

void set_attention_ring_transposed(int mode) {
  if (mode < -1 || mode > 1) throw Error("cuda attention: ring transposed mode must be -1, 0 or 1");
  g_ring_tr.store(mode, std::memory_order_relaxed);
}

void set_attention_fold_pv(int mode) {
  if (mode < -1 || mode > 3) throw Error("cuda attention: fold kernel mode must be -1 to 3");
  g_fold_pv.store(mode, std::memory_order_relaxed);
}

void set_attention_split_keys(int mode) {
  if (mode < -1 || mode > 1) throw Error("cuda attention: split-keys mode must be -1, 0 or 1");
  g_split_keys.store(mode, std::memory_order_relaxed);
}

uint64_t attention_launches(AttnKernel k) { return g_launches[int(k)].load(std::memory_order_relaxed); }

void set_attention_small_item_warps(int warps) {
  if (warps != 0 && warps != 1 && warps != 4) throw Error("cuda attention: small-item warps must be 0, 1 or 4");
  g_small_warps.store(warps, std::memory_order_relaxed);
}

void attention(const AttnArgs& a, const AttnLaunch& g, DType t, cudaStream_t stream) {
  attention_prepare();
  const PdlScope pdl(pdl_for_attention());
  if (t == DType::BF16) dispatch_hd<bf16>(a, g, stream);
  else if (t == DType::F16) dispatch_hd<f16>(a, g, stream);
  else throw Error("cuda attention: activations must be bf16 or fp16");
}

void attention_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* num_parts, int count, DType t,
                     cudaStream_t stream) {
  if (count <= 0 || a.merge_counters) return;  // counters: merged in the attention kernels
  const PdlScope pdl(pdl_for_attention());
  if (t == DType::BF16) dispatch_merge<bf16>(a, tokens, num_parts, count, stream);
  else dispatch_merge<f16>(a, tokens, num_parts, count, stream);
}

void kv_write(const void* k, const void* v, int64_t ld, int64_t T, int kv_heads, int head_dim, const int32_t* slots,
              void* k_cache, void* v_cache, DType t, cudaStream_t stream) {
  if (T <= 0) return;
  if ((kv_heads * head_dim) % 8 || ld % 8) throw Error("cuda kv_write: rows must be multiples of 8 elements");
  const int64_t total = T * (kv_heads * head_dim / 8);
  const int threads = 256;
  const int blocks = ceil_div(total, threads);
  if (t == DType::BF16)
    kv_write_kernel<bf16><<<blocks, threads, 0, stream>>>(static_cast<const bf16*>(k), static_cast<const bf16*>(v), ld, T,
                                                          kv_heads, head_dim, slots, static_cast<bf16*>(k_cache),
                                                          static_cast<bf16*>(v_cache));
  else
    kv_write_kernel<f16><<<blocks, threads, 0, stream>>>(static_cast<const f16*>(k), static_cast<const f16*>(v), ld, T,
                                                         kv_heads, head_dim, slots, static_cast<f16*>(k_cache),
                                                         static_cast<f16*>(v_cache));
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
