// Paged causal attention (and the KV-cache write) under the contract: one kernel for prefill,
// chunked prefill and decode.
//
// Per (token, head) the arithmetic is cpu::attention's: keys in tiles of kAttnTile (64) absolute
// positions; per tile s = dot(q, k) * scale, m' = max(m, max s), a = (m == -inf) ? 0 : exp(m - m'),
// p = round(exp(s - m')) (rounded before P·V), l = l * a + (sum of the tile's p), acc = acc * a +
// (the tile's P·V from 0), all with the reference's exp_f32 and no FMA. The dot products and the
// tile's P·V run on tensor cores (mma.sync m16n8k16, k ascending in steps of 16), so those sums
// are grouped differently from the CPU's 16 lanes, but identically for every batch.
// Split-KV: keys are grouped in parts of `part_tokens` positions (a fixed size in tokens, never a
// fixed count). A token whose keys span several parts gets one (m, l, acc) state per part; the
// merge folds them in part order: m' = max(m, m_i), l = l·e^(m-m') + l_i·e^(m_i-m'), acc likewise.
// The rows of one CTA are (query token, head of the kv group) pairs of one sequence; rows never
// interact in an MMA, and a row skips tiles past its own position, so a row's result depends on
// its q and on K/V at positions 0..pos only: not on which other rows share the CTA.
#include <algorithm>
#include <string>

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
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <int HD> struct Smem {
  static constexpr int kStride = HD + 8;  // padded rows: conflict-free fragment loads
  static constexpr size_t kTileElems = size_t(kTile) * kStride;
  static constexpr size_t bytes(size_t elem) { return 4 * kTileElems * elem; }  // K, V x 2 stages
};

// Loads keys [t0, t0 + 64) of the kv head into smem; positions >= limit are zero-filled (never
// read from the cache: they may not exist, and zeros keep masked products exactly 0).
template <typename T, int HD>
__device__ __forceinline__ void load_tile(T* ks, T* vs, const T* kc, const T* vc, const int32_t* bt, int t0, int limit,
                                          int block_size, int kv_heads, int kvh) {
  constexpr int kChunks = HD / 8;
  for (int idx = threadIdx.x; idx < kTile * kChunks; idx += kThreads) {
    const int key = idx / kChunks, c = idx % kChunks;
    const int pos = t0 + key;
    T* kd = ks + key * Smem<HD>::kStride + c * 8;
    T* vd = vs + key * Smem<HD>::kStride + c * 8;
    if (pos < limit) {
      const int64_t slot = int64_t(bt[pos / block_size]) * block_size + pos % block_size;
      const int64_t off = (slot * kv_heads + kvh) * HD + c * 8;
      cp_async16(kd, kc + off);
      cp_async16(vd, vc + off);
    } else {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
    }
  }
}

template <typename T, int HD>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnArgs a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const AttnItem item = a.items[blockIdx.x];
  const int kvh = blockIdx.y;
  const int group = a.heads / a.kv_heads;
  const int R = item.count * group;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;
  const T* kc = static_cast<const T*>(a.k_cache);
  const T* vc = static_cast<const T*>(a.v_cache);
  const int32_t* bt = a.block_tables + item.bt_offset;

  int maxpos = 0;
  for (int i = 0; i < item.count; ++i) maxpos = max(maxpos, a.positions[item.first + i]);
  const int p0 = item.part * a.part_tokens;
  const int p1 = min(p0 + a.part_tokens, maxpos + 1);  // keys this CTA reads: [p0, p1)

  // This thread's two rows (gid and gid + 8 of the warp's 16).
  int pos[2], token[2], head[2];
  bool valid[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = warp * 16 + h * 8 + gid;
    valid[h] = r < R;
    token[h] = item.first + (valid[h] ? r / group : 0);
    head[h] = kvh * group + (valid[h] ? r % group : 0);
    pos[h] = valid[h] ? a.positions[token[h]] : -1;
  }
  const bool warp_active = warp * 16 < R;

  // Q fragments (A operand), k-steps of 16 over head_dim.
  uint32_t qa[HD / 16][4];
  {
    const T* q = static_cast<const T*>(a.q);
    const int64_t ld = a.q_ld ? a.q_ld : int64_t(a.heads) * HD;
    const T* qr0 = q + int64_t(token[0]) * ld + int64_t(head[0]) * HD;
    const T* qr1 = q + int64_t(token[1]) * ld + int64_t(head[1]) * HD;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      const int d = ks * 16 + tig * 2;
      qa[ks][0] = valid[0] ? *reinterpret_cast<const uint32_t*>(qr0 + d) : 0u;
      qa[ks][1] = valid[1] ? *reinterpret_cast<const uint32_t*>(qr1 + d) : 0u;
      qa[ks][2] = valid[0] ? *reinterpret_cast<const uint32_t*>(qr0 + d + 8) : 0u;
      qa[ks][3] = valid[1] ? *reinterpret_cast<const uint32_t*>(qr1 + d + 8) : 0u;
    }
  }

  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  float acc[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[n][c] = 0.0f;

  const int ntiles = p1 > p0 ? (p1 - p0 + kTile - 1) / kTile : 0;
  if (ntiles > 0)
    load_tile<T, HD>(smem, smem + Smem<HD>::kTileElems, kc, vc, bt, p0, p1, a.block_size, a.kv_heads, kvh);
  cp_async_commit();
  for (int it = 0; it < ntiles; ++it) {
    const int t0 = p0 + it * kTile;
    const int buf = it & 1;
    if (it + 1 < ntiles) {
      T* nb = smem + size_t(buf ^ 1) * 2 * Smem<HD>::kTileElems;
      load_tile<T, HD>(nb, nb + Smem<HD>::kTileElems, kc, vc, bt, t0 + kTile, p1, a.block_size, a.kv_heads, kvh);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // this tile's K/V are in smem for every warp
    const T* ks = smem + size_t(buf) * 2 * Smem<HD>::kTileElems;
    const T* vs = ks + Smem<HD>::kTileElems;
    if (warp_active) {
      // S = Q K^T for 8 groups of 8 keys.
      float s[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int c = 0; c < 4; ++c) s[nt][c] = 0.0f;
        const T* krow = ks + (nt * 8 + gid) * Smem<HD>::kStride + tig * 2;
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) {
          const uint32_t b0 = *reinterpret_cast<const uint32_t*>(krow + kk * 16);
          const uint32_t b1 = *reinterpret_cast<const uint32_t*>(krow + kk * 16 + 8);
          mma16816<T>(s[nt], qa[kk], b0, b1);
        }
      }
      // Online softmax per row (h = 0: row gid, h = 1: row gid + 8).
      float alpha[2];
      bool active[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        active[h] = valid[h] && t0 <= pos[h];  // a row skips tiles past its own position
        float mt = kNegInf;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int kp = t0 + nt * 8 + tig * 2 + e;
            const float v = kp <= pos[h] ? fmul(s[nt][2 * h + e], a.scale) : kNegInf;
            s[nt][2 * h + e] = v;
            mt = fmaxf(mt, v);
          }
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        const float mn = active[h] ? fmaxf(m[h], mt) : m[h];
        alpha[h] = (m[h] == kNegInf) ? 0.0f : exp_f32(fsub(m[h], mn));
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float v = s[nt][2 * h + e];
            const float p = (active[h] && v != kNegInf) ? round_as<T>(exp_f32(fsub(v, mn))) : 0.0f;
            s[nt][2 * h + e] = p;
            sum = fadd(sum, p);
          }
        // Quad sum in a fixed tree; every lane of the quad ends with the same bits.
        sum = fadd(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
        sum = fadd(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
        if (active[h]) {
          l[h] = fadd(fmul(l[h], alpha[h]), sum);
          m[h] = mn;
        }
      }
      // O_tile = P V (from 0), then acc = acc * a + O_tile.
      float o[HD / 8][4];
#pragma unroll
      for (int n = 0; n < HD / 8; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) o[n][c] = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t pa[4] = {pack2<T>(s[2 * j][0], s[2 * j][1]), pack2<T>(s[2 * j][2], s[2 * j][3]),
                                pack2<T>(s[2 * j + 1][0], s[2 * j + 1][1]), pack2<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
        const int mi = lane >> 3, ri = lane & 7;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt += 2) {
          const T* src = vs + (j * 16 + (mi & 1) * 8 + ri) * Smem<HD>::kStride + (nt + (mi >> 1)) * 8;
          uint32_t b0, b1, b2, b3;
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                       : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                       : "r"(smem_addr(src)));
          mma16816<T>(o[nt], pa, b0, b1);
          mma16816<T>(o[nt + 1], pa, b2, b3);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (active[h])
#pragma unroll
          for (int n = 0; n < HD / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) acc[n][2 * h + e] = fadd(fmul(acc[n][2 * h + e], alpha[h]), o[n][2 * h + e]);
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

  // A single-part token is finished here; otherwise this part's state goes to the merge.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!valid[h] || pos[h] < p0) continue;
    const int parts = pos[h] / a.part_tokens + 1;
    if (parts == 1) {
      T* o = static_cast<T*>(a.out) + (int64_t(token[h]) * a.heads + head[h]) * HD;
#pragma unroll
      for (int n = 0; n < HD / 8; ++n) {
        const int d = n * 8 + tig * 2;
        *reinterpret_cast<uint32_t*>(o + d) = pack2<T>(fdiv(acc[n][2 * h], l[h]), fdiv(acc[n][2 * h + 1], l[h]));
      }
    } else {
      const int64_t st = int64_t(a.state_base[token[h]] + item.part) * a.heads + head[h];
      float* sp = a.states + st * (HD + 4);
      if (tig == 0) {
        sp[0] = m[h];
        sp[1] = l[h];
      }
#pragma unroll
      for (int n = 0; n < HD / 8; ++n) {
        const int d = n * 8 + tig * 2;
        *reinterpret_cast<float2*>(sp + 4 + d) = make_float2(acc[n][2 * h], acc[n][2 * h + 1]);
      }
    }
  }
}

// One warp per (multi-part token, head): fold the part states in part order, then out = acc / l.
template <typename T, int HD>
__global__ void merge_kernel(AttnArgs a, const int32_t* __restrict__ tokens, const int32_t* __restrict__ num_parts,
                             int count) {
  const int w = blockIdx.x * 4 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (w >= count * a.heads) return;
  const int i = w / a.heads, head = w % a.heads;
  const int token = tokens[i];
  const int parts = num_parts[i];
  constexpr int kPer = (HD + 31) / 32;
  const float* st = a.states + (int64_t(a.state_base[token]) * a.heads + head) * (HD + 4);
  const int64_t stride = int64_t(a.heads) * (HD + 4);
  float m = st[0], l = st[1];
  float acc[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) acc[c] = (lane + 32 * c < HD) ? st[4 + lane + 32 * c] : 0.0f;
  for (int p = 1; p < parts; ++p) {
    const float* sp = st + p * stride;
    const float mi = sp[0], li = sp[1];
    const float mn = fmaxf(m, mi);
    const float fa = exp_f32(fsub(m, mn)), fb = exp_f32(fsub(mi, mn));
    l = fadd(fmul(l, fa), fmul(li, fb));
#pragma unroll
    for (int c = 0; c < kPer; ++c)
      if (lane + 32 * c < HD) acc[c] = fadd(fmul(acc[c], fa), fmul(sp[4 + lane + 32 * c], fb));
    m = mn;
  }
  T* o = static_cast<T*>(a.out) + (int64_t(token) * a.heads + head) * HD;
#pragma unroll
  for (int c = 0; c < kPer; ++c)
    if (lane + 32 * c < HD) o[lane + 32 * c] = from_f<T>(fdiv(acc[c], l));
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
void launch_attention(const AttnArgs& a, cudaStream_t stream) {
  const size_t smem = Smem<HD>::bytes(sizeof(T));
  static bool configured = false;  // per instantiation; the attribute is per kernel
  if (!configured) {
    VB_CUDA(cudaFuncSetAttribute(attention_kernel<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    configured = true;
  }
  dim3 grid(a.num_items, a.kv_heads);
  attention_kernel<T, HD><<<grid, kThreads, smem, stream>>>(a);
  VB_CUDA_LAUNCHED();
}

template <typename T>
void dispatch_hd(const AttnArgs& a, cudaStream_t stream) {
  switch (a.head_dim) {
    case 16: return launch_attention<T, 16>(a, stream);
    case 32: return launch_attention<T, 32>(a, stream);
    case 64: return launch_attention<T, 64>(a, stream);
    case 128: return launch_attention<T, 128>(a, stream);
    case 256: return launch_attention<T, 256>(a, stream);
    default: throw Error("cuda attention: head_dim " + std::to_string(a.head_dim) + " is not 16, 32, 64, 128 or 256");
  }
}

template <typename T, int HD>
void launch_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* parts, int count, cudaStream_t stream) {
  const int warps = count * a.heads;
  merge_kernel<T, HD><<<ceil_div(warps, 4), 128, 0, stream>>>(a, tokens, parts, count);
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
                        int heads_per_kv, int part_tokens, int max_states) {
  if (heads_per_kv > kRows) throw Error("cuda attention: more than 64 query heads per kv head");
  if (part_tokens <= 0 || part_tokens % kTile) throw Error("cuda attention: part size must be a multiple of 64");
  AttnPlan plan;
  plan.state_base.assign(size_t(T), -1);
  const int qtile = attention_query_tile(heads_per_kv);
  AttnLaunch cur;
  int states = 0;
  int t = 0;
  while (t < T) {
    // A query tile: up to qtile consecutive tokens of one sequence.
    int end = t + 1;
    while (end < T && end - t < qtile && token_seq[end] == token_seq[t]) ++end;
    int maxpos = 0, tile_states = 0;
    for (int i = t; i < end; ++i) {
      maxpos = std::max(maxpos, positions[i]);
      const int parts = positions[i] / part_tokens + 1;
      if (parts > 1) tile_states += parts;
    }
    if (tile_states > max_states) throw Error("cuda attention: workspace too small for one query tile");
    if (states + tile_states > max_states) {  // start a new launch group
      cur.item_end = int(plan.items.size());
      cur.merge_end = int(plan.merge_tokens.size());
      plan.launches.push_back(cur);
      cur = AttnLaunch{cur.item_end, cur.item_end, cur.merge_end, cur.merge_end};
      states = 0;
    }
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
    const int nparts = maxpos / part_tokens + 1;
    for (int p = 0; p < nparts; ++p) plan.items.push_back(AttnItem{t, end - t, p, seq_bt_offset[token_seq[t]]});
    t = end;
  }
  cur.item_end = int(plan.items.size());
  cur.merge_end = int(plan.merge_tokens.size());
  if (cur.item_end > cur.item_begin) plan.launches.push_back(cur);
  return plan;
}

void attention(const AttnArgs& a, DType t, cudaStream_t stream) {
  if (a.num_items <= 0) return;
  if (t == DType::BF16) dispatch_hd<bf16>(a, stream);
  else if (t == DType::F16) dispatch_hd<f16>(a, stream);
  else throw Error("cuda attention: activations must be bf16 or fp16");
}

void attention_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* num_parts, int count, DType t,
                     cudaStream_t stream) {
  if (count <= 0) return;
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
