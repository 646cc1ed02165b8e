// persistent_probe: would a persistent decode kernel reach the batch-1 targets (issue 4: 0.6B <= 0.6
// ms a token, 8B <= 4.0)? Before building one with the contract's bits, this tool times the shape
// of the idea on the device, on the same work done two ways:
//   launch      a decode layer's nine phases as nine kernels a layer (the engine's way: a CUDA graph
//               of the step, programmatic dependent launch between kernels; launch_nopdl without);
//   persistent  one kernel for the whole step, one CTA per SM, a grid barrier between phases;
//   persistent_pfMB  the same, and every CTA issues L2 prefetches of its rows of the next GEMV's
//               weights while a glue phase runs (weights never depend on the step), up to MB a GEMV;
//   flow        one kernel, no grid barrier (session 36): a counter a phase that every CTA adds to
//               when its share is done; only a CTA with items in a phase waits for the phase
//               before, so a CTA with nothing to do in a glue phase goes on at once;
//   flow_pfMB   the same, and only those idle CTAs prefetch (the glue's own CTAs never do: is it
//               other SMs' streaming or their own prefetches that made session 26's glue slower?).
// A layer's phases at batch 1 (Qwen3 shapes, ~1k context): add + RMSNorm (one CTA), the qkv GEMV,
// q/k norm + RoPE + cache write, attention parts of 64 keys, the merge of the parts, the o GEMV,
// add + RMSNorm, the gate_up GEMV with SiLU·mul, the down GEMV. The glue phases do the work of the
// engine's kernels in simplified form (the same loads and dependent chains, e.g. the norm's 16
// serial lane sums); the GEMVs are plain 16-byte loads with 8 in flight a lane, not the engine's
// TMA kernel, so `gemv_only` (the GEMVs alone, both ways) says how far they are from the bandwidth.
// Every mode runs the same device functions on the same items, so each step leaves the same bits:
// the tool compares the final residual of one step of each mode with `launch`'s (a persistent
// mode that skipped work or raced would differ). `empty` runs every phase with no work: a kernel
// boundary against a grid barrier. The persistent kernel also records the global timer after each
// barrier of its last step (CTA 0), so its time splits by phase kind.
// Numbers are not the engine's bits or kernels: the tool answers "how much of a layer's time is the
// boundaries and how much the prefetch wins back", which is what decides whether to build one.
// Usage: persistent_probe [--json FILE] [--models 0.6b,1.7b,8b] [--steps N] [--pf-mb 8,24,40] [--ctx C]
// (--pf-mb: the prefetch budgets a GEMV, one persistent_pf<MB> and one flow_pf<MB> mode each).
// Research tool: it prints what it finds and asserts nothing (exit 1 only on a CUDA error).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "persistent_probe: %s: %s\n", #x, cudaGetErrorString(e_));    \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

using bf16 = __nv_bfloat16;
constexpr int kThreads = 512;  // 16 warps a CTA in every phase and mode
constexpr int kWarps = kThreads / 32;
constexpr int kHD = 128;       // head_dim of every Qwen3 shape here
constexpr int kPart = 64;      // keys per attention part (the contract's tile)
constexpr int kMaxParts = 64;  // up to 4,096 positions
constexpr int kChunk = 4;      // 256-k chunks of a row loaded before any is used (x 2 rows: 8 loads in flight a lane)
constexpr size_t kSmem = 48 * 1024;

enum Kind : int { kNorm = 0, kGemv, kQkvPost, kAttnPart, kMerge, kKinds };
const char* kind_name(int k) {
  static const char* n[] = {"norm", "gemv", "qkv_post", "attn_part", "merge"};
  return n[k];
}

// One phase of a step: what it reads and writes, and the L2 prefetch to issue during it.
struct Phase {
  int kind;
  int items;             // units of work (CTA-sized for norm / attention parts, warp-sized else)
  const bf16* w;         // GEMV weights [N][K] (SiLU: gate rows 0..N-1, up rows N..2N-1)
  const float* nw;       // norm weights (norm: [H]; qkv_post: q norm then k norm, [2][128])
  const bf16* in;        // activations read
  const bf16* in2;       // norm: the delta added to the residual
  bf16* out;             // activations written
  bf16* res;             // norm: the residual (read, written)
  bf16 *kc, *vc;         // the layer's cache [nkv][ctx][128]
  float* states;         // attention part states [nh][parts][4 + 128]
  const float* rope;     // [128]: cos (0..63), sin (64..127) at the step's position
  int N, K, silu;        // GEMV
  int nh, nkv, pos, ctx; // attention
  const bf16* pf;        // prefetch: weights to bring into L2 (the next GEMV's), or null
  int pf_N, pf_K, pf_silu, pf_iters, pf_bytes;  // that GEMV's N, K, SiLU; its warp trips and bytes a row
};

__device__ __forceinline__ float lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float bf(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ bf16 tobf(float v) { return __float2bfloat16_rn(v); }
// Activations are read through L2: in the persistent kernel another SM wrote them in this launch.
__device__ __forceinline__ bf16 ldcg_bf(const bf16* p) {
  unsigned short u = __ldcg(reinterpret_cast<const unsigned short*>(p));
  return __ushort_as_bfloat16(u);
}
__device__ __forceinline__ uint4 ldg_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// ---- the phases: item i of phase p on CTA `cta` of `ncta` (every mode calls these) ----

// x (K values) into shared memory as floats, by the whole CTA.
__device__ void stage_x(const bf16* in, int K, float* xs) {
  for (int k = threadIdx.x; k < K; k += kThreads) xs[k] = bf(ldcg_bf(in + k));
  __syncthreads();
}

// NR rows' dot products with xs (K % 8 == 0): lane loads 16 bytes at k = 256 c + 8 lane.
template <int NR>
__device__ __forceinline__ void dot_rows(const bf16* const (&rows)[NR], const float* xs, int K, int lane,
                                         float (&acc)[NR]) {
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 256 * kChunk) {
    uint4 w[NR][kChunk];
#pragma unroll
    for (int r = 0; r < NR; ++r)
#pragma unroll
      for (int c = 0; c < kChunk; ++c) {
        const int k = k0 + 256 * c + 8 * lane;
        w[r][c] = k < K ? ldg_stream(rows[r] + k) : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
    for (int c = 0; c < kChunk; ++c) {
      const int k = k0 + 256 * c + 8 * lane;
      if (k >= K) break;
      const float4 xa = *reinterpret_cast<const float4*>(xs + k);
      const float4 xb = *reinterpret_cast<const float4*>(xs + k + 4);
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        const uint4 v = w[r][c];
        float s = acc[r];
        s = fmaf(lo(v.x), xa.x, s);
        s = fmaf(hi(v.x), xa.y, s);
        s = fmaf(lo(v.y), xa.z, s);
        s = fmaf(hi(v.y), xa.w, s);
        s = fmaf(lo(v.z), xb.x, s);
        s = fmaf(hi(v.z), xb.y, s);
        s = fmaf(lo(v.w), xb.z, s);
        s = fmaf(hi(v.w), xb.w, s);
        acc[r] = s;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
}

// GEMV: warp gw = warp * ncta + cta (consecutive outputs on different SMs) takes outputs gw,
// gw + 2 tw, ... with gw + tw beside each (tw: warps in the grid), or with SiLU outputs gw, gw + tw,
// ... (gate and up rows). Every output's sum is one warp's, in one order, whatever the grid.
__device__ __forceinline__ int gemv_warp(int cta, int ncta) { return (threadIdx.x >> 5) * ncta + cta; }
__device__ void gemv(const Phase& p, int cta, int ncta, float* xs) {
  stage_x(p.in, p.K, xs);
  const int lane = threadIdx.x & 31, tw = ncta * kWarps, gw = gemv_warp(cta, ncta);
  if (p.silu) {
    for (int n = gw; n < p.N; n += tw) {
      const bf16* rows[2] = {p.w + int64_t(n) * p.K, p.w + int64_t(p.N + n) * p.K};
      float acc[2];
      dot_rows<2>(rows, xs, p.K, lane, acc);
      const float g = bf(tobf(acc[0])), u = bf(tobf(acc[1]));
      const float sg = bf(tobf(g / (1.0f + __expf(-g))));
      if (lane == 0) p.out[n] = tobf(sg * u);
    }
    return;
  }
  for (int n = gw; n < p.N; n += 2 * tw) {
    if (n + tw < p.N) {
      const bf16* rows[2] = {p.w + int64_t(n) * p.K, p.w + int64_t(n + tw) * p.K};
      float acc[2];
      dot_rows<2>(rows, xs, p.K, lane, acc);
      if (lane == 0) {
        p.out[n] = tobf(acc[0]);
        p.out[n + tw] = tobf(acc[1]);
      }
    } else {
      const bf16* rows[1] = {p.w + int64_t(n) * p.K};
      float acc[1];
      dot_rows<1>(rows, xs, p.K, lane, acc);
      if (lane == 0) p.out[n] = tobf(acc[0]);
    }
  }
}

// res += in2 (rounded), out = w * round(res * inv_rms): one CTA, the reference's 16 serial lane sums.
__device__ void norm(const Phase& p, float* rowf) {
  const int H = p.K;
  for (int k = threadIdx.x; k < H; k += kThreads) {
    const bf16 v = p.in2 ? tobf(bf(ldcg_bf(p.res + k)) + bf(ldcg_bf(p.in2 + k))) : ldcg_bf(p.res + k);
    p.res[k] = v;
    rowf[k] = bf(v);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = 0.0f;
    if (threadIdx.x < 16)
      for (int k = threadIdx.x; k < H; k += 16) s = __fadd_rn(s, __fmul_rn(rowf[k], rowf[k]));
    for (int o = 8; o >= 1; o >>= 1) s = __fadd_rn(s, __shfl_down_sync(0xffffffffu, s, o));
    if (threadIdx.x == 0) rowf[H] = 1.0f / sqrtf(s / float(H) + 1e-6f);
  }
  __syncthreads();
  const float inv = rowf[H];
  for (int k = threadIdx.x; k < H; k += kThreads) p.out[k] = tobf(p.nw[k] * bf(tobf(rowf[k] * inv)));
  __syncthreads();  // rowf is reused by the next item or phase
}

// Item h < nh: q head h (norm, RoPE, into out); nh + j: k head j (norm, RoPE, into the cache at
// pos); nh + nkv + j: v head j (into the cache). One warp an item; lane holds d = 4 lane .. + 3.
__device__ void qkv_post(const Phase& p, int item, int lane) {
  const int nh = p.nh, nkv = p.nkv;
  const bool is_v = item >= nh + nkv, is_k = !is_v && item >= nh;
  const bf16* src = p.in + int64_t(item) * kHD;
  float v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = bf(ldcg_bf(src + 4 * lane + i));
  bf16* dst = is_v ? p.vc + (int64_t(item - nh - nkv) * p.ctx + p.pos) * kHD
              : is_k ? p.kc + (int64_t(item - nh) * p.ctx + p.pos) * kHD
                     : p.out + int64_t(item) * kHD;
  if (!is_v) {
    const float ss = warp_sum(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
    const float inv = 1.0f / sqrtf(ss / float(kHD) + 1e-6f);
    const float* w = p.nw + (is_k ? kHD : 0);
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = bf(tobf(v[i] * inv * w[4 * lane + i]));
    float o[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int d = 4 * lane + i, j = d & 63;
      const float partner = __shfl_xor_sync(0xffffffffu, v[i], 16);  // d ^ 64
      const float c = p.rope[j], s = p.rope[64 + j];
      o[i] = d < 64 ? v[i] * c - partner * s : v[i] * c + partner * s;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = o[i];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) dst[4 * lane + i] = tobf(v[i]);
}

// Item = (kv head, part): the group's q heads against the part's keys: scores, max, exps, sum, P·V,
// the part's state (m, l, acc). One CTA an item.
__device__ void attn_part(const Phase& p, int item, float* sm) {
  const int parts = p.pos / kPart + 1, kvh = item / parts, part = item % parts, G = p.nh / p.nkv;
  const int j0 = part * kPart, nk = min(kPart, p.pos + 1 - j0);
  float* qs = sm;               // [G][128]
  float* sc = sm + G * kHD;     // [G][64]
  float* ml = sc + G * kPart;   // [G][2]
  for (int t = threadIdx.x; t < G * kHD; t += kThreads) qs[t] = bf(ldcg_bf(p.in + int64_t(kvh * G) * kHD + t));
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bf16* kb = p.kc + (int64_t(kvh) * p.ctx + j0) * kHD;
  const bf16* vb = p.vc + (int64_t(kvh) * p.ctx + j0) * kHD;
  for (int j = warp; j < nk; j += kWarps) {
    float kv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) kv[i] = bf(ldcg_bf(kb + int64_t(j) * kHD + 4 * lane + i));
    for (int g = 0; g < G; ++g) {
      const float* q = qs + g * kHD + 4 * lane;
      const float s = warp_sum(q[0] * kv[0] + q[1] * kv[1] + q[2] * kv[2] + q[3] * kv[3]);
      if (lane == 0) sc[g * kPart + j] = s * 0.08838834764f;
    }
  }
  __syncthreads();
  if (warp < G) {
    const float a = lane < nk ? sc[warp * kPart + lane] : -INFINITY;
    const float b = lane + 32 < nk ? sc[warp * kPart + lane + 32] : -INFINITY;
    const float m = warp_max(fmaxf(a, b));
    const float ea = lane < nk ? __expf(a - m) : 0.0f, eb = lane + 32 < nk ? __expf(b - m) : 0.0f;
    sc[warp * kPart + lane] = ea;
    sc[warp * kPart + lane + 32] = eb;
    const float l = warp_sum(ea + eb);
    if (lane == 0) {
      ml[2 * warp] = m;
      ml[2 * warp + 1] = l;
    }
  }
  __syncthreads();
  for (int t = threadIdx.x; t < G * kHD; t += kThreads) {
    const int g = t / kHD, d = t % kHD;
    float acc = 0.0f;
    for (int j = 0; j < nk; ++j) acc = fmaf(sc[g * kPart + j], bf(ldcg_bf(vb + int64_t(j) * kHD + d)), acc);
    float* st = p.states + (int64_t(kvh * G + g) * kMaxParts + part) * (4 + kHD);
    st[4 + d] = acc;
    if (d == 0) {
      st[0] = ml[2 * g];
      st[1] = ml[2 * g + 1];
    }
  }
  __syncthreads();  // sm is reused by the next item
}

// Item = q head: fold its parts' states in part order (loads of 8 parts, then their folds), out = acc / l.
__device__ void merge(const Phase& p, int head, int lane) {
  const int parts = p.pos / kPart + 1;
  const float* st = p.states + int64_t(head) * kMaxParts * (4 + kHD);
  float m = -INFINITY, l = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  constexpr int kAhead = 8;
  for (int p0 = 0; p0 < parts; p0 += kAhead) {
    float pm[kAhead], pl[kAhead], pa[kAhead][4];
#pragma unroll
    for (int j = 0; j < kAhead; ++j)
      if (p0 + j < parts) {
        const float* s = st + (p0 + j) * (4 + kHD);
        pm[j] = __ldcg(s);
        pl[j] = __ldcg(s + 1);
#pragma unroll
        for (int i = 0; i < 4; ++i) pa[j][i] = __ldcg(s + 4 + 4 * lane + i);
      }
#pragma unroll
    for (int j = 0; j < kAhead; ++j)
      if (p0 + j < parts) {
        const float mn = fmaxf(m, pm[j]);
        const float fa = __expf(m - mn), fb = __expf(pm[j] - mn);
        l = l * fa + pl[j] * fb;
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i] = acc[i] * fa + pa[j][i] * fb;
        m = mn;
      }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) p.out[int64_t(head) * kHD + 4 * lane + i] = tobf(acc[i] / l);
}

// L2 prefetch of the rows this CTA's warps will read first in a later GEMV: the first pf_bytes of
// each row of the first pf_iters trips of gemv()'s loop, one bulk prefetch a row (a lane a row).
__device__ __forceinline__ void bulk_prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}
__device__ void prefetch_next(const Phase& p, int cta, int ncta) {
  if (!p.pf) return;
  const int lane = threadIdx.x & 31, tw = ncta * kWarps, gw = gemv_warp(cta, ncta);
  for (int r = lane; r < 2 * p.pf_iters; r += 32) {
    const int i = r >> 1, second = r & 1;
    const int n = gw + i * (p.pf_silu ? tw : 2 * tw);
    if (n >= p.pf_N) break;
    const int row = p.pf_silu ? (second ? p.pf_N + n : n) : (second ? n + tw : n);
    if (!p.pf_silu && row >= p.pf_N) continue;
    bulk_prefetch_l2(p.pf + int64_t(row) * p.pf_K, uint32_t(p.pf_bytes));
  }
}

__device__ void run_phase(const Phase& p, int cta, int ncta, float* sm, bool empty) {
  if (empty) return;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  switch (p.kind) {
    case kNorm:
      if (cta == 0) norm(p, sm);
      break;
    case kGemv:
      gemv(p, cta, ncta, sm);
      break;
    case kQkvPost:
      for (int i = cta * kWarps + warp; i < p.items; i += ncta * kWarps) qkv_post(p, i, lane);
      break;
    case kAttnPart:
      for (int i = cta; i < p.items; i += ncta) attn_part(p, i, sm);
      break;
    case kMerge:
      for (int i = cta * kWarps + warp; i < p.items; i += ncta * kWarps) merge(p, i, lane);
      break;
  }
}

// ---- mode launch: one kernel a phase ----
__global__ void __launch_bounds__(kThreads, 1) phase_kernel(const Phase* phases, int i, int ncta, bool empty, bool pdl) {
  extern __shared__ __align__(16) float sm[];
  if (pdl) {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  }
  run_phase(phases[i], blockIdx.x, ncta, sm, empty);
}

// ---- mode persistent: every phase of the step, a grid barrier after each ----
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// The CTA's arrival on count: every thread's writes so far (ordered before thread 0's by the
// bar.sync, then the fence) are visible with it to an acquire that sees the count.
__device__ __forceinline__ void cta_arrive(unsigned* count) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    red_release(count, 1u);
  }
}
// Thread 0 waits until count reaches target (acquire), then the CTA's barrier passes what it saw
// to every thread. A CTA that spins far longer than any phase takes traps (a CUDA error, not a hang).
__device__ __forceinline__ void cta_wait_for(const unsigned* count, unsigned target) {
  if (threadIdx.x == 0) {
    long long spins = 0;
    while (ld_acquire(count) < target)
      if (++spins > (1ll << 24)) __trap();  // ~10 s of L2 round trips
  }
  __syncthreads();
}
// Every CTA's writes before the barrier are visible to every CTA after it.
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned target) {
  cta_arrive(count);
  cta_wait_for(count, target);
}

// CTA 0's global timer into stamps[i] (stamps null: not the timed step).
__device__ __forceinline__ void stamp_at(long long* stamps, int i) {
  if (stamps && blockIdx.x == 0 && threadIdx.x == 0) {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    stamps[i] = t;
  }
}
// stamps (CTA 0, the last timed step): [0] at entry, [i + 1] after phase i's barrier.
__global__ void __launch_bounds__(kThreads, 1) persistent_kernel(const Phase* phases, int n, unsigned* count,
                                                                 bool empty, bool prefetch, long long* stamps) {
  extern __shared__ __align__(16) float sm[];
  const int cta = blockIdx.x, ncta = gridDim.x;
  stamp_at(stamps, 0);
  for (int i = 0; i < n; ++i) {
    const Phase& p = phases[i];
    if (prefetch) prefetch_next(p, cta, ncta);  // glue phases only carry a target: while their few CTAs work
    run_phase(p, cta, ncta, sm, empty);
    grid_barrier(count, unsigned(ncta) * unsigned(i + 1));
    stamp_at(stamps, i + 1);
  }
}

// ---- mode flow: no grid barrier; a phase's workers wait for the phase before, idle CTAs do not ----
// Whether CTA cta has items in phase p (run_phase's split).
__device__ __forceinline__ bool has_work(const Phase& p, int cta) {
  switch (p.kind) {
    case kNorm: return cta == 0;
    case kGemv: return true;
    case kAttnPart: return cta < p.items;
    default: return cta * kWarps < p.items;
  }
}
// counts[i] reaches ncta once every CTA has passed phase i. A CTA arrives on counts[i] after its
// own share of phases 0..i (program order), so counts[i] == ncta means all of them are written;
// the release (after the CTA barrier and a fence, as grid_barrier) makes them visible to the
// acquire. A phase's workers wait for the phase before, which is the barrier's guarantee for
// them; an idle CTA arrives at once and is not held by a phase it takes no part in.
// stamps as persistent_kernel's (CTA 0 has items in every phase, so it waits for each).
__global__ void __launch_bounds__(kThreads, 1) flow_kernel(const Phase* phases, int n, unsigned* counts, bool prefetch,
                                                           long long* stamps) {
  extern __shared__ __align__(16) float sm[];
  const int cta = blockIdx.x, ncta = gridDim.x;
  stamp_at(stamps, 0);
  for (int i = 0; i < n; ++i) {
    const Phase& p = phases[i];
    if (has_work(p, cta)) {
      if (i > 0) cta_wait_for(counts + i - 1, unsigned(ncta));
      run_phase(p, cta, ncta, sm, false);
    } else if (prefetch) {
      prefetch_next(p, cta, ncta);  // idle here: the next GEMV's rows into L2 while the workers run
    }
    cta_arrive(counts + i);
    stamp_at(stamps, i + 1);
  }
}

__global__ void fill_kernel(bf16* p, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16_rn(scale * (float(h & 0xffff) / 32768.0f - 1.0f));
  }
}

// ---- host ----
struct Model {
  const char* name;
  int H, nh, nkv, I, layers;
};
const Model kModels[] = {{"0.6b", 1024, 16, 8, 3072, 28}, {"1.7b", 2048, 16, 8, 6144, 28}, {"8b", 4096, 32, 8, 12288, 36}};

bf16* alloc_bf(int64_t n, uint32_t seed, float scale) {
  bf16* p = nullptr;
  CK(cudaMalloc(&p, size_t(n) * sizeof(bf16)));
  fill_kernel<<<1024, 256>>>(p, n, seed, scale);
  CK(cudaGetLastError());
  return p;
}
float* alloc_f(int64_t n, float v) {
  std::vector<float> h(size_t(n), v);
  float* p = nullptr;
  CK(cudaMalloc(&p, size_t(n) * sizeof(float)));
  CK(cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return p;
}

struct Setup {
  std::vector<Phase> phases;  // one step
  std::vector<void*> owned;
  bf16* res = nullptr;        // the residual: the step's result
  int64_t H = 0;
  double weight_bytes_layer = 0, kv_bytes_layer = 0;
};

// The step's phases over every layer (weights of each layer apart, so a step streams them all);
// with_prefetch adds the prefetch targets.
Setup build(const Model& m, int ctx) {
  Setup s;
  const int qkvN = (m.nh + 2 * m.nkv) * kHD, pos = ctx - 1, parts = pos / kPart + 1;
  auto keep = [&](void* p) { s.owned.push_back(p); return p; };
  s.H = m.H;
  s.res = static_cast<bf16*>(keep(alloc_bf(m.H, 7, 1.0f)));
  bf16* delta = static_cast<bf16*>(keep(alloc_bf(m.H, 8, 0.0f)));
  bf16* h = static_cast<bf16*>(keep(alloc_bf(std::max(m.H, m.I), 9, 0.0f)));
  bf16* qkv = static_cast<bf16*>(keep(alloc_bf(qkvN, 10, 0.0f)));
  bf16* q = static_cast<bf16*>(keep(alloc_bf(m.nh * kHD, 11, 0.0f)));
  bf16* att = static_cast<bf16*>(keep(alloc_bf(m.nh * kHD, 12, 0.0f)));
  bf16* mlp = static_cast<bf16*>(keep(alloc_bf(m.I, 13, 0.0f)));
  float* states = nullptr;
  CK(cudaMalloc(&states, size_t(m.nh) * kMaxParts * (4 + kHD) * sizeof(float)));
  keep(states);
  std::vector<float> rope(128);
  for (int j = 0; j < 64; ++j) {
    const double a = pos / std::pow(1e6, 2.0 * j / 128.0);
    rope[j] = float(std::cos(a));
    rope[64 + j] = float(std::sin(a));
  }
  float* rope_d = static_cast<float*>(keep(alloc_f(128, 0.0f)));
  CK(cudaMemcpy(rope_d, rope.data(), 128 * sizeof(float), cudaMemcpyHostToDevice));
  float* nw = static_cast<float*>(keep(alloc_f(std::max(m.H, 2 * kHD), 1.0f)));
  const float wscale = 1.0f / std::sqrt(float(m.H));
  for (int l = 0; l < m.layers; ++l) {
    const uint32_t seed = 100u + 10u * l;
    bf16* wqkv = static_cast<bf16*>(keep(alloc_bf(int64_t(qkvN) * m.H, seed, wscale)));
    bf16* wo = static_cast<bf16*>(keep(alloc_bf(int64_t(m.H) * m.nh * kHD, seed + 1, wscale)));
    bf16* wgu = static_cast<bf16*>(keep(alloc_bf(int64_t(2) * m.I * m.H, seed + 2, wscale)));
    bf16* wd = static_cast<bf16*>(keep(alloc_bf(int64_t(m.H) * m.I, seed + 3, 1.0f / std::sqrt(float(m.I)))));
    bf16* kc = static_cast<bf16*>(keep(alloc_bf(int64_t(m.nkv) * ctx * kHD, seed + 4, 1.0f)));
    bf16* vc = static_cast<bf16*>(keep(alloc_bf(int64_t(m.nkv) * ctx * kHD, seed + 5, 1.0f)));
    Phase base{};
    base.nh = m.nh, base.nkv = m.nkv, base.pos = pos, base.ctx = ctx, base.kc = kc, base.vc = vc;
    base.states = states, base.rope = rope_d, base.nw = nw;
    auto gemv = [&](const bf16* w, const bf16* in, bf16* out, int N, int K, int silu) {
      Phase p = base;
      p.kind = kGemv, p.w = w, p.in = in, p.out = out, p.N = N, p.K = K, p.silu = silu, p.items = N;
      return p;
    };
    Phase n1 = base;  // add (the last layer's down output; none at layer 0) + RMSNorm
    n1.kind = kNorm, n1.items = 1, n1.res = s.res, n1.in2 = l == 0 ? nullptr : delta, n1.out = h, n1.K = m.H;
    Phase post = base;
    post.kind = kQkvPost, post.items = m.nh + 2 * m.nkv, post.in = qkv, post.out = q;
    Phase att_p = base;
    att_p.kind = kAttnPart, att_p.items = m.nkv * parts, att_p.in = q;
    Phase mrg = base;
    mrg.kind = kMerge, mrg.items = m.nh, mrg.out = att;
    Phase n2 = base;
    n2.kind = kNorm, n2.items = 1, n2.res = s.res, n2.in2 = delta, n2.out = h, n2.K = m.H;
    const Phase g_qkv = gemv(wqkv, h, qkv, qkvN, m.H, 0);
    const Phase g_o = gemv(wo, att, delta, m.H, m.nh * kHD, 0);
    const Phase g_gu = gemv(wgu, h, mlp, m.I, m.H, 1);
    const Phase g_d = gemv(wd, mlp, delta, m.H, m.I, 0);
    for (const Phase& p : {n1, g_qkv, post, att_p, mrg, g_o, n2, g_gu, g_d}) s.phases.push_back(p);
    s.weight_bytes_layer = 2.0 * (double(qkvN) * m.H + double(m.H) * m.nh * kHD + 2.0 * m.I * m.H + double(m.H) * m.I);
    s.kv_bytes_layer = 2.0 * 2.0 * m.nkv * double(ctx) * kHD;
  }
  Phase fin{};  // the last down output into the residual
  fin.kind = kNorm, fin.items = 1, fin.res = s.res, fin.in2 = delta, fin.out = h, fin.K = m.H, fin.nw = nw;
  s.phases.push_back(fin);
  CK(cudaDeviceSynchronize());
  return s;
}

// Prefetch targets: the first glue phase after a GEMV (or the step's first phase) brings the next
// GEMV's first rows into L2, up to pf_mb (a GEMV right after a GEMV gets none: no glue between).
std::vector<Phase> with_prefetch(std::vector<Phase> phases, int sms, double pf_mb) {
  const int tw = sms * kWarps;
  bool armed = true;  // no prefetch issued yet for the next GEMV
  for (size_t i = 0; i < phases.size(); ++i) {
    Phase& p = phases[i];
    p.pf = nullptr;
    if (p.kind == kGemv) {
      armed = true;
      continue;
    }
    if (!armed) continue;
    for (size_t j = i + 1; j < phases.size(); ++j) {
      const Phase& g = phases[j];
      if (g.kind != kGemv) continue;
      // A trip of gemv()'s loop reads two rows a warp; a budget under one trip's bytes prefetches
      // the first bytes of each of its rows (a warp reads a row in ascending k).
      const double budget = pf_mb * 1048576.0, row_bytes = 2.0 * g.K, trip_bytes = double(tw) * 2.0 * row_bytes;
      const int trips = (g.N + (g.silu ? tw : 2 * tw) - 1) / (g.silu ? tw : 2 * tw);
      p.pf_iters = budget >= trip_bytes ? std::min(trips, int(budget / trip_bytes)) : 1;
      p.pf_bytes = budget >= trip_bytes ? int(row_bytes) : int(budget / (double(tw) * 2.0)) / 16 * 16;
      p.pf = p.pf_bytes > 0 ? g.w : nullptr;
      p.pf_N = g.N, p.pf_K = g.K, p.pf_silu = g.silu;
      armed = false;
      break;
    }
  }
  return phases;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// A mode's name read once: persistent or launch, with or without work / PDL / prefetch budget.
struct Mode {
  std::string name;
  bool persistent, flow, empty, gemv_only, pdl;
  double pf_mb;  // persistent_pf<MB> / flow_pf<MB>; < 0: no prefetch
  explicit Mode(const std::string& n)
      : name(n), persistent(n.rfind("persistent", 0) == 0), flow(n.rfind("flow", 0) == 0),
        empty(n.find("empty") != std::string::npos),
        gemv_only(n.find("gemv_only") != std::string::npos), pdl(n.find("nopdl") == std::string::npos),
        pf_mb(n.find("_pf") != std::string::npos ? std::atof(n.c_str() + n.find("_pf") + 3) : -1.0) {}
  // The persistent kernel records its barrier times (the phase split) for the full phase table only.
  // flow: CTA 0's time after its own share of each phase (it has items in all of them).
  bool stamps() const { return (persistent || flow) && !gemv_only; }
};

struct Result {
  std::string mode;
  double step_us = 0, min_us = 0;
  bool same_bits = true;
  std::vector<double> kind_us;  // persistent: time of each phase kind in one step (barrier included)
};

int grid_of(const Phase& p, int sms) {
  switch (p.kind) {
    case kNorm: return 1;
    case kGemv: return sms;
    case kAttnPart: return std::min(p.items, sms);
    default: return std::max(1, std::min(sms, (p.items + kWarps - 1) / kWarps));
  }
}

class Runner {
 public:
  Runner(Setup& s, int sms, int steps) : s_(s), sms_(sms), steps_(steps) {
    CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CK(cudaMalloc(&phases_d_, s.phases.size() * sizeof(Phase)));
    CK(cudaMemcpy(phases_d_, s.phases.data(), s.phases.size() * sizeof(Phase), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&count_, sizeof(unsigned)));
    CK(cudaMalloc(&counts_, s.phases.size() * sizeof(unsigned)));
    CK(cudaMalloc(&stamps_, (s.phases.size() + 1) * sizeof(long long)));
    CK(cudaMalloc(&res0_, size_t(s.H) * sizeof(bf16)));
    CK(cudaMemcpy(res0_, s.res, size_t(s.H) * sizeof(bf16), cudaMemcpyDeviceToDevice));
    CK(cudaFuncSetAttribute(phase_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
    CK(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
    CK(cudaFuncSetAttribute(flow_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
    CK(cudaEventCreate(&e0_));
    CK(cudaEventCreate(&e1_));
  }
  ~Runner() {
    cudaFree(phases_d_);
    cudaFree(count_);
    cudaFree(counts_);
    cudaFree(stamps_);
    cudaFree(res0_);
    cudaFree(gemv_d_);
    for (auto& t : pf_tables_) cudaFree(t.second);
    for (auto& g : graphs_) cudaGraphExecDestroy(g.second);
    cudaStreamDestroy(stream_);
  }
  // The residual back to its start, one step, its bits (the comparison of modes).
  std::vector<uint16_t> one_step(const Mode& mode) {
    CK(cudaMemcpyAsync(s_.res, res0_, size_t(s_.H) * sizeof(bf16), cudaMemcpyDeviceToDevice, stream_));
    step(mode, false);
    std::vector<uint16_t> out(size_t(s_.H));
    CK(cudaStreamSynchronize(stream_));
    CK(cudaMemcpy(out.data(), s_.res, out.size() * 2, cudaMemcpyDeviceToHost));
    return out;
  }
  Result time(const Mode& mode, const std::vector<uint16_t>& ref) {
    Result r;
    r.mode = mode.name;
    if (!ref.empty()) r.same_bits = one_step(mode) == ref;
    for (int i = 0; i < 3; ++i) step(mode, false);
    std::vector<double> t;
    for (int i = 0; i < steps_; ++i) {
      CK(cudaEventRecord(e0_, stream_));
      step(mode, i + 1 == steps_);
      CK(cudaEventRecord(e1_, stream_));
      CK(cudaEventSynchronize(e1_));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0_, e1_));
      t.push_back(1000.0 * ms);
    }
    r.step_us = median(t);
    r.min_us = *std::min_element(t.begin(), t.end());
    if (mode.stamps()) {
      std::vector<long long> st(s_.phases.size() + 1);
      CK(cudaMemcpy(st.data(), stamps_, st.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      r.kind_us.assign(kKinds, 0.0);
      for (size_t i = 0; i < s_.phases.size(); ++i) r.kind_us[s_.phases[i].kind] += double(st[i + 1] - st[i]) / 1000.0;
    }
    return r;
  }

 private:
  void step(const Mode& mode, bool stamp) {
    bool empty = mode.empty;
    const bool gemv_only = mode.gemv_only;
    if (mode.flow) {
      int n = int(s_.phases.size());
      CK(cudaMemsetAsync(counts_, 0, size_t(n) * sizeof(unsigned), stream_));
      bool prefetch = mode.pf_mb >= 0;
      const Phase* ph = prefetch ? prefetch_table(mode.pf_mb) : phases_d_;
      long long* stamps = stamp && mode.stamps() ? stamps_ : nullptr;
      void* args[] = {&ph, &n, &counts_, &prefetch, &stamps};
      CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(flow_kernel), dim3(sms_), dim3(kThreads), args, kSmem,
                                     stream_));
      CK(cudaGetLastError());
      return;
    }
    if (mode.persistent) {
      CK(cudaMemsetAsync(count_, 0, sizeof(unsigned), stream_));
      bool prefetch = mode.pf_mb >= 0;  // persistent_pf<MB>: prefetch up to MB a GEMV
      const Phase* ph = prefetch ? prefetch_table(mode.pf_mb) : phases_d_;
      int n = int(s_.phases.size());
      if (gemv_only) {
        ensure_gemv_table();
        ph = gemv_d_;
        n = int(gemv_.size());
      }
      long long* stamps = stamp && mode.stamps() ? stamps_ : nullptr;
      void* args[] = {&ph, &n, &count_, &empty, &prefetch, &stamps};
      CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_kernel), dim3(sms_), dim3(kThreads), args,
                                     kSmem, stream_));
      CK(cudaGetLastError());
      return;
    }
    const bool pdl = mode.pdl;
    const std::string& key = mode.name;
    auto it = std::find_if(graphs_.begin(), graphs_.end(), [&](const auto& g) { return g.first == key; });
    if (it == graphs_.end()) {
      cudaGraph_t g;
      if (gemv_only) ensure_gemv_table();  // (allocates: not while the stream captures)
      const Phase* ph = gemv_only ? gemv_d_ : phases_d_;
      std::vector<Phase>* list = gemv_only ? &gemv_ : &s_.phases;
      CK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < int(list->size()); ++i) {
        const int grid = grid_of((*list)[i], sms_);
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(kThreads);
        cfg.dynamicSmemBytes = kSmem;
        cfg.stream = stream_;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = pdl ? 1 : 0;
        CK(cudaLaunchKernelEx(&cfg, phase_kernel, ph, i, grid, empty, pdl));
      }
      CK(cudaStreamEndCapture(stream_, &g));
      cudaGraphExec_t ge;
      CK(cudaGraphInstantiate(&ge, g, 0));
      graphs_.push_back({key, ge});
      it = graphs_.end() - 1;
    }
    CK(cudaGraphLaunch(it->second, stream_));
  }
  const Phase* prefetch_table(double mb) {
    for (const auto& t : pf_tables_)
      if (t.first == mb) return t.second;
    const std::vector<Phase> ph = with_prefetch(s_.phases, sms_, mb);
    Phase* d = nullptr;
    CK(cudaMalloc(&d, ph.size() * sizeof(Phase)));
    CK(cudaMemcpy(d, ph.data(), ph.size() * sizeof(Phase), cudaMemcpyHostToDevice));
    pf_tables_.push_back({mb, d});
    return d;
  }
  void ensure_gemv_table() {
    if (gemv_d_) return;
    for (const Phase& p : s_.phases)
      if (p.kind == kGemv) {
        gemv_.push_back(p);
        gemv_.back().pf = nullptr;
      }
    CK(cudaMalloc(&gemv_d_, gemv_.size() * sizeof(Phase)));
    CK(cudaMemcpy(gemv_d_, gemv_.data(), gemv_.size() * sizeof(Phase), cudaMemcpyHostToDevice));
  }
  Setup& s_;
  int sms_, steps_;
  cudaStream_t stream_{};
  Phase* phases_d_ = nullptr;
  Phase* gemv_d_ = nullptr;
  std::vector<Phase> gemv_;
  unsigned* count_ = nullptr;
  unsigned* counts_ = nullptr;  // flow: one counter a phase
  long long* stamps_ = nullptr;
  bf16* res0_ = nullptr;
  cudaEvent_t e0_{}, e1_{};
  std::vector<std::pair<std::string, cudaGraphExec_t>> graphs_;
  std::vector<std::pair<double, Phase*>> pf_tables_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, models = "0.6b,1.7b,8b";
  int steps = 30, ctx = 1024;
  std::string pf_list = "8,24,40";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "persistent_probe: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--json") json_path = next();
    else if (a == "--models") models = next();
    else if (a == "--steps") steps = std::max(3, std::atoi(next().c_str()));
    else if (a == "--pf-mb") pf_list = next();
    else if (a == "--ctx") ctx = std::atoi(next().c_str());
    else {
      std::fprintf(stderr,
                   "persistent_probe: unknown argument %s (usage: persistent_probe [--json FILE] [--models "
                   "0.6b,1.7b,8b] [--steps N] [--pf-mb 8,24,40] [--ctx C])\n",
                   a.c_str());
      return 2;
    }
  }
  if (ctx < kPart || ctx > kPart * kMaxParts) {
    std::fprintf(stderr, "persistent_probe: --ctx must be %d..%d\n", kPart, kPart * kMaxParts);
    return 2;
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 9) {
    std::fprintf(stderr, "persistent_probe: needs sm_90 (found %s, sm_%d%d)\n", prop.name, prop.major, prop.minor);
    return 1;
  }
  int per_sm = 0;
  CK(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_kernel, kThreads, kSmem));
  if (per_sm < 1) {
    std::fprintf(stderr, "persistent_probe: the persistent kernel does not fit an SM\n");
    return 1;
  }
  const int sms = prop.multiProcessorCount;
  std::ostringstream js;
  js << "{\"tool\":\"persistent_probe\",\"gpu\":\"" << prop.name << "\",\"sms\":" << sms << ",\"ctx\":" << ctx
     << ",\"steps\":" << steps << ",\"pf_mb\":\"" << pf_list << "\"" << ",\"bandwidth_bound_tbs\":4.3,\"models\":[";
  bool first_model = true;
  std::stringstream ms(models);
  std::string name;
  while (std::getline(ms, name, ',')) {
    const Model* m = nullptr;
    for (const Model& k : kModels)
      if (name == k.name) m = &k;
    if (!m) {
      std::fprintf(stderr, "persistent_probe: unknown model %s (0.6b, 1.7b, 8b)\n", name.c_str());
      return 2;
    }
    Setup s = build(*m, ctx);
    const double bound_us = m->layers * (s.weight_bytes_layer + s.kv_bytes_layer) / 4.3e12 * 1e6;
    const double gemv_bound_us = m->layers * s.weight_bytes_layer / 4.3e12 * 1e6;
    std::printf("%s: %d layers, %.1f MB weights + %.1f MB KV a layer; bound %.1f us a step (%.2f a layer)\n",
                m->name, m->layers, s.weight_bytes_layer / 1e6, s.kv_bytes_layer / 1e6, bound_us,
                bound_us / m->layers);
    Runner r(s, sms, steps);
    const std::vector<uint16_t> ref = r.one_step(Mode("launch"));
    const std::vector<uint16_t> ref_g = r.one_step(Mode("launch_gemv_only"));
    std::vector<Result> rs;
    std::vector<std::string> modes = {"launch", "launch_nopdl", "persistent"};
    std::stringstream pl(pf_list);
    std::vector<std::string> mbs;
    for (std::string mb; std::getline(pl, mb, ',');) mbs.push_back(mb);
    for (const std::string& mb : mbs) modes.push_back("persistent_pf" + mb);
    modes.push_back("flow");
    for (const std::string& mb : mbs) modes.push_back("flow_pf" + mb);
    for (const char* md : {"launch_empty", "persistent_empty", "launch_gemv_only", "persistent_gemv_only"})
      modes.push_back(md);
    for (const std::string& name : modes) {
      const Mode md(name);
      const bool g = md.gemv_only;
      rs.push_back(r.time(md, md.empty ? std::vector<uint16_t>{} : g ? ref_g : ref));
      const Result& x = rs.back();
      std::printf("  %-22s %9.1f us a step (min %9.1f), %7.2f a layer, x bound %.2f%s\n", x.mode.c_str(), x.step_us,
                  x.min_us, x.step_us / m->layers, x.step_us / (g ? gemv_bound_us : bound_us),
                  x.same_bits ? "" : "  [BITS DIFFER from launch]");
      if (!x.kind_us.empty()) {
        std::printf(md.flow ? "    one step by phase kind (CTA 0's share, its waits included):"
                            : "    one step by phase kind (barrier included):");
        for (int k = 0; k < kKinds; ++k) std::printf(" %s %.1f", kind_name(k), x.kind_us[k]);
        std::printf("\n");
      }
    }
    js << (first_model ? "" : ",") << "{\"model\":\"" << m->name << "\",\"layers\":" << m->layers
       << ",\"weight_bytes_layer\":" << s.weight_bytes_layer << ",\"kv_bytes_layer\":" << s.kv_bytes_layer
       << ",\"bound_us\":" << bound_us << ",\"gemv_bound_us\":" << gemv_bound_us << ",\"modes\":[";
    for (size_t i = 0; i < rs.size(); ++i) {
      js << (i ? "," : "") << "{\"mode\":\"" << rs[i].mode << "\",\"step_us_median\":" << rs[i].step_us
         << ",\"step_us_min\":" << rs[i].min_us << ",\"same_bits_as_launch\":" << (rs[i].same_bits ? "true" : "false");
      if (!rs[i].kind_us.empty()) {
        js << ",\"phase_kind_us\":{";
        for (int k = 0; k < kKinds; ++k) js << (k ? "," : "") << "\"" << kind_name(k) << "\":" << rs[i].kind_us[k];
        js << "}";
      }
      js << "}";
    }
    js << "]}";
    first_model = false;
    for (void* p : s.owned) cudaFree(p);
  }
  js << "]}\n";
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "persistent_probe: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::fputs(js.str().c_str(), f);
    std::fclose(f);
  }
  return 0;
}
