#pragma once
// Host entry points of the CUDA kernels (one .cu file per op). Every launcher obeys the numeric
// contract of design.md: an output element's reduction order is a function of its own row's
// shape (K, head_dim, absolute positions), never of how many rows share the launch. Pointers are
// device pointers; activations are stored in the activation dtype `t` (BF16 or F16).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace verbatim::cuda {

// Throws verbatim::Error naming the failed call when `e` is not cudaSuccess.
void check(cudaError_t e, const char* what, const char* file, int line);
#define VB_CUDA(x) ::verbatim::cuda::check((x), #x, __FILE__, __LINE__)
#define VB_CUDA_LAUNCHED() ::verbatim::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// A speed knob from the environment (VERBATIM_*): its integer value, or dflt where it is unset or
// empty. Callers read it once (a static) and clamp it to the values they accept.
int env_int(const char* name, int dflt);
// SMs of the current device (sm_count.cpp), read once per device (attention_prepare reads it
// before any graph capture).
int sm_count();

// Whether the glue and GEMM kernels are launched as programmatic dependent launches (common.cuh
// pdl_launch: scheduling only, same bits). On unless VERBATIM_PDL=0 in the environment (read once).
bool pdl_enabled();
// Turns PDL off (on = false) for the launches this thread makes in the scope (nests; never turns
// it on where an outer scope or the environment turned it off). Captured graphs keep what was
// in force at capture.
class PdlScope {
 public:
  explicit PdlScope(bool on);
  ~PdlScope();
  PdlScope(const PdlScope&) = delete;
  PdlScope& operator=(const PdlScope&) = delete;

 private:
  bool saved_;
};
// Whether a forward step of `rows` token rows launches with PDL (VERBATIM_PDL_MAX_ROWS overrides
// the default; <= 0: every step), and whether the attention kernels do (VERBATIM_PDL_ATTN=0: no).
// Default 4 rows, from the H200 A/B of s3 call 5 (bench/results/README.md): with PDL on the
// attention kernels of larger steps, 8B decode took 6.26 / 13.31 / 18.24 ms at batch 8 / 32 / 64
// against 6.06 / 9.08 / 15.20 without; at batch 1 PDL still saves 0.6B 4% (1.38 vs 1.45 ms).
// 64 since session 21, with the stream decode GEMM (s21_d, ms/step at batch 8 / 16, limit 4 -> 16:
// 8B 5.421-5.448 / 6.097-6.099 -> 5.334-5.346 / 5.982-5.983, 0.6B 1.703-1.718 / 2.136-2.153 ->
// 1.595-1.596 / 2.023; s21_e / s21_f, 3 rounds at batch 32 / 64, 16 -> 64: 8B 7.460-7.469 /
// 9.892-9.906 -> 7.330-7.340 / 9.833-9.845, 0.6B 2.901-2.923 / 4.342-4.367 -> 2.799-2.809 /
// 4.255-4.272). Prefill-sized steps stay without. Scheduling only: the same bits either way.
constexpr int kPdlMaxRowsDefault = 64;
bool pdl_for_rows(int rows);
bool pdl_for_attention();

// ---- GEMM (gemm.cu): y[M, N] = x[M, K] · W[N, K]^T on tensor cores (mma.sync m16n8k16, fp32
// accumulation). Per output element: K is cut into `split` segments of equal length (a multiple
// of 32, fixed by (N, K) through gemm_split_for), each summed by one warp in ascending 32-wide
// chunks (two MMAs per chunk); segment partials are added in segment order by a second kernel.
// The row tile (how many rows a warp holds) may follow M: rows never interact inside an MMA, and
// gemm_invariance tests prove it bit for bit.
int gemm_split_for(int N, int K);
// Workspace bytes a GEMM with `split` > 1 needs for `M` rows (the launcher slices M to fit).
size_t gemm_workspace_bytes(int M, int N, int split);
struct GemmOut {
  void* y = nullptr;    // [M, ldy] in dtype t, rounded (when y32 is null)
  float* y32 = nullptr; // [M, ldy] fp32, not rounded (logits)
  int ldy = 0;          // row stride of the output in elements (0: N)
  bool partials_only = false;  // split > 1: leave the [split, M, N] partials in the workspace
                               // for a fused consumer (fused.h) instead of reducing them here
};
void gemm(const void* x, int M, int K, int ldx, const void* W, int N, DType t, int split, GemmOut out,
          float* workspace, size_t workspace_bytes, cudaStream_t stream);
// out[M, I] = round(round(silu(g)) * u) with [g | u] = x · W^T (W: [2 I, K], the gate rows then the
// up rows) in one launch: the GEMM's sums (the stream kernel or v1 at 1..32 rows, the wgmma kernel
// past 64) with silu_mul's arithmetic in its epilogue, so the bits of gemm() then silu_mul(). An
// unsplit W (split == 1) and I % 32 == 0 (v1, stream) or I % 64 == 0 (wgmma); or W in split
// segments (the split gemm_split_for gives, K % (32 split) == 0) on the stream kernel at 1..32 rows,
// which adds the segments in order (the bits of the split GEMM then silu_mul_from), where I / 32
// items fit one wave of the SMs (VERBATIM_GEMM_SILU_SPLIT=0: never, 2: always). gemm_silu_mul_ok
// says (false also with VERBATIM_GEMM_SILU=0, to measure the difference).
bool gemm_silu_mul_ok(int M, int K, int I, int split);
void gemm_silu_mul(const void* x, int M, int K, const void* W, int I, DType t, void* out, cudaStream_t stream,
                   int split = 1);
// The tile configuration name for M rows (for kernel_config / benchmarks).
std::string gemm_tile_name(int M);
// Which kernel runs the contract GEMM. All issue the same MMAs in the same order per output
// element, so they give the same bits (cuda_ops_test: GemmKernelsAreV1BitForBit); they differ
// only in speed. V1: fragments loaded straight into registers, U chunks per load round. V2
// (M <= 64; larger M runs V1): a per-thread cp.async pipeline of S chunks through shared memory.
// Tiled: CTA tiles of x and W staged in shared memory and shared by the CTA's warps (cp.async
// pipeline), segments summed in the kernel when the tiles fill the GPU. Stream: up to 64 rows, W
// and x through a TMA ring (gemm_stream.cu; V1 where tensor maps do not fit). Auto (the default):
// Stream up to 64 rows, Tiled above (VERBATIM_GEMM_TILED_MIN_M moves the edge). VERBATIM_GEMM=
// v1|v2|tiled|stream|auto in the environment at first use picks one.
enum class GemmKernel { V1 = 0, V2 = 1, Tiled = 2, Auto = 3, Stream = 4 };
GemmKernel active_gemm_kernel();
void set_gemm_kernel(GemmKernel k);
const char* gemm_kernel_name(GemmKernel k);
// Whether gemm() with split > 1 adds the segments inside the GEMM kernel for these M and N (then
// it writes y directly, and a consumer should read y rather than ask for partials).
bool gemm_sums_in_kernel(int M, int N, int split);
// Speed knobs of the contract GEMM (none changes a bit; cuda_ops_test runs them all). Read from
// the environment at first use (VERBATIM_GEMM_TILED_MIN_M, _TILED_COMBINE, _TILED_WIDE, _V1_M64;
// VERBATIM_GEMM_WIDE64=1 is v1_m64 = 1), replaced by set_gemm_tuning (tests, benchmarks).
struct GemmTuning {
  int tiled_min_m = 64;    // Auto: the tiled kernel above this many rows
  // Tiled with split > 1: 1 segments added in the kernel, 0 never (partials + reduce), -1 by size.
  // 0 by default: adding them in the kernel needs 16 warps of 32 x 32 to hold the second set of
  // sums and ran at 107 TFLOP/s against 208-218 for partials + reduce on the 8B layers at 2,048
  // rows (H200, s3 probe call).
  int tiled_combine = 0;
  bool tiled_wide = false; // tiled, > 64 rows, segments to partials: 128 x 256 CTA tiles
  // Tiled at > 64 rows on Hopper's warpgroup MMA (gemm_wgmma.cu), v1's bits. On since session 6:
  // H200, 2,048-token prefill 174.6 ms vs 183.1 on mma.sync (8B), 26.3 vs 31.4 (0.6B), every
  // digest of record unchanged with it.
  bool tiled_wgmma = true;
  // The wgmma kernel with split > 1: 1 segments added in the kernel, 0 never, -1 by size (its
  // second set of sums fits in registers, unlike the mma.sync tiled kernel's).
  int wgmma_combine = -1;
  // The wgmma kernel's rows per CTA where it does not add segments itself: 128 or 256 (four
  // warpgroups; each W byte from L2 then serves twice the outputs). 256: 8B gate_up at 2,048 rows
  // 345 TFLOP/s vs 295, 8B prefill 136.2 ms vs 143.1 (H200, session 9).
  int wgmma_rows = 256;
  // The same where it adds segments itself (split > 1): 128 keeps the second set of sums in shared
  // memory; 256 keeps them in the GEMM workspace (128 KB a CTA, L2-resident), rows in passes that
  // fit; -1 by size (256 where K >= 4,096 and the 256-row tiles number >= 128; gemm.cu).
  int wgmma_sum_rows = -1;
  // The wgmma kernel's copies of x and W: by tensor maps (TMA), one per chunk from one thread, where
  // segments are whole 32-k chunks and rows 16-byte aligned; else (or false) 16-byte cp.async by
  // every thread.
  bool wgmma_tma = true;
  // The 256-row wgmma kernel: 1 leaves one stage of MMAs running while the next is issued (two
  // stages loaded ahead instead of three), where segments are whole stages; 0 waits for them.
  int wgmma_lag = 0;
  // The 256-row wgmma kernel with TMA: each stage's two chunks as one 64-k box in the 128-byte
  // swizzle (half the copied rows), where segments are whole 64 k.
  bool wgmma_pairs = true;
  // The wgmma kernel with TMA: one CTA per SM looping over tiles (the next tile's copies start
  // during the last one's epilogue), instead of one CTA per tile. With pairs, H200 session 16
  // (8B 2,048-token prefill, ms): neither 77.95 / 78.45, pairs 73.81 / 74.16, both 73.97 / 73.91.
  bool wgmma_persist = true;
  // v1 at 33..64 rows: 0 m64n16 (2 chunks a round), 1 m64n32, 2 two m32n16 row blocks, 3 m64n16
  // with 4 chunks a round (twice the W in flight). 3 since session 17 (s17_b, H200): 8B decode at
  // 48 / 64 sequences 11.26-11.29 / 12.89-12.92 ms -> 10.77-10.79 / 12.51-12.54, 0.6B 4.04 / 4.75
  // -> 3.85 / 4.55; gemm-bench 8B layers at 64 rows 776 -> 671 us a layer + lm_head.
  int v1_m64 = 3;
  int v1_unroll16 = 4;     // v1 at <= 16 rows: 32-k chunks loaded per round (4 or 8)
  // v1 at 17..32 rows: 32-k chunks loaded per round (4, 6 or 8). 8 since session 17 (s17_b): 8B at
  // 24 / 32 sequences 7.558-7.575 / 8.233-8.244 ms -> 7.516-7.545 / 8.170-8.186, 0.6B 2.714 / 3.087
  // -> 2.688 / 3.054; 6 was slower (K = 4,096 is no whole number of 6-chunk rounds).
  int v1_unroll32 = 8;
  // v1 under PDL, weights of <= 16 MiB only (gemm.cu prefetch_for): bytes of each W row segment
  // prefetched into L2 before griddepcontrol.wait, so the weight stream starts while the kernel
  // before (a norm, SiLU, the merge) still runs.
  int v1_prefetch_bytes = 512;
  // The stream kernel (gemm_stream.cu) at <= 16 rows: stages of 256 k in its TMA ring (3, 4 or 5;
  // 40 KB each). VERBATIM_GEMM_STREAM_STAGES. 3 since session 21 (s21_c, H200, ms/step at batch 1,
  // 5 / 4 / 3 stages: 8B 4.906-4.907 / 4.858-4.864 / 4.782-4.807, 0.6B 1.172-1.183 / 1.187-1.191 /
  // 1.169-1.172; under PDL a shallower ring leaves room beside the kernel before).
  int stream_stages16 = 3;
  // The stream kernel at 17..32 rows: stages of its ring (3 or 4; 48 KB each). 4 = the depth
  // before session 36, when this knob came (VERBATIM_GEMM_STREAM_STAGES32).
  int stream_stages32 = 4;
  // The stream kernel under PDL: W's copies of its ring's first stages issued before the PDL wait
  // (W is written at load only), so a GEMM resident beside the kernel before has them in flight
  // when the wait returns. 0 never, 1 for weights of <= 16 MiB and for every weight at <= 32 rows,
  // 2 always, 3 for weights of <= 16 MiB only. VERBATIM_GEMM_STREAM_PRELOAD.
  // Session 22 (s22_a, H200, ms/step at batch 1 / 8 / 32 / 64, 2 rounds) made weights <= 16 MiB the
  // rule: 0.6B 1.150-1.158 / 1.569-1.579 / 2.783-2.797 / 4.247-4.251 -> 1.084-1.087 / 1.490 /
  // 2.714-2.717 / 4.162-4.169; 8B (no weight that small) the same; 2 on the 8B 4.742-4.753 /
  // 5.387-5.395 / 7.263-7.267 / 9.965-9.980 against 4.770-4.780 / 5.362-5.369 / 7.289-7.298 /
  // 9.783-9.811. Session 44 (s44_c, an H100, main's kernels of then, 2 rounds): 2 against that rule,
  // 8B 6.073 / 6.519-6.534 / 8.133-8.136 / 10.962-10.968 -> 5.901-5.915 / 6.406-6.408 / 7.957-7.958 /
  // 10.958-10.973, 1.7B -0.5 / +0.2 / -0.8 / 0%: so every weight at <= 32 rows joined the rule (at
  // 64 rows neither card gained).
  int stream_preload = 1;
  // With the preload: W's boxes of this many stages past the ring's prefetched into L2 before the
  // wait as well (VERBATIM_GEMM_STREAM_PRELOAD_L2; 256 k x 64 rows = 32 KB a stage and CTA). 0:
  // 8 with preload 2 made the 8B 2-4% slower than preload 2 alone, the 0.6B level (s22_a).
  int stream_preload_l2 = 0;
  // With the preload: how many of the ring's first stages (0: all of them, the default; 1..5, at
  // most the ring's depth). Fewer leave less traffic beside the glue kernel the GEMM overlaps
  // (session 44's timelines: with the preload the norms and the merge took 1.4-1.9 us longer), but
  // measured slower or level (s44_d, H100, 8B at batch 1: 1 stage 5.857-5.858 ms, 2 stages
  // 5.754-5.778, the whole ring of 3 5.763-5.787). VERBATIM_GEMM_STREAM_PRELOAD_STAGES.
  int stream_preload_stages = 0;
};
GemmTuning gemm_tuning();
void set_gemm_tuning(const GemmTuning& t);
void gemm_prepare();  // raises V2's shared-memory limits (once; call before any graph capture)

// ---- RMSNorm (rmsnorm.cu): as cpu::rmsnorm bit for bit: 16 lanes, lane l sums x[k]^2 for
// k = l, l+16, ... in ascending k, the fixed halving tree, mean = sum / D, inv = 1 / sqrt(mean + eps),
// y = round(w * round(x * inv)). Row r of x starts at x + (r / heads) * x_tok_stride + (r % heads) * D
// (heads = 1 for a hidden-size norm; heads > 1 for Qwen3's per-head q/k norm); y likewise.
struct RowMap {
  int heads = 1;             // rows per token
  int64_t tok_stride = 0;    // elements between tokens
};
void rmsnorm(const void* x, RowMap xm, int64_t rows, int D, const float* w, float eps, DType t, void* y, RowMap ym,
             cudaStream_t stream);
// h = round(h + d) then y = rmsnorm(h): the residual add fused with the next norm (same bits as
// add_inplace followed by rmsnorm).
void add_rmsnorm(void* h, const void* d, int64_t rows, int D, const float* w, float eps, DType t, void* y,
                 cudaStream_t stream);

// ---- RoPE (rope.cu): as cpu::rope: x * cos + rotate_half(x) * sin, two products and one add, then
// rounded; cos/sin come from a host-made table (cos_sin[pos * head_dim + i] = cos, + half + i = sin),
// computed by the CPU reference's own formula so both backends rotate by the same bits.
// The host table: [positions, head_dim] fp32, made with cpu::rope's formula (rope_table.cpp).
std::vector<float> rope_table(int positions, int head_dim, double theta);
void rope(void* x, RowMap xm, int64_t T, int heads, int head_dim, const int32_t* positions, const float* cos_sin,
          DType t, cudaStream_t stream);

// ---- Elementwise (silu_mul.cu, residual_add.cu, embedding.cu).
// out[t, i] = round(round(silu(gate[t, i])) * up[t, i]); gate/up rows at stride ld_in.
void silu_mul(const void* gate, const void* up, int64_t ld_in, int64_t T, int64_t D, DType t, void* out,
              cudaStream_t stream);
void add_inplace(void* x, const void* y, int64_t n, DType t, cudaStream_t stream);

// Tests only (fault_inject.cu): a kernel on `stream` that faults for real (an illegal address, sticky
// for the context) or, with hang, never returns.
void launch_injected_fault(bool hang, cudaStream_t stream);
// out[t, :] = E[tokens[t], :] (E already in dtype t).
void embed(const void* E, int64_t hidden, const int32_t* tokens, int64_t T, DType t, void* out, cudaStream_t stream);
// out[r, :] = x[rows[r], :] for R rows of width D.
void gather_rows(const void* x, int64_t D, const int32_t* rows, int64_t R, DType t, void* out, cudaStream_t stream);

// ---- exp_f32 / silu_f32 of the floats with bits first .. first + n - 1 (exp_sweep.cu): the
// test that the device's exp and silu are the CPU reference's on every float.
void exp_silu_sweep(uint32_t first, int64_t n, float* exp_out, float* silu_out, cudaStream_t stream);
// exp_nonpos_f32 of the floats with bits first .. first + n - 1 (meant for those not above 0).
void exp_nonpos_sweep(uint32_t first, int64_t n, float* out, cudaStream_t stream);
// round_exp_candidate<t> (common.cuh) of the same floats: its value where it is sure, else -1; and
// (raw non-null) exp_candidate, the unrounded candidate.
void exp_candidate_sweep(uint32_t first, int64_t n, DType t, float* out, float* raw, cudaStream_t stream);

// ---- Paged KV (attention.cu). Cache of one layer: [num_blocks, block_size, kv_heads, head_dim].
// Writes k, v rows ([T] at token stride ld) to slot[t] = block * block_size + offset.
void kv_write(const void* k, const void* v, int64_t ld, int64_t T, int kv_heads, int head_dim,
              const int32_t* slots, void* k_cache, void* v_cache, DType t, cudaStream_t stream);

// One attention work item: query tokens [first, first + count) of one sequence (contiguous in the
// batch, all sharing `bt_offset`). part >= 0: the split-KV part `part` only (its state goes to the
// merge unless the row has a single part); part == -1: every part of the rows, folded in order in
// the CTA (contract mode, part_tokens == 64 only: the fold kernel, or for <= 16 rows the ring
// kernel). count == 0: nothing (padding of a CUDA graph).
struct AttnItem {
  int32_t first;
  int32_t count;
  int32_t part;
  int32_t bt_offset;  // into the flattened block tables
};
struct AttnArgs {
  const void* q = nullptr;        // [T, heads, head_dim] at token stride q_ld, RoPE applied, rounded
  int64_t q_ld = 0;               // elements between tokens of q (0: heads * head_dim)
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  void* out = nullptr;            // [T, heads, head_dim]
  float* states = nullptr;        // partial (m, l, acc[head_dim]) per (token, part, head)
  const int32_t* positions = nullptr;
  const int32_t* block_tables = nullptr;  // flattened
  const int32_t* state_base = nullptr;    // [T]: first state index of a multi-part token, or -1
  const AttnItem* items = nullptr;        // the whole item array of the plan
  // Non-null: the merge runs inside the attention kernels (the last CTA of an item folds its
  // multi-part rows; same bits as attention_merge, which then does nothing). One counter per
  // (first token of an item, kv head): [T, kv_heads] ints, zero before the launch and zero again
  // after it.
  int32_t* merge_counters = nullptr;
  int heads = 0, kv_heads = 0, head_dim = 0, block_size = 0;
  int part_tokens = 64;           // split-KV part size in tokens (multiple of kAttnTile)
  float scale = 1.0f;
};
// The launches of one group of items (ranges into AttnPlan::items / merge lists).
struct AttnLaunch {
  int small_begin = 0, small_end = 0;  // per-part items of <= 16 rows: one-warp CTAs
  int large_begin = 0, large_end = 0;  // per-part items of up to 64 rows: four-warp CTAs
  int fold_begin = 0, fold_end = 0;    // whole-row items (part == -1): four-warp CTAs
  int ring_begin = 0, ring_end = 0;    // whole-row items of <= 16 rows: the ring kernel
  int ring_rows = 16;                  // the most rows of one ring item (<= 8: transposed tiles allowed)
  int merge_begin = 0, merge_end = 0;  // into merge_tokens / merge_parts
};
// Per (token, head), keys are cut into tiles of 64 absolute positions (cpu::kAttnTile) and
// split-KV parts of part_tokens. Inside a part the tiles run the reference's online softmax
// (probabilities rounded before P·V); parts are then folded in position order:
// m' = max(m, m_i), l = l·e^(m-m') + l_i·e^(m_i-m'), acc = acc·e^(m-m') + acc_i·e^(m_i-m'),
// out = round(acc / l). The contract uses parts of one tile (64): a decode row's tiles spread
// over many CTAs (then attention_merge folds them) or, at 8+ sequences, over one CTA's warps (the
// ring kernel folds them in the CTA), a prefill tile of rows folds its tiles in the CTA; all are
// the same arithmetic, so prefill, chunked prefill and decode give one result.
void attention(const AttnArgs& a, const AttnLaunch& g, DType t, cudaStream_t stream);
// Folds the part states of the group's multi-part tokens (tokens[i] with num_parts[i] > 1);
// nothing when a.merge_counters is set (the attention kernels folded them).
void attention_merge(const AttnArgs& a, const int32_t* tokens, const int32_t* num_parts, int count, DType t,
                     cudaStream_t stream);
void attention_prepare();  // sets the kernels' shared-memory limits (once, before any graph capture)
// Which per-part kernel runs items of <= 16 rows: 0 (default) picks by CTA count, 1 or 4 forces
// the one- or four-warp kernel (same bits either way; tests compare them).
void set_attention_small_item_warps(int warps);
// Items of <= 16 rows with one-tile parts (decode at 1-4 sequences): 1 runs them in four-warp CTAs
// that split the tile's keys and P·V columns over the warps (attention_split_kernel, head_dim >=
// 64) while the CTAs number <= 5 an SM; 0 leaves the work to warp 0 of four (<= 2 CTAs an SM) or
// to the one-warp tile kernel; -1 VERBATIM_ATTN_SPLIT_KEYS (default 1). Same bits every way
// (cuda_ops_test).
void set_attention_split_keys(int mode);
// The attention kernels launch_attention picks from (the merge kernel aside), and how many times
// each was launched (or captured into a graph) in this process: tests prove with it that a path
// they compare actually ran.
enum class AttnKernel { Split, PerPart4, PerPart1, Tile, Fold, Ring, kCount };
uint64_t attention_launches(AttnKernel k);
// One-warp items of one-tile parts: 1 the tile kernel (K straight from the cache into registers
// before its MMAs, V alone in shared memory), 2 the same with K read as the MMAs use it, 0 the
// one-warp per-part kernel, -1 VERBATIM_ATTN_TILE_KERNEL (default 1). Same bits every way
// (cuda_ops_test AttentionMergeOfManyPartsIsTheFold runs each).
void set_attention_tile_kernel(int mode);
// The fold kernel (whole-row items of > 16 rows: prefill): 0 sums each tile's whole P·V before
// folding it (1 CTA per SM), 1 folds it 16 columns at a time as they are summed (3 CTAs per SM),
// 2 folds 32 columns at a time and loads each tile by bulk row copies, 3 is 2 with the two row
// halves' softmax interleaved; -1 VERBATIM_ATTN_FOLD_PV (default 3). Same bits every way
// (cuda_ops_test).
void set_attention_fold_pv(int mode);
int attention_query_tile(int heads_per_kv);  // query tokens per work item (rows = tokens * group <= 64)
size_t attention_state_floats(int head_dim);  // floats per (token, part, head) state

// The work of one forward's attention, built on the host from the batch (same for every layer).
// Launch groups keep the partial states of each group within `max_states` (token, part) states.
struct AttnPlan {
  std::vector<AttnItem> items;
  std::vector<int32_t> state_base;     // [T]: first state of a multi-part token within its group, or -1
  std::vector<int32_t> merge_tokens;   // multi-part tokens
  std::vector<int32_t> merge_parts;    // their part counts
  std::vector<AttnLaunch> launches;
  int max_states = 0;                  // largest group, in (token, part) states
};
// positions/token_seq: [T]; seq_bt_offset[s]: offset of sequence s's block table. Tokens of one
// sequence must be contiguous. part_tokens: split-KV part size (a multiple of 64); allow_fold:
// query tiles of more than 16 rows fold their parts in one CTA (needs part_tokens == 64); ring:
// query tiles of <= 16 rows too, in the ring kernel (part_tokens == 64, attention_ring_ok).
AttnPlan plan_attention(const int32_t* positions, const int32_t* token_seq, const int32_t* seq_bt_offset, int T,
                        int heads_per_kv, int part_tokens, int max_states, bool allow_fold, bool ring = false);
// The ring kernel (whole-row items of <= 16 rows: producer warps stream the tiles through a ring of
// stages, consumer warps compute their states in turn, a folder warp folds them in tile order)
// takes this head_dim. Its shape: variant 0 4 consumer warps and 4 stages, 1 four and five, 2 two
// and two (2 CTAs per SM), 3 three and four, 4 five and five; -1 VERBATIM_ATTN_RING_VARIANT, whose
// default (auto) is 1 or 2, whichever has the cheaper waves for the launch's CTAs.
// Same bits every way: the tile kernel + merge's (cuda_ops_test).
bool attention_ring_ok(int head_dim);
void set_attention_ring_variant(int variant);
// Whether the ring kernel's launches whose items all have <= 8 rows (decode on Qwen3: kv groups of 2
// and 4) take transposed tiles (keys as the MMA's m: half the MMAs): -1 = VERBATIM_ATTN_RING_TR
// (default on), 0 = never, 1 = always. Same bits.
void set_attention_ring_transposed(int mode);

// ---- Sampler (sampler.cu): per logit row, as engine/sampler.h (same steps and tie rules; the
// sums are fixed-order block reductions instead of one sequential accumulator: the log-softmax
// sum over the vocab in 8 equal chunks (one thread-block cluster per row), each a block tree,
// the chunk sums added in chunk order).
struct SampleRowSpec {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
  uint64_t seed;
  uint64_t stream;
  int64_t position;
  int32_t score_token;
  int32_t num_top;       // top logprobs wanted
  int32_t banned_begin;  // into the flattened banned list
  int32_t banned_end;
};
struct SampleRowOut {
  int32_t token;
  float logprob;
};
constexpr int kMaxTopLogprobs = 20;
struct SamplerBuffers {
  float* sort_keys = nullptr;     // [draws, vocab]
  int32_t* sort_ids = nullptr;    // [draws, vocab]
  float* sorted_keys = nullptr;   // [draws, vocab]
  int32_t* sorted_ids = nullptr;  // [draws, vocab]
  int32_t* offsets = nullptr;     // [draws + 1]
  void* temp = nullptr;           // sampler_temp_bytes(draws, vocab)
  size_t temp_bytes = 0;
  float* stats = nullptr;         // [rows, 2]: max, log(sum exp)
};
size_t sampler_temp_bytes(int draws, int vocab);
// logits: [rows, vocab] fp32. draw_slot[row]: its slot among the num_draws rows that draw (or -1);
// draw_rows[slot]: the row. out: [rows]; top_ids / top_lps: [rows, kMaxTopLogprobs].
void sample(const float* logits, int rows, int vocab, const SampleRowSpec* specs, const int32_t* banned,
            const int32_t* draw_slot, const int32_t* draw_rows, int num_draws, bool any_logprobs,
            SamplerBuffers& buf, SampleRowOut* out, int32_t* top_ids, float* top_lps, cudaStream_t stream);

}  // namespace verbatim::cuda
