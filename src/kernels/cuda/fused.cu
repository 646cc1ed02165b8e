// Fused per-layer glue (fused.h): the unfused kernels' arithmetic, in fewer launches.
#include <algorithm>
#include <atomic>
#include <string>

#include "kernels/cuda/fused.h"
#include "kernels/cuda/rownorm.cuh"

namespace verbatim::cuda {
namespace {

// The consumer's fixed order of adding the split-K partials of one element (its segment-0 value,
// seg: elements between segments): segment 0, then 1, 2, ... in order (gemm_reduce_kernel's
// arithmetic), then one rounding. Every fused consumer adds partials through sum_parts only, for
// any split count (the row-parallel o_proj / down_proj use the same order). V is float (one
// element) or float4 (4 consecutive elements, one 16-byte load a segment).
__device__ __forceinline__ float load_part(const float* p, float) { return *p; }
__device__ __forceinline__ float4 load_part(const float* p, float4) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float add_part(float a, float b) { return fadd(a, b); }
__device__ __forceinline__ float4 add_part(float4 a, float4 b) {
  return make_float4(fadd(a.x, b.x), fadd(a.y, b.y), fadd(a.z, b.z), fadd(a.w, b.w));
}
// R elements (p[r]: element r's segment 0) of S segments, every load of every element issued
// before the first add (same adds, same order per element).
template <typename V, int S, int R>
__device__ __forceinline__ void sum_parts_n(const float* const (&p)[R], int64_t seg, V (&out)[R]) {
  V q[S][R];
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int r = 0; r < R; ++r) q[s][r] = load_part(p[r] + int64_t(s) * seg, V{});
#pragma unroll
  for (int r = 0; r < R; ++r) out[r] = q[0][r];
#pragma unroll
  for (int s = 1; s < S; ++s)
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] = add_part(out[r], q[s][r]);
}
// The split counts in use (gemm_split_for gives 1, 2 or 4 on the Qwen3 shapes; o / down take 8)
// take the loads-first form: as a loop with a run-time count, nvcc's unroll by 8 left split 8's
// seven adds in its remainder, where each load sits behind a branch on the add before it, so the
// partials came in seven dependent L2 round trips (the PTX of add_rmsnorm_from, session 19; ncu
// 7.7 -> 5.4 us a launch at one row, 8B batch 1 -2.0%). Elements summed in one call share the
// batch of loads (SiLU-mul's gate and up: two calls would put the second's loads behind the
// first's switch).
template <typename V, int R>
__device__ __forceinline__ void sum_parts(const float* const (&p)[R], int64_t seg, int split, V (&out)[R]) {
  switch (split) {
    case 2: return sum_parts_n<V, 2, R>(p, seg, out);
    case 4: return sum_parts_n<V, 4, R>(p, seg, out);
    case 8: return sum_parts_n<V, 8, R>(p, seg, out);
    default: break;
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    out[r] = load_part(p[r], V{});
    for (int s = 1; s < split; ++s) out[r] = add_part(out[r], load_part(p[r] + int64_t(s) * seg, V{}));
  }
}
template <typename T>
__device__ __forceinline__ float round_part(float v) { return round_as<T>(v); }
template <typename T>
__device__ __forceinline__ float4 round_part(float4 v) {
  return make_float4(round_as<T>(v.x), round_as<T>(v.y), round_as<T>(v.z), round_as<T>(v.w));
}
// Elements (row, cols[r]) of a split GEMM's output (4 consecutive from each when V is float4):
// the partials summed in the fixed order above and rounded.
template <typename T, typename V, int R>
__device__ __forceinline__ void gemm_partials(const GemmResult& g, int64_t row, const int64_t (&cols)[R], V (&out)[R]) {
  const float* p[R];
#pragma unroll
  for (int r = 0; r < R; ++r) p[r] = g.partials + row * g.N + cols[r];
  sum_parts<V, R>(p, int64_t(g.M) * g.N, g.split, out);
#pragma unroll
  for (int r = 0; r < R; ++r) out[r] = round_part<T>(out[r]);
}

// Element (row, col) of a GEMM output: the rounded value, or the split-K partials summed in
// the fixed order above and rounded.
template <typename T>
__device__ __forceinline__ float gemm_value(const GemmResult& g, int64_t row, int64_t col) {
  if (!g.partials) return to_f(static_cast<const T*>(g.y)[row * g.ld + col]);
  float v[1];
  gemm_partials<T>(g, row, {col}, v);
  return v[0];
}
// Elements (row, col..col+3), each exactly gemm_value. Needs col % 4 == 0 and 16-byte aligned
// partials rows (N % 4 == 0) or 8-byte aligned y rows (ld % 4 == 0): gemm_vec4_ok checks.
template <typename T>
__device__ __forceinline__ float4 gemm_value4(const GemmResult& g, int64_t row, int64_t col) {
  if (!g.partials) {
    const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const T*>(g.y) + row * g.ld + col);
    return make_float4(lo_f<T>(v.x), hi_f<T>(v.x), lo_f<T>(v.y), hi_f<T>(v.y));
  }
  float4 v[1];
  gemm_partials<T>(g, row, {col}, v);
  return v[0];
}
// gemm_value4 at (row, c0) into a and at (row, c1) into b, every load before the first add.
template <typename T>
__device__ __forceinline__ void gemm_value4_pair(const GemmResult& g, int64_t row, int64_t c0, int64_t c1, float4& a,
                                                 float4& b) {
  if (!g.partials) {
    a = gemm_value4<T>(g, row, c0);
    b = gemm_value4<T>(g, row, c1);
    return;
  }
  float4 v[2];
  gemm_partials<T>(g, row, {c0, c1}, v);
  a = v[0];
  b = v[1];
}
bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }
bool gemm_vec4_ok(const GemmResult& g) {
  return g.partials ? (g.N % 4 == 0 && aligned(g.partials, 16)) : (g.ld % 4 == 0 && aligned(g.y, 8));
}

constexpr int kWarps = 2;  // (token, head) warps per qkv_post block: more blocks in flight at decode
// Many-token launches (prefill): blocks of kLoopWarps warps, each warp (or half warp) looping over
// (token, head) items with a stride of the whole grid. An item is a chain of dependent memory
// reads and short arithmetic, so what sets the kernel's time is how many items are in flight: one
// item per 2-warp block (~49,000 blocks for a 2,048-token 8B prefill) took 64 us a layer for ~12 us
// of bytes, the loop 60, two items per warp 39 (ncu, sessions 16 and 18). Which lanes take an
// item never changes its bits.
constexpr int kLoopWarps = 8;
constexpr int64_t kLoopMinTokens = 65;  // decode steps (<= 64 rows) keep one item per warp
std::atomic<int> g_loop_blocks{0};     // set_qkv_post_loop_blocks (tests); 0: by the SM count

constexpr int kMaxHeadDim = 256;
// Item w = (token w / heads, head w % heads) of qkv_post on LANES lanes of a warp (32: the whole
// warp; 16: a half, `mask` its lanes, lane = 0..15 within it), whose staging row is `row` (hd
// floats of shared memory), for head_dim <= MAXHD. Every element gets the same operations in
// either width: the norm's 16 reference lanes are lanes 0..15 of the item's lanes and its tree
// reads only those (shuffles of width LANES), so the bits do not depend on LANES. WAIT: the launch
// may be a programmatic dependent launch whose wait (pdl_begin) this item makes after its step
// inputs are read; else the caller waited.
template <typename T, bool WAIT, int LANES = 32, int MAXHD = kMaxHeadDim>
__device__ __forceinline__ void qkv_post_item(const QkvPost& p, uint32_t w, bool vec, float* row, int lane,
                                              uint32_t mask) {
  static_assert(LANES == 32 || LANES == 16, "a warp or a half warp per item");
  const int heads_all = p.nh + 2 * p.nkv;
  // 32-bit item index (qkv_post checks T * heads < 2^31): a 64-bit division is a ~70-instruction
  // routine, and a prefill runs ~98,000 of these items (8B, 2,048 tokens).
  const int64_t t = int64_t(w / uint32_t(heads_all));
  const int hh = int(w % uint32_t(heads_all));
  const int hd = p.hd, half = hd / 2;
  const bool is_q = hh < p.nh, is_v = hh >= p.nh + p.nkv;
  // Before the wait (read_step_inputs_before_pdl, common.cuh): the token's slot and position, and
  // the norm weights and RoPE table entries this lane uses, so only the GEMM output is waited for.
  const int64_t slot_off = int64_t(p.slots[t]) * p.nkv * hd;
  float wv[MAXHD / LANES], cv[MAXHD / (2 * LANES)], sv[MAXHD / (2 * LANES)];
  if (!is_v) {
    const float* wn = is_q ? p.q_norm : p.k_norm;
    const float* cs = p.cos_sin + int64_t(p.positions[t]) * hd;
#pragma unroll
    for (int j = 0; j < MAXHD / LANES; ++j) wv[j] = lane + LANES * j < hd ? wn[lane + LANES * j] : 0.0f;
#pragma unroll
    for (int j = 0; j < MAXHD / (2 * LANES); ++j) {
      cv[j] = lane + LANES * j < half ? cs[lane + LANES * j] : 0.0f;
      sv[j] = lane + LANES * j < half ? cs[half + lane + LANES * j] : 0.0f;
    }
  }
  if constexpr (WAIT) pdl_begin();  // the GEMM output is written by the kernel before this one
  if (vec) {
    for (int k = 4 * lane; k < hd; k += 4 * LANES)
      *reinterpret_cast<float4*>(row + k) = gemm_value4<T>(p.in, t, int64_t(hh) * hd + k);
  } else {
    for (int k = lane; k < hd; k += LANES) row[k] = gemm_value<T>(p.in, t, int64_t(hh) * hd + k);
  }
  __syncwarp(mask);  // lanes below read columns other lanes staged
  if (is_v) {  // v: straight to the cache
    T* vc = static_cast<T*>(p.v_cache) + slot_off + int64_t(hh - p.nh - p.nkv) * hd;
    for (int k = lane; k < hd; k += LANES) vc[k] = from_f<T>(row[k]);
    return;
  }
  // RMSNorm: rmsnorm.cu's 16 lanes and tree.
  float s = 0.0f;
  if (lane < 16) s = lane_sum_squares(row, hd, lane);
#pragma unroll
  for (int o = 8; o >= 1; o >>= 1) s = fadd(s, __shfl_down_sync(mask, s, o, LANES));
  s = __shfl_sync(mask, s, 0, LANES);
  const float inv = fdiv(1.0f, __fsqrt_rn(fadd(fdiv(s, float(hd)), p.eps)));
  __syncwarp(mask);
#pragma unroll
  for (int j = 0; j < MAXHD / LANES; ++j) {
    const int k = lane + LANES * j;
    if (k < hd) row[k] = round_as<T>(fmul(wv[j], round_as<T>(fmul(row[k], inv))));
  }
  __syncwarp(mask);
  // RoPE: rope.cu's formula and rounding.
  T* dst = is_q ? static_cast<T*>(p.qkv) + t * (int64_t(heads_all) * hd) + int64_t(hh) * hd
                : static_cast<T*>(p.k_cache) + slot_off + int64_t(hh - p.nh) * hd;
#pragma unroll
  for (int j = 0; j < MAXHD / (2 * LANES); ++j) {
    const int i = lane + LANES * j;
    if (i >= half) break;
    const float c = cv[j], sn = sv[j];
    const float a = row[i], b = row[i + half];
    dst[i] = from_f<T>(fadd(fmul(a, c), fmul(-b, sn)));
    dst[i + half] = from_f<T>(fadd(fmul(b, c), fmul(a, sn)));
  }
}

// Decode steps: one item per warp, its step inputs read before the PDL wait.
template <typename T>
__global__ void qkv_post_kernel(QkvPost p, int T_, bool vec) {
  extern __shared__ __align__(16) float rows_smem[];
  const int warp = threadIdx.x >> 5;
  const uint32_t w = blockIdx.x * uint32_t(kWarps) + uint32_t(warp);
  if (w >= uint32_t(T_) * uint32_t(p.nh + 2 * p.nkv)) return;  // a step input: allowed before the wait
  qkv_post_item<T, true>(p, w, vec, rows_smem + warp * p.hd, int(threadIdx.x & 31), 0xffffffffu);
}

// Many tokens: each item slot (a warp, or a half warp when LANES is 16: two items in flight per
// warp, head_dim <= 128) takes items slot, slot + (slots in the grid), ...
template <typename T, int LANES>
__global__ void __launch_bounds__(kLoopWarps * 32) qkv_post_loop_kernel(QkvPost p, int T_, bool vec) {
  extern __shared__ __align__(16) float rows_smem[];
  pdl_begin();  // before any memory access (common.cuh)
  constexpr int kPerWarp = 32 / LANES;
  const int slot = int(threadIdx.x) / LANES, lane = int(threadIdx.x) & (LANES - 1);
  const uint32_t mask = LANES == 32 ? 0xffffffffu : 0xffffu << (threadIdx.x & 16);
  const uint32_t items = uint32_t(T_) * uint32_t(p.nh + 2 * p.nkv);
  const uint32_t stride = gridDim.x * uint32_t(kLoopWarps * kPerWarp);
  float* row = rows_smem + slot * p.hd;
  for (uint32_t w = blockIdx.x * uint32_t(kLoopWarps * kPerWarp) + uint32_t(slot); w < items; w += stride) {
    qkv_post_item<T, false, LANES, LANES == 32 ? kMaxHeadDim : 128>(p, w, vec, row, lane, mask);
    __syncwarp(mask);  // every lane is done with the staging row before the next item fills it
  }
}

// One block per row (rownorm.cuh): the block adds the GEMM output (partials in their fixed order,
// rounded) to the residual, stages the row in fp32, lanes 0..15 of warp 0 run the reference's
// norm sum, the block writes the outputs. vec: 4 columns per step (same formulas per element).
template <typename T>
__global__ void __launch_bounds__(1024) add_rmsnorm_from_kernel(T* __restrict__ h, GemmResult d, int64_t rows, int D,
                                                                const float* __restrict__ w, float eps,
                                                                T* __restrict__ y, bool vec) {
  pdl_begin();  // before any memory access or return (common.cuh)
  extern __shared__ __align__(16) float rowf[];
  const int64_t r = blockIdx.x;
  if (r >= rows) return;
  T* hr = h + r * D;
  T* yr = y + r * D;
  const float4 w0 = vec ? first_w4(w, D) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (vec) {
    for (int k = 4 * threadIdx.x; k < D; k += 4 * blockDim.x) {
      const uint2 hv = *reinterpret_cast<const uint2*>(hr + k);  // issued with the partials' loads
      const float4 g = gemm_value4<T>(d, r, k);
      const float v0 = round_as<T>(fadd(lo_f<T>(hv.x), g.x)), v1 = round_as<T>(fadd(hi_f<T>(hv.x), g.y));
      const float v2 = round_as<T>(fadd(lo_f<T>(hv.y), g.z)), v3 = round_as<T>(fadd(hi_f<T>(hv.y), g.w));
      *reinterpret_cast<uint2*>(hr + k) = make_uint2(pack2<T>(v0, v1), pack2<T>(v2, v3));
      rowf[k] = v0;
      rowf[k + 1] = v1;
      rowf[k + 2] = v2;
      rowf[k + 3] = v3;
    }
  } else {
    for (int k = threadIdx.x; k < D; k += blockDim.x) {
      const T v = from_f<T>(fadd(to_f(hr[k]), gemm_value<T>(d, r, k)));
      hr[k] = v;
      rowf[k] = to_f(v);
    }
  }
  __syncthreads();  // the norm reads values other threads just wrote
  const float inv = block_inv_rms(rowf, D, eps, rowf + D);
  if (vec) {
    norm_out_row4<T>(rowf, w, w0, inv, D, yr);
  } else {
    for (int k = threadIdx.x; k < D; k += blockDim.x) yr[k] = from_f<T>(fmul(w[k], round_as<T>(fmul(rowf[k], inv))));
  }
}

// 4 consecutive outputs per thread when vec (D % 4 == 0), else one; same formula per element.
template <typename T>
__global__ void silu_mul_from_kernel(GemmResult gu, int64_t T_, int64_t D, T* __restrict__ out, bool vec) {
  pdl_begin();  // before any memory access or return (common.cuh)
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    if (idx >= T_ * D / 4) return;
    const int64_t t = idx / (D / 4), i = (idx % (D / 4)) * 4;
    float4 g, u;
    gemm_value4_pair<T>(gu, t, i, D + i, g, u);
    uint2 o;
    o.x = pack2<T>(fmul(round_as<T>(silu_f32(g.x)), u.x), fmul(round_as<T>(silu_f32(g.y)), u.y));
    o.y = pack2<T>(fmul(round_as<T>(silu_f32(g.z)), u.z), fmul(round_as<T>(silu_f32(g.w)), u.w));
    *reinterpret_cast<uint2*>(out + t * D + i) = o;
    return;
  }
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
  if (split > 1 && gemm_workspace_bytes(M, N, split) <= workspace_bytes && !gemm_sums_in_kernel(M, N, split)) {
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
  if (p.hd > kMaxHeadDim || p.hd % 2) throw Error("cuda qkv_post: head_dim " + std::to_string(p.hd) + " is odd or over 256");
  const int64_t warps = int64_t(T) * (p.nh + 2 * p.nkv);
  if (warps >= (int64_t(1) << 31)) throw Error("cuda qkv_post: " + std::to_string(T) + " tokens x heads is over 2^31");
  const bool vec = p.hd % 4 == 0 && gemm_vec4_ok(p.in);
  static const bool loop_on = env_int("VERBATIM_QKV_POST_LOOP", 1) != 0;  // 0: one item per warp always (A/B)
  // Many tokens: blocks of 8 warps, VERBATIM_QKV_POST_LOOP_BLOCKS per SM (default 8: an SM's warps
  // if registers allowed; at 64-78 registers a thread 3-4 are resident at once, the rest follow),
  // fewer where the items run out first.
  // Else one item per warp, 2 warps a block.
  const bool loop = loop_on && T >= kLoopMinTokens;
  static const int per_sm = std::max(1, env_int("VERBATIM_QKV_POST_LOOP_BLOCKS", 8));
  const int cap = g_loop_blocks.load(std::memory_order_relaxed);
  // Two items per warp (half warps) where head_dim <= 128 (VERBATIM_QKV_POST_HALF=0: one).
  static const bool half_on = env_int("VERBATIM_QKV_POST_HALF", 1) != 0;
  const bool halves = loop && half_on && p.hd <= 128;
  const int block_warps = loop ? kLoopWarps : kWarps;
  const int slots = block_warps * (halves ? 2 : 1);  // items in flight per block
  const int blocks = loop ? std::min(ceil_div(warps, slots), cap > 0 ? cap : per_sm * sm_count())
                          : ceil_div(warps, kWarps);
  const size_t smem = size_t(slots) * p.hd * sizeof(float);
  auto go = [&](auto tag) {
    using E = decltype(tag);
    pdl_launch(!loop ? qkv_post_kernel<E> : halves ? qkv_post_loop_kernel<E, 16> : qkv_post_loop_kernel<E, 32>,
               dim3(blocks), dim3(block_warps * 32), smem, stream, p, T, vec);
  };
  if (t == DType::BF16) go(bf16{});
  else go(f16{});
  VB_CUDA_LAUNCHED();
}

void set_qkv_post_loop_blocks(int blocks) { g_loop_blocks.store(blocks, std::memory_order_relaxed); }

// Threads per row block where a launch has many rows (prefill): each row's norm is one serial chain
// of D / 16 steps in 16 lanes, so more rows per SM (smaller blocks) overlap more chains; a decode
// step's few rows keep rownorm_threads. Same bits at any block size (rownorm.cuh).
// VERBATIM_NORM_MANY_ROWS_THREADS (default 256; 0 = rownorm_threads).
namespace {
constexpr int64_t kManyRows = 64;
int many_rows_threads() {
  static const int n = [] {
    const int v = env_int("VERBATIM_NORM_MANY_ROWS_THREADS", 256);
    return v <= 0 ? 1024 : std::max(32, std::min(1024, v / 32 * 32));
  }();
  return n;
}
}  // namespace

void add_rmsnorm_from(void* h, const GemmResult& d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                      cudaStream_t stream) {
  if (rows <= 0) return;
  if (rownorm_smem(D) > kRownormMaxSmem)
    throw Error("cuda add_rmsnorm_from: rows of " + std::to_string(D) + " values exceed the kernel's shared memory");
  const bool vec = D % 4 == 0 && gemm_vec4_ok(d) && aligned(h, 8) && aligned(y, 8) && aligned(w, 16);
  const int threads = rows >= kManyRows ? std::min(rownorm_threads(D), many_rows_threads()) : rownorm_threads(D);
  const size_t smem = rownorm_smem(D);
  if (t == DType::BF16)
    pdl_launch(add_rmsnorm_from_kernel<bf16>, dim3(unsigned(rows)), dim3(threads), smem, stream, static_cast<bf16*>(h),
               d, rows, D, w, eps, static_cast<bf16*>(y), vec);
  else
    pdl_launch(add_rmsnorm_from_kernel<f16>, dim3(unsigned(rows)), dim3(threads), smem, stream, static_cast<f16*>(h), d,
               rows, D, w, eps, static_cast<f16*>(y), vec);
  VB_CUDA_LAUNCHED();
}

void silu_mul_from(const GemmResult& gu, int64_t T, int64_t D, DType t, void* out, cudaStream_t stream) {
  if (T <= 0) return;
  const bool vec = D % 4 == 0 && gemm_vec4_ok(gu) && aligned(out, 8);
  const int threads = 64;  // small blocks: a decode step's few rows still spread over many SMs
  const int blocks = ceil_div(vec ? T * D / 4 : T * D, threads);
  if (t == DType::BF16)
    pdl_launch(silu_mul_from_kernel<bf16>, dim3(blocks), dim3(threads), 0, stream, gu, T, D, static_cast<bf16*>(out),
               vec);
  else
    pdl_launch(silu_mul_from_kernel<f16>, dim3(blocks), dim3(threads), 0, stream, gu, T, D, static_cast<f16*>(out),
               vec);
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
