// Paged KV cache write and causal attention (ops.h gives the exact reduction order).
// Work is split over (token, kv head) pairs; each query row's reduction runs whole on one thread,
// tile by tile at absolute positions, so chunking, batching and thread count change no bit.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/test_flags.h"
#include "kernels/ops.h"

namespace verbatim::cpu {
namespace {

void store_row(DType t, const float* src, void* dst, int64_t n) {
  if (t == DType::F32) {
    std::copy(src, src + n, static_cast<float*>(dst));
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
}

// One thread's working set for the query heads that share one kv head.
struct GroupState {
  int group, head_dim;
  const void* k_rows[kAttnTile];  // the tile's K and V rows, in the cache (any storage dtype)
  const void* v_rows[kAttnTile];
  std::vector<float> m, l;        // [group] running max and sum
  std::vector<float> acc;         // [group, head_dim]
  std::vector<float> s, p, pv;    // [kAttnTile] scores and probabilities, [head_dim] tile P·V
  GroupState(int g, int d)
      : group(g), head_dim(d), m(g), l(g), acc(size_t(g) * d), s(kAttnTile), p(kAttnTile), pv(d) {}
};

void attend_group(const IsaKernels& isa_k, const float* q, const PagedKV& kv, int kv_head, int32_t pos,
                  const int32_t* block_table, float scale, DType act, GroupState& st, float* out) {
  const int D = st.head_dim, G = st.group;
  const size_t elem = dtype_size(kv.dtype);
  const size_t slot_stride = size_t(kv.num_kv_heads) * D;
  std::fill(st.m.begin(), st.m.end(), -INFINITY);
  std::fill(st.l.begin(), st.l.end(), 0.0f);
  std::fill(st.acc.begin(), st.acc.end(), 0.0f);
  // Tiles start at absolute multiples of kAttnTile: the same cut whether the keys came from this
  // call, an earlier chunk, or another sequence's cached prefix.
  for (int32_t t0 = 0; t0 <= pos; t0 += kAttnTile) {
    const int n = std::min<int32_t>(kAttnTile, pos + 1 - t0);
    for (int j = 0; j < n; ++j) {
      const int32_t p = t0 + j;
      const int64_t slot = int64_t(block_table[p / kv.block_size]) * kv.block_size + p % kv.block_size;
      const size_t off = (size_t(slot) * slot_stride + size_t(kv_head) * D) * elem;
      st.k_rows[j] = static_cast<const char*>(kv.k) + off;
      st.v_rows[j] = static_cast<const char*>(kv.v) + off;
    }
    for (int g = 0; g < G; ++g) {
      isa_k.scores(q + size_t(g) * D, st.k_rows, kv.dtype, n, D, scale, st.s.data());
      float mt = -INFINITY;
      for (int j = 0; j < n; ++j) mt = std::max(mt, st.s[size_t(j)]);
      const float m_new = std::max(st.m[size_t(g)], mt);
      const float a = st.m[size_t(g)] == -INFINITY ? 0.0f : exp_f32(st.m[size_t(g)] - m_new);
      isa_k.exp_shifted(st.s.data(), m_new, n, act, st.p.data());  // rounded before P·V (as HF)
      float tile_sum = 0.0f;
      for (int j = 0; j < n; ++j) tile_sum = tile_sum + st.p[size_t(j)];
      isa_k.weighted_sum(st.p.data(), st.v_rows, kv.dtype, n, D, st.pv.data());
      st.l[size_t(g)] = st.l[size_t(g)] * a + tile_sum;
      float* acc = &st.acc[size_t(g) * D];
      for (int d = 0; d < D; ++d) acc[d] = acc[d] * a + st.pv[size_t(d)];
      st.m[size_t(g)] = m_new;
    }
  }
  for (int g = 0; g < G; ++g)
    for (int d = 0; d < D; ++d) out[size_t(g) * D + d] = round_to(act, st.acc[size_t(g) * D + d] / st.l[size_t(g)]);
}

}  // namespace

void kv_write(PagedKV& kv, const float* k, const float* v, int64_t T, const int32_t* slots) {
  const int64_t row = int64_t(kv.num_kv_heads) * kv.head_dim;
  const size_t bytes = size_t(row) * dtype_size(kv.dtype);
#pragma omp parallel for schedule(static) if (parallel_worth_it(8 * T * row))
  for (int64_t t = 0; t < T; ++t) {
    store_row(kv.dtype, k + t * row, static_cast<char*>(kv.k) + size_t(slots[t]) * bytes, row);
    store_row(kv.dtype, v + t * row, static_cast<char*>(kv.v) + size_t(slots[t]) * bytes, row);
  }
}

void attention(const float* q, int64_t T, int num_heads, const PagedKV& kv, const int32_t* positions,
               const int32_t* const* block_tables, float scale, DType act, float* out) {
  if (kv.num_kv_heads <= 0 || num_heads % kv.num_kv_heads)
    throw Error("attention: " + std::to_string(num_heads) + " heads cannot share " +
                std::to_string(kv.num_kv_heads) + " kv heads");
  const int G = num_heads / kv.num_kv_heads, D = kv.head_dim;
  const IsaKernels& isa_k = isa();
  const int64_t work = T * kv.num_kv_heads;
  int64_t keys = 0;  // total (query, key) pairs: the size of the whole call
  for (int64_t t = 0; t < T; ++t) keys += int64_t(positions[t]) + 1;
#pragma omp parallel if (work > 1 && parallel_worth_it(4 * keys * num_heads * D))
  {
    GroupState st(G, D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t w = 0; w < work; ++w) {
      const int64_t t = w / kv.num_kv_heads;
      const int kvh = int(w % kv.num_kv_heads);
      const size_t off = (size_t(t) * num_heads + size_t(kvh) * G) * D;
      attend_group(isa_k, q + off, kv, kvh, positions[t], block_tables[t], scale, act, st, out + off);
    }
  }
}

}  // namespace verbatim::cpu
