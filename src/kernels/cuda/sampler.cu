// The sampler on the GPU, following engine/sampler.h step by step (greedy argmax with ties to
// the lowest id; seeded draws from Philox keyed by (seed, stream, position) passed as data; the
// candidate order (raw logit desc, id asc) by a stable radix sort; top-k, top-p, min-p prefixes;
// log_softmax logprobs). The reference's sums run in one sequential accumulator; here each sum is
// a fixed-order block reduction (a thread's fixed contiguous segment, then a fixed tree), which
// depends only on the row itself: the same row gives the same token in any batch.
#include <cooperative_groups.h>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <string>

#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarpsPer = kThreads / 32;
constexpr float kNegInf = -__builtin_huge_valf();

__device__ __forceinline__ void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}
// sample_uniform of engine/sampler.cpp, word for word.
__device__ float sample_uniform_dev(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  uint32_t c[4] = {uint32_t(counter_lo), uint32_t(counter_lo >> 32), uint32_t(counter_hi), uint32_t(counter_hi >> 32)};
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, c[2], hi1, lo1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
  }
  return float(c[0] >> 8) * 0x1p-24f;
}

// Fixed-order block reductions (the same tree every call): each warp's shuffle-down tree, then
// warp 0's tree over the warps' results (`idle` past the last warp). Every thread gets the result,
// and sh may be reused as soon as it returns.
template <typename V, typename Op>
__device__ V block_reduce(V v, V idle, V* sh, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarpsPer ? sh[lane] : idle;
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  const V r = sh[0];
  __syncthreads();
  return r;
}
__device__ float block_sum(float v, float* sh) {
  return block_reduce(v, 0.0f, sh, [](float a, float b) { return fadd(a, b); });
}
__device__ float block_max(float v, float* sh) {
  return block_reduce(v, kNegInf, sh, [](float a, float b) { return fmaxf(a, b); });
}
// The smallest v over the block (n: what lanes past the last warp contribute).
__device__ int block_min(int v, int n, int* sh) {
  return block_reduce(v, n, sh, [](int a, int b) { return min(a, b); });
}
// (value desc, id asc) best; id < 0 means none.
__device__ __forceinline__ bool better(float v, int id, float bv, int bid) {
  if (id < 0) return false;
  if (bid < 0) return true;
  return v > bv || (v == bv && id < bid);
}
__device__ void block_argmax(float& v, int& id, float* shv, int* shi) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    const float ov = __shfl_down_sync(0xffffffffu, v, o);
    const int oi = __shfl_down_sync(0xffffffffu, id, o);
    if (better(ov, oi, v, id)) { v = ov; id = oi; }
  }
  __syncthreads();
  if (lane == 0) { shv[warp] = v; shi[warp] = id; }
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarpsPer ? shv[lane] : 0.0f;
    id = lane < kWarpsPer ? shi[lane] : -1;
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) {
      const float ov = __shfl_down_sync(0xffffffffu, v, o);
      const int oi = __shfl_down_sync(0xffffffffu, id, o);
      if (better(ov, oi, v, id)) { v = ov; id = oi; }
    }
    if (lane == 0) { shv[0] = v; shi[0] = id; }
  }
  __syncthreads();
  v = shv[0];
  id = shi[0];
}

__device__ __forceinline__ bool is_banned(int id, const int32_t* banned, int b0, int b1) {
  for (int i = b0; i < b1; ++i)
    if (banned[i] == id) return true;
  return false;
}

// Per row: log-softmax stats, the greedy / scored token, and the keys for the draw's sort. One
// thread-block cluster of kStatBlocks blocks per row; block r takes the r-th of kStatBlocks equal
// chunks of the vocabulary (a function of the vocab size alone). Each block reduces its chunk
// (max, the best allowed and best overall id, then the sum of exp(x - M) over thread segments and
// the block tree), M being the max of the blocks' maxes (order-free); block 0 then adds the chunk
// sums in chunk order and compares the best ids in chunk order (distributed shared memory).
// Every sum's order depends on (vocab, the row) only: the same row gives the same bits in any batch.
constexpr int kStatBlocks = 8;  // the portable cluster size
constexpr int kStatRegs = 24;   // chunk values a thread holds in registers (vocab <= 196,608; Qwen3's: 19)
// Block `rank`'s chunk [i0, i1) of a row x of `vocab` logits (the r-th of kStatBlocks equal chunks)
// and the thread's ids i0 + t, + kThreads, ... of it: in registers when they fit (one round of
// loads instead of a dependent loop reading the chunk once per pass), else read as they are used.
// each() visits them in ascending order either way, so the bits are the same.
struct ChunkValues {
  const float* x;
  int i0, i1;
  bool in_regs;
  float v[kStatRegs];
  __device__ ChunkValues(const float* x_, int vocab, int rank)
      : x(x_),
        i0(min(vocab, rank * ((vocab + kStatBlocks - 1) / kStatBlocks))),
        i1(min(vocab, i0 + (vocab + kStatBlocks - 1) / kStatBlocks)),
        in_regs(i1 - i0 <= kThreads * kStatRegs) {  // uniform: a function of vocab
    if (in_regs) {
#pragma unroll
      for (int j = 0; j < kStatRegs; ++j) {
        const int i = i0 + int(threadIdx.x) + j * kThreads;
        v[j] = i < i1 ? x[i] : 0.0f;
      }
    }
  }
  template <typename F>
  __device__ __forceinline__ void each(F&& f) const {  // f(i, x[i]) for the thread's ids in ascending order
    if (in_regs) {
#pragma unroll
      for (int j = 0; j < kStatRegs; ++j) {
        const int i = i0 + int(threadIdx.x) + j * kThreads;
        if (i < i1) f(i, v[j]);
      }
    } else {
      for (int i = i0 + int(threadIdx.x); i < i1; i += kThreads) f(i, x[i]);
    }
  }
};
struct ChunkStat {
  float mx, sum, bv, bv_any;
  int32_t bi, bi_any;
};

__global__ void __cluster_dims__(kStatBlocks, 1, 1) __launch_bounds__(kThreads)
    stats_kernel(const float* __restrict__ logits, int vocab, const SampleRowSpec* __restrict__ specs,
                 const int32_t* __restrict__ banned, float* stats, SampleRowOut* out, float* sort_keys,
                 int32_t* sort_ids, const int32_t* __restrict__ sort_slot) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float shv[kWarpsPer];
  __shared__ int shi[kWarpsPer];
  __shared__ ChunkStat mine;  // read by the other blocks of the cluster
  const int rank = int(cluster.block_rank());
  const int row = blockIdx.y;
  const float* x = logits + int64_t(row) * vocab;
  const SampleRowSpec sp = specs[row];
  const ChunkValues cv(x, vocab, rank);
  float mx = kNegInf;
  cv.each([&](int, float v) { mx = fmaxf(mx, v); });
  mx = block_max(mx, shv);
  // Greedy over allowed ids (ties to the lowest id); and without the ban. A row with no banned ids
  // (uniform over the cluster) has one argmax for both: the same set, the same total order.
  const bool any_banned = sp.banned_end > sp.banned_begin;
  float bv = 0.0f, bv_any = 0.0f;
  int bi = -1, bi_any = -1;
  cv.each([&](int i, float v) {
    if (v != v) return;
    if (better(v, i, bv_any, bi_any)) { bv_any = v; bi_any = i; }
    if (any_banned && !is_banned(i, banned, sp.banned_begin, sp.banned_end) && better(v, i, bv, bi)) { bv = v; bi = i; }
  });
  block_argmax(bv_any, bi_any, shv, shi);
  if (any_banned) {
    block_argmax(bv, bi, shv, shi);
  } else {
    bv = bv_any;
    bi = bi_any;
  }
  __shared__ float max_of_maxes;
  if (threadIdx.x == 0) mine = ChunkStat{mx, 0.0f, bv, bv_any, bi, bi_any};
  cluster.sync();  // every block's max is visible to the cluster
  // One thread reads the 8 maxes (in rank order, as before) and shares M: 8 remote loads a block
  // instead of 8 per thread.
  if (threadIdx.x == 0) {
    float m = kNegInf;
    for (int r = 0; r < kStatBlocks; ++r) m = fmaxf(m, cluster.map_shared_rank(&mine, r)->mx);
    max_of_maxes = m;
  }
  __syncthreads();
  const float M = max_of_maxes;
  float s = 0.0f;
  if (M != kNegInf) {  // M: the max
    if (cv.in_regs) {
      // Registers past the chunk's last round (jn, uniform: a function of vocab) are skipped; below
      // it every exp runs unguarded, so they overlap; the adds in order.
      const int jn = (cv.i1 - cv.i0 + kThreads - 1) / kThreads;
#pragma unroll
      for (int j = 0; j < kStatRegs; ++j) {
        if (j >= jn) break;
        const float e = exp_nonpos_f32(fsub(cv.v[j], M));
        if (cv.i0 + int(threadIdx.x) + j * kThreads < cv.i1) s = fadd(s, e);
      }
    } else {
      cv.each([&](int, float v) { s = fadd(s, exp_nonpos_f32(fsub(v, M))); });
    }
  }
  s = block_sum(s, shv);
  if (threadIdx.x == 0) mine.sum = s;
  cluster.sync();  // every chunk sum is visible to block 0
  if (rank == 0 && threadIdx.x == 0) {
    float total = 0.0f, gv = 0.0f, gv_any = 0.0f;
    int gi = -1, gi_any = -1;
    for (int r = 0; r < kStatBlocks; ++r) {  // chunk order
      const ChunkStat c = *cluster.map_shared_rank(&mine, r);
      total = fadd(total, c.sum);
      if (better(c.bv, c.bi, gv, gi)) { gv = c.bv; gi = c.bi; }
      if (better(c.bv_any, c.bi_any, gv_any, gi_any)) { gv_any = c.bv_any; gi_any = c.bi_any; }
    }
    stats[row * 2] = M;
    stats[row * 2 + 1] = logf(total);
    out[row].token = sp.score_token >= 0 ? sp.score_token : (gi >= 0 ? gi : (gi_any >= 0 ? gi_any : 0));
  }
  // Keys for the draw: banned and NaN ids get -inf, so their weight is 0 and they are dropped.
  const int slot = sort_slot ? sort_slot[row] : -1;
  if (slot >= 0) {
    float* k = sort_keys + int64_t(slot) * vocab;
    int32_t* id = sort_ids + int64_t(slot) * vocab;
    cv.each([&](int i, float v) {
      k[i] = (v != v || is_banned(i, banned, sp.banned_begin, sp.banned_end)) ? kNegInf : v;
      id[i] = i;
    });
  }
  cluster.sync();  // block 0 has read every block's shared memory before any block exits
}

// Inclusive prefix sums of the weights over a thread's contiguous segment plus the carry of the
// segments before it: cum(j), a fixed function of the sorted row.
struct Scan {
  int seg;  // elements per thread segment
  float carry;
};
__device__ Scan block_scan_setup(const float* w, int n, float* sh) {
  const int seg = (n + kThreads - 1) / kThreads;
  const int b = threadIdx.x * seg, e = min(n, b + seg);
  float local = 0.0f;
  for (int i = b; i < e; ++i) local = fadd(local, w[i]);
  // Exclusive scan of segment totals: inclusive warp scan (fixed shuffles), then warp totals.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float inc = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float up = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc = fadd(up, inc);
  }
  __syncthreads();
  if (lane == 31) sh[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    float t = lane < kWarpsPer ? sh[lane] : 0.0f;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float up = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t = fadd(up, t);
    }
    if (lane < kWarpsPer) sh[lane] = t;  // inclusive over warps
  }
  __syncthreads();
  const float warp_prefix = warp > 0 ? sh[warp - 1] : 0.0f;
  // Carry into this segment: warp prefix + the inclusive scan of earlier lanes (shifted by one).
  float lane_prefix = __shfl_up_sync(0xffffffffu, inc, 1);
  if (lane == 0) lane_prefix = 0.0f;
  const float carry = warp > 0 ? (lane > 0 ? fadd(warp_prefix, lane_prefix) : warp_prefix) : lane_prefix;
  __syncthreads();
  return Scan{seg, carry};
}

// The first index j < n with pred(cum(j)) true, or n if none (block-wide).
template <typename Pred>
__device__ int block_find_first(const float* w, int n, const Scan& sc, Pred pred, int* shi) {
  const int b = threadIdx.x * sc.seg, e = min(n, b + sc.seg);
  int found = n;
  float cum = sc.carry;
  for (int i = b; i < e; ++i) {
    cum = fadd(cum, w[i]);
    if (pred(cum)) { found = i; break; }
  }
  return block_min(found, n, shi);
}
// cum(j) itself (for total = cum(n - 1)).
__device__ float block_cum_at(const float* w, int j, const Scan& sc, float* sh) {
  const int b = threadIdx.x * sc.seg, e = b + sc.seg;
  __syncthreads();
  if (j >= b && j < e) {
    float cum = sc.carry;
    for (int i = b; i <= j; ++i) cum = fadd(cum, w[i]);
    sh[0] = cum;
  }
  __syncthreads();
  const float r = sh[0];
  __syncthreads();
  return r;
}

// Per sampled row: weights in sorted order, the kept prefix, one uniform, the drawn token.
__global__ void __launch_bounds__(kThreads) draw_kernel(const float* __restrict__ sorted_keys,
                                                        const int32_t* __restrict__ sorted_ids, int vocab,
                                                        const SampleRowSpec* __restrict__ specs,
                                                        const int32_t* __restrict__ rows, SampleRowOut* out,
                                                        float* wbuf) {
  __shared__ float shv[kWarpsPer];
  __shared__ int shi[kWarpsPer];
  const int slot = blockIdx.x;
  const int row = rows[slot];
  const SampleRowSpec sp = specs[row];
  const float* key = sorted_keys + int64_t(slot) * vocab;
  const int32_t* ids = sorted_ids + int64_t(slot) * vocab;
  float* w = wbuf + int64_t(slot) * vocab;  // reuses the unsorted key buffer
  // zmax = the top key / T (keys are sorted descending; -inf keys are banned or NaN).
  const float zmax = fdiv(key[0], sp.temperature);
  if (isinf(zmax)) return;  // nothing finite to draw from: the greedy choice stands (as the reference)
  for (int i = threadIdx.x; i < vocab; i += kThreads) w[i] = exp_nonpos_f32(fsub(fdiv(key[i], sp.temperature), zmax));  // keys descend
  __syncthreads();
  // Weights are non-increasing along the sorted order; the ones that are 0 are dropped.
  int n = vocab;
  {
    // count of w > 0: first index with w == 0
    int f = vocab;
    const int seg = (vocab + kThreads - 1) / kThreads;
    const int b = threadIdx.x * seg, e = min(vocab, b + seg);
    for (int i = b; i < e; ++i)
      if (!(w[i] > 0.0f)) { f = i; break; }
    n = block_min(f, vocab, shi);
  }
  if (n <= 0) return;
  if (sp.top_k > 0 && sp.top_k < n) n = sp.top_k;
  Scan sc = block_scan_setup(w, n, shv);
  if (sp.top_p < 1.0f) {
    const float target = fmul(sp.top_p, block_cum_at(w, n - 1, sc, shv));
    // The shortest prefix whose running sum reaches the target: first j with cum(j) >= target.
    const int j = block_find_first(w, n, sc, [target](float c) { return c >= target; }, shi);
    n = max(1, min(n, j + 1));
    sc = block_scan_setup(w, n, shv);
  }
  if (sp.min_p > 0.0f) {
    int f = n;
    const int b = threadIdx.x * sc.seg, e = min(n, b + sc.seg);
    for (int i = max(b, 1); i < e; ++i)
      if (w[i] < sp.min_p) { f = i; break; }
    const int keep = max(1, block_min(f, n, shi));
    if (keep != n) {
      n = keep;
      sc = block_scan_setup(w, n, shv);
    }
  }
  const float u = sample_uniform_dev(sp.seed, sp.stream, uint64_t(sp.position));
  const float target = fmul(u, block_cum_at(w, n - 1, sc, shv));
  int j = block_find_first(w, n, sc, [target](float c) { return target < c; }, shi);
  if (j >= n) j = n - 1;  // u * total rounded up to the total: the last kept id
  if (threadIdx.x == 0) out[row].token = ids[j];
}

// Logprob of the chosen token and the top-n by (logprob desc, id asc): one cluster of kStatBlocks
// blocks per row, block r on the r-th chunk (stats_kernel's). Each block finds its chunk's top n
// in n rounds (block_argmax over every thread's best of its ids strictly after the block's last
// pick, from registers where the chunk fits; only the pick's thread scans again); block 0 then
// merges the blocks' lists, n rounds of the best head by the same order. The global r-th pick lies
// in its chunk's top n, so the picks are the same ids and the same logprobs (each lp(x) of the same
// x) as n passes over the whole row would give, with the row read once instead of n times by one
// block.
__global__ void __cluster_dims__(kStatBlocks, 1, 1) __launch_bounds__(kThreads)
    logprob_kernel(const float* __restrict__ logits, int vocab, const SampleRowSpec* __restrict__ specs,
                   const float* __restrict__ stats, SampleRowOut* out, int32_t* top_ids, float* top_lps) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float shv[kWarpsPer];
  __shared__ int shi[kWarpsPer];
  __shared__ float list_v[kMaxTopLogprobs];  // this block's picks, read by block 0
  __shared__ int list_i[kMaxTopLogprobs];
  const int rank = int(cluster.block_rank());
  const int row = blockIdx.y;
  const float* x = logits + int64_t(row) * vocab;
  const SampleRowSpec sp = specs[row];
  const float mx = stats[row * 2], lse = stats[row * 2 + 1];
  auto lp = [&](float v) { return mx == kNegInf ? kNegInf : fsub(fsub(v, mx), lse); };
  if (rank == 0 && threadIdx.x == 0) out[row].logprob = lp(x[out[row].token]);
  const int n = min(sp.num_top, kMaxTopLogprobs);
  if (n > 0) {  // uniform over the cluster
    const ChunkValues cv(x, vocab, rank);
    float prev_v = 0.0f;
    int prev_i = -1;
    float tv = 0.0f;  // the thread's best id strictly after the block's previous pick, and its logprob
    int ti = -1;
    auto rescan = [&] {
      tv = 0.0f;
      ti = -1;
      cv.each([&](int i, float xi) {
        const float v = lp(xi);
        if (v != v) return;
        // Strictly after the block's previous pick in (logprob desc, id asc) order.
        if (prev_i >= 0 && !(v < prev_v || (v == prev_v && i > prev_i))) return;
        if (better(v, i, tv, ti)) { tv = v; ti = i; }
      });
    };
    rescan();
    for (int r = 0; r < n; ++r) {
      float bv = tv;
      int bi = ti;
      block_argmax(bv, bi, shv, shi);
      if (threadIdx.x == 0) {
        list_v[r] = bv;
        list_i[r] = bi;
      }
      prev_v = bv;
      prev_i = bi;
      if (bi < 0) break;  // the chunk has no more (its list ends with the -1)
      // Only the thread that held the pick looks again: ids are unique and the pick was the block's
      // best, so every other thread's best already lies strictly after it.
      if (ti == bi) rescan();
    }
  }
  cluster.sync();  // every block's list is written
  if (n > 0 && rank == 0 && threadIdx.x == 0) {
    int head[kStatBlocks] = {};
    for (int r = 0; r < n; ++r) {
      float bv = 0.0f;
      int bi = -1, bb = -1;
      for (int c = 0; c < kStatBlocks; ++c) {
        if (head[c] >= n) continue;
        const float* lv = cluster.map_shared_rank(list_v, c);
        const int* li = cluster.map_shared_rank(list_i, c);
        if (better(lv[head[c]], li[head[c]], bv, bi)) { bv = lv[head[c]]; bi = li[head[c]]; bb = c; }
      }
      top_ids[row * kMaxTopLogprobs + r] = bi;
      top_lps[row * kMaxTopLogprobs + r] = bv;
      if (bi < 0) break;
      ++head[bb];
    }
  }
  cluster.sync();  // block 0 has read every list before any block exits
}

__global__ void offsets_kernel(int32_t* offsets, int n, int vocab) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) offsets[i] = i * vocab;
}

}  // namespace

size_t sampler_temp_bytes(int rows, int vocab) {
  size_t bytes = 0;
  VB_CUDA(cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), int64_t(rows) * vocab, rows,
      static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr), 0, int(sizeof(float) * 8)));
  return bytes;
}

void sample(const float* logits, int rows, int vocab, const SampleRowSpec* specs, const int32_t* banned,
            const int32_t* draw_slot, const int32_t* draw_rows, int num_draws, bool any_logprobs,
            SamplerBuffers& buf, SampleRowOut* out, int32_t* top_ids, float* top_lps, cudaStream_t stream) {
  if (rows <= 0) return;
  // One cluster of kStatBlocks blocks per row (the kernel's __cluster_dims__).
  stats_kernel<<<dim3(kStatBlocks, rows), kThreads, 0, stream>>>(logits, vocab, specs, banned, buf.stats, out,
                                                                 buf.sort_keys, buf.sort_ids,
                                                                 num_draws > 0 ? draw_slot : nullptr);
  VB_CUDA_LAUNCHED();
  if (num_draws > 0) {
    offsets_kernel<<<ceil_div(num_draws + 1, 256), 256, 0, stream>>>(buf.offsets, num_draws, vocab);
    VB_CUDA_LAUNCHED();
    size_t temp = buf.temp_bytes;
    VB_CUDA(cub::DeviceSegmentedRadixSort::SortPairsDescending(buf.temp, temp, buf.sort_keys, buf.sorted_keys,
                                                               buf.sort_ids, buf.sorted_ids, int64_t(num_draws) * vocab,
                                                               num_draws, buf.offsets, buf.offsets + 1, 0,
                                                               int(sizeof(float) * 8), stream));
    draw_kernel<<<num_draws, kThreads, 0, stream>>>(buf.sorted_keys, buf.sorted_ids, vocab, specs, draw_rows, out,
                                                    buf.sort_keys);
    VB_CUDA_LAUNCHED();
  }
  if (any_logprobs) {
    logprob_kernel<<<dim3(kStatBlocks, rows), kThreads, 0, stream>>>(logits, vocab, specs, buf.stats, out, top_ids,
                                                                      top_lps);
    VB_CUDA_LAUNCHED();
  }
}

}  // namespace verbatim::cuda
