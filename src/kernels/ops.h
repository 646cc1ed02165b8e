#pragma once
// The numeric contract (../../docs/numerics.md), one function per op: the CPU reference.
// Activations are fp32 arrays whose values are already representable in the activation dtype
// `act` (F32, BF16 or F16); every op rounds its output to `act` at the points listed in
// docs/numerics.md. Each output element's reduction order depends only on its own row's shape
// (K, head_dim, absolute position), never on how many rows share the call or on thread count.
//
// The reduction orders (the CPU reference's bits; CUDA keeps the rounding points, not the bits):
//  * dot over K (matmul, rmsnorm's sum of squares, attention scores): 16 fp32 lanes, lane l sums
//    the products of k = l, l+16, l+32, ... in ascending k starting from +0; then the lanes are
//    combined by the fixed halving tree t[l] += t[l+8] (l<8), t[l] += t[l+4] (l<4), t[l] += t[l+2],
//    t[0] += t[1]. Products and sums are separate IEEE fp32 operations (no FMA).
//  * row-parallel GEMMs (o_proj, down_proj): the same dot per K chunk, 8 chunks combined by a fixed
//    tree (matmul_kchunked below), so tensor-parallel sizes 1..8 give the same bits.
//  * attention, per (token, head): see attention() below.
//  * exp is cpu::exp_f32 below (a fixed polynomial, not libm) so no libm version or CPU dispatch
//    can change a bit.
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "model/weights.h"

namespace verbatim::cpu {

// Attention KV tile, in positions: tiles start at absolute positions that are multiples of it.
// Shared with the CUDA backend so both reduce a row's keys in the same tiles.
inline constexpr int kAttnTile = 64;

// A weight matrix (or vector) in its storage dtype; F32 holds floats, BF16/F16 raw 16-bit values.
using Mat = WeightRef;

// y[m, n] = sum_k x[m, k] * W[n, k]   (x: [M, K], W: [N, K], y: [M, N]); fp32 accumulation, then
// rounded to `act`. The sum over k runs in one fixed order chosen from K alone.
void matmul(const float* x, int64_t M, const Mat& W, DType act, float* y);
// Same, without rounding the output (the logits are returned in fp32).
void matmul_f32out(const float* x, int64_t M, const Mat& W, float* y);

// Row-parallel GEMMs (o_proj, down_proj; docs/tensor-parallel.md). Their K is the dimension that
// tensor parallelism splits across ranks, so their reduction is cut into kTpChunks fixed chunks
// that a rank owns whole at every TP size N in {1, 2, 4, 8}; the chunk sums are combined by one
// fixed tree. TP = 1 and TP = N therefore perform the same fp32 operations on the same operands.
inline constexpr int kTpChunks = 8;

// First k of chunk c (0 <= c <= kTpChunks) of a K-long reduction: floor(c * K / kTpChunks). From K
// alone; chunks need not be equal (K = 300: 0, 37, 75, 112, 150, 187, 225, 262, 300) nor multiples
// of 16, and are empty when K < kTpChunks. Rank r of N owns chunks [r*8/N, (r+1)*8/N), i.e. the K
// range [kchunk_begin(K, r*8/N), kchunk_begin(K, (r+1)*8/N)) = [floor(r*K/N), floor((r+1)*K/N)).
constexpr int64_t kchunk_begin(int64_t K, int c) { return int64_t(c) * K / kTpChunks; }

// y[m, n] = round_act(tree(p_0, ..., p_7)), where p_c = the dot of x[m, :] and W[n, :] over chunk
// c's k range in the ops.h dot order (16 lanes from +0, lane l taking the chunk's k = b + l,
// b + l + 16, ..., then the halving tree), and tree is the fixed pairwise combine
//   ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)).
// Why a tree and not ascending: every subtree is one rank's chunks at some N, so a rank can sum its
// own chunks first and send one value per output (the traffic of a plain all-reduce).
void matmul_kchunked(const float* x, int64_t M, const Mat& W, DType act, float* y);

// One rank's share of matmul_kchunked: chunks [c0, c1) of a reduction of length K (c1 - c0 a power
// of two, c0 a multiple of it: one subtree of the tree above). x: [M, w] and W: [N, w] hold only
// the columns k in [kchunk_begin(K, c0), kchunk_begin(K, c1)) (w of them: the rank's shard).
// partial[m, n] = that subtree's fp32 sum (not rounded). Throws Error on a misaligned range.
void matmul_kchunk_partial(const float* x, int64_t M, const Mat& W, int64_t K, int c0, int c1, float* partial);

// Finishes the tree: parts[0..count) are the subtree sums of chunks [i*8/count, (i+1)*8/count)
// (count in {1, 2, 4, 8}, i.e. what the ranks of TP = count sent, in rank order);
// y[i] = round_act(tree(parts[0][i], ..., parts[count-1][i])). Gives matmul_kchunked's bits.
void combine_kchunk_partials(const float* const* parts, int count, int64_t n, DType act, float* y);

// y = round(w * round(x / sqrt(mean(x^2) + eps))) per row of length D (as HF Qwen3RMSNorm).
void rmsnorm(const float* x, int64_t M, int64_t D, const Mat& w, float eps, DType act, float* y);

// Rotary embedding (HF "default" rope, rotate_half layout) on x: [T, num_heads, head_dim] in place.
void rope(float* x, int64_t T, int num_heads, int head_dim, const int32_t* positions, double theta, DType act);

// out[t, i] = round(round(silu(gate[t, i])) * up[t, i])   (gate, up, out: [T, D])
void silu_mul(const float* gate, const float* up, int64_t T, int64_t D, DType act, float* out);

// x[i] = round(x[i] + y[i])
void add_inplace(float* x, const float* y, int64_t n, DType act);

// Rows of the embedding table: out[t, :] = E[tokens[t], :] (as fp32).
void embed(const Mat& E, const int32_t* tokens, int64_t T, float* out);

// Paged KV cache of one layer: K and V, each [num_blocks, block_size, num_kv_heads, head_dim],
// stored in `dtype` (F32 floats or BF16/F16 raw bits): exactly the bits a recompute writes.
struct PagedKV {
  DType dtype = DType::F32;
  int block_size = 16;
  int num_kv_heads = 0;
  int head_dim = 0;
  void* k = nullptr;
  void* v = nullptr;
};

// Writes k, v ([T, num_kv_heads, head_dim]) to slots[t] = block * block_size + offset.
void kv_write(PagedKV& kv, const float* k, const float* v, int64_t T, const int32_t* slots);

// Causal attention over the paged cache. For token t (query q[t]: [num_heads, head_dim]) the keys
// are positions 0..positions[t] of the sequence whose block table is block_tables[t]. Reduced in
// tiles of kAttnTile positions at absolute offsets, online softmax merged in position order; the
// probabilities are rounded to `act` before P·V. out: [T, num_heads, head_dim], rounded to `act`.
// Head h reads kv head h / (num_heads / kv.num_kv_heads) (GQA). Exactly, per (token, head), with
// m = -inf, l = 0, acc[d] = 0, and for each tile [t0, t0 + kAttnTile) ∩ [0, pos] in order:
//   s_j = dot(q, k_j) * scale                    (dot in the order above)
//   m' = max(m, max_j s_j);  a = (m == -inf) ? 0 : exp(m - m')
//   p_j = round_act(exp(s_j - m'))               (probabilities rounded before P·V)
//   l = l * a + (((p_0 + p_1) + p_2) + ...)      (tile sum from 0, ascending j)
//   acc[d] = acc[d] * a + (((p_0 v_0[d] + p_1 v_1[d]) + ...)   (tile P·V from 0, ascending j)
//   m = m'
// out[d] = round_act(acc[d] / l). Prefill, chunked prefill and decode all run exactly this.
void attention(const float* q, int64_t T, int num_heads, const PagedKV& kv, const int32_t* positions,
               const int32_t* const* block_tables, float scale, DType act, float* out);

// exp(x) in fp32 by a fixed recipe (Cody-Waite reduction by ln 2, degree-6 polynomial, exact
// power-of-two scaling); about 1 ulp, identical on every machine. Used by softmax and SiLU.
float exp_f32(float x);

// silu(x) = x / (1 + exp_f32(-x)), in fp32.
float silu_f32(float x);

// A string naming every kernel choice that changes bits ("cpu-ref-v2;lanes=16;..."), for the
// system fingerprint. The instruction set and thread count are not in it: they change no bit.
std::string kernel_config();

namespace testing {
// Which hot-loop variant runs: "avx512", "avx2" or "generic" (all compute the same bits; tests
// prove it). Throws Error if the CPU lacks it. "" restores the automatic choice.
void force_isa(const std::string& name);
std::string isa_name();
// TEST ONLY: when on, matmul (and matmul_kchunked) with M > 1 sums K in reverse order, a deliberately batch-dependent
// kernel. The invariance tests turn it on to prove they can detect a batch dependence.
void set_batch_dependent_matmul(bool on);
// Ops run on several threads only when they have at least this much work (about flops; default
// 2^22), so tiny calls avoid thread wake-ups. Tests set 0 to make every op split across threads.
// Returns the previous value.
int64_t set_min_parallel_work(int64_t work);
}  // namespace testing

}  // namespace verbatim::cpu
