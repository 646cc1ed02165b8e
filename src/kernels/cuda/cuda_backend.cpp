// The Qwen3 forward pass on the GPU: engine/cpu_backend.cpp's ops in the same order with the same
// rounding points, on kernels/cuda. Decode and prefill rows go through the same kernels; nothing
// numeric depends on the batch (design.md); the fast mode exists only to measure that choice.
#include "kernels/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/sampler.h"
#include "kernels/cuda/cuda_tp_backend.h"
#include "kernels/cuda/fused.h"
#include "kernels/cuda/graph_plan.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/nccl_comm.h"
#include "kernels/cuda/step_timing.h"
#include "kernels/cuda/tp_plan.h"
#include "kernels/ops.h"

namespace verbatim {
namespace {

using cuda::AttnArgs;
using cuda::AttnItem;
using cuda::AttnPlan;

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS error in ") + what + ": status " + std::to_string(int(s)));
}

// n values of `from` as dtype `to` (exact when widening, round-to-nearest-even otherwise), as
// CpuBackend::in_compute_dtype converts them.
std::vector<uint16_t> to_half_type(const WeightRef& w, DType to) {
  const int64_t n = w.rows * w.cols;
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float f;
    switch (w.dtype) {
      case DType::BF16: f = bf16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
      case DType::F16: f = f16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
      default: f = static_cast<const float*>(w.data)[i];
    }
    out[size_t(i)] = to == DType::BF16 ? f32_to_bf16(f) : f32_to_f16(f);
  }
  return out;
}

// A norm weight as the CPU uses it: converted to the compute dtype, then read as fp32.
std::vector<float> norm_values(const WeightRef& w, DType act) {
  const int64_t n = w.rows * w.cols;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float f;
    switch (w.dtype) {
      case DType::BF16: f = bf16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
      case DType::F16: f = f16_to_f32(static_cast<const uint16_t*>(w.data)[i]); break;
      default: f = static_cast<const float*>(w.data)[i];
    }
    out[size_t(i)] = round_to(act, f);
  }
  return out;
}

}  // namespace

struct CudaBackend::Impl {
  struct Layer {
    void* qkv = nullptr;   // [(nh + 2 nkv) * hd, H]: q_proj, k_proj, v_proj rows stacked
    void* o = nullptr;     // [H, nh * hd]
    void* gu = nullptr;    // [2 I, H]: gate_proj rows, then up_proj rows
    void* down = nullptr;  // [H, I]
    float* in_norm = nullptr;
    float* post_norm = nullptr;
    float* q_norm = nullptr;
    float* k_norm = nullptr;
  };

  ModelWeights weights;
  ModelConfig c;
  DType act;
  CudaOptions opt;
  int device = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  std::vector<void*> allocations;
  size_t held = 0, weights_held = 0;

  void* embed = nullptr;
  void* lm_head = nullptr;
  float* final_norm = nullptr;
  std::vector<Layer> layers;
  float* rope = nullptr;
  int rope_positions = 0;
  int nqkv = 0, split_qkv = 1, split_o = 1, split_gu = 1, split_down = 1, split_lm = 1;
  // Tensor parallelism (rank `rank` of `tp`; tp == 1: the whole model). Local sizes: this rank's
  // query heads, KV heads, intermediate columns and vocabulary rows (tp_plan.h).
  int tp = 1, rank = 0;
  cuda::NcclComm comm = nullptr;
  bool tp_allreduce = false;  // the measured control: NCCL all-reduce of per-rank sums
  int nh_l = 0, nkv_l = 0;
  int64_t I_l = 0, V_l = 0;
  float* gather = nullptr;   // [8, cap_t, H] fp32: all ranks' K-segment partials (row-parallel)
  float* glog = nullptr;     // [tp, kLogitRows, V_l] fp32: all ranks' logit slices

  void* kv = nullptr;
  size_t kv_layer_bytes = 0;
  int num_blocks = 0, block_size = 0;

  int cap_t = 0;
  void *x = nullptr, *h = nullptr, *qkv = nullptr, *attn = nullptr, *o = nullptr, *gu = nullptr, *mlp = nullptr;
  // [cap_t, nkv_l] zeros: the attention kernels' merge counters (AttnArgs::merge_counters) with
  // VERBATIM_ATTN_FUSED_MERGE=1, else null (the merge kernel; same bits). Off by default: on the
  // H200 (session 8, s8_merge) the fused merge made 8B decode slower at every batch (5.10 -> 5.26
  // ms at batch 1, 7.97 -> 8.78 at 32): the last CTA's fold is a serial tail the separate
  // kernel spreads over a warp per (token, head). Still slower with session 46's fold (0.6B +10%
  // at 4 sequences, H100).
  int32_t* merge_cnt = nullptr;
  static constexpr int kLogitRows = 64;  // logit rows per lm_head pass (bounds the fp32 logits buffer)
  void* last = nullptr;
  float* logits = nullptr;
  float* ws = nullptr;
  size_t ws_bytes = size_t(64) << 20;

  int32_t* d_in = nullptr;  // per-step inputs, one upload
  size_t d_in_cap = 0;
  int32_t* h_in = nullptr;  // pinned staging
  size_t h_in_cap = 0;

  // Sampler scratch (sort buffers allocated on the first draw).
  cuda::SamplerBuffers sb;
  cuda::SampleRowSpec* d_specs = nullptr;
  cuda::SampleRowSpec* h_specs = nullptr;
  cuda::SampleRowOut* d_out = nullptr;
  cuda::SampleRowOut* h_out = nullptr;
  int32_t* d_top_ids = nullptr;
  float* d_top_lps = nullptr;
  int32_t* h_top_ids = nullptr;
  float* h_top_lps = nullptr;
  int32_t* d_samp_in = nullptr;  // banned list, draw_slot, draw_rows
  int32_t* h_samp_in = nullptr;
  size_t samp_in_cap = 0;

  void* dmalloc(size_t bytes) {
    void* p = nullptr;
    VB_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 16)));
    allocations.push_back(p);
    held += bytes;
    return p;
  }
  void dfree(void* p, size_t bytes) {
    if (!p) return;
    auto it = std::find(allocations.begin(), allocations.end(), p);
    if (it != allocations.end()) allocations.erase(it);
    cudaFree(p);
    held -= std::min(held, bytes);
  }
  void* upload(const void* src, size_t bytes) {
    void* d = dmalloc(bytes);
    VB_CUDA(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    weights_held += bytes;
    return d;
  }
  // A matrix in the compute dtype, copied straight from the mapping when no conversion is needed.
  void upload_rows(void* dst, const WeightRef& w) {
    const size_t bytes = size_t(w.rows * w.cols) * 2;
    if (w.dtype == act) {
      VB_CUDA(cudaMemcpy(dst, w.data, bytes, cudaMemcpyHostToDevice));
    } else {
      std::vector<uint16_t> v = to_half_type(w, act);
      VB_CUDA(cudaMemcpy(dst, v.data(), bytes, cudaMemcpyHostToDevice));
    }
  }
  void* upload_stacked(const std::vector<const WeightRef*>& parts) {
    int64_t rows = 0;
    for (auto* p : parts) rows += p->rows;
    const int64_t cols = parts[0]->cols;
    void* d = dmalloc(size_t(rows * cols) * 2);
    weights_held += size_t(rows * cols) * 2;
    char* at = static_cast<char*>(d);
    for (auto* p : parts) {
      if (p->cols != cols) throw Error("cuda: weights '" + p->name + "' and '" + parts[0]->name + "' differ in width");
      upload_rows(at, *p);
      at += size_t(p->rows * cols) * 2;
    }
    return d;
  }
  // Rows [r0, r1) x columns [c0, c1) of each weight, stacked by rows, in the compute dtype (a
  // tensor-parallel shard; the whole matrix at tp == 1).
  struct Part {
    const WeightRef* w;
    int64_t r0, r1, c0, c1;
  };
  static Part whole(const WeightRef& w) { return Part{&w, 0, w.rows, 0, w.cols}; }
  void* upload_parts(const std::vector<Part>& parts) {
    int64_t rows = 0;
    const int64_t cols = parts[0].c1 - parts[0].c0;
    for (const Part& p : parts) {
      rows += p.r1 - p.r0;
      if (p.c1 - p.c0 != cols)
        throw Error("cuda: weights '" + p.w->name + "' and '" + parts[0].w->name + "' differ in width");
    }
    void* d = dmalloc(size_t(rows * cols) * 2);
    weights_held += size_t(rows * cols) * 2;
    char* at = static_cast<char*>(d);
    for (const Part& p : parts) {
      std::vector<uint16_t> conv;
      const void* src = p.w->data;
      if (p.w->dtype != act) {
        conv = to_half_type(*p.w, act);
        src = conv.data();
      }
      const char* s = static_cast<const char*>(src) + (size_t(p.r0) * size_t(p.w->cols) + size_t(p.c0)) * 2;
      VB_CUDA(cudaMemcpy2D(at, size_t(cols) * 2, s, size_t(p.w->cols) * 2, size_t(cols) * 2, size_t(p.r1 - p.r0),
                           cudaMemcpyHostToDevice));
      at += size_t((p.r1 - p.r0) * cols) * 2;
    }
    return d;
  }
  float* upload_norm(const WeightRef& w) {
    std::vector<float> v = norm_values(w, act);
    return static_cast<float*>(upload(v.data(), v.size() * sizeof(float)));
  }

  static bool fused_merge_enabled() {
    static const bool on = [] {
      const char* e = std::getenv("VERBATIM_ATTN_FUSED_MERGE");
      return e && std::string(e) == "1";
    }();
    return on;
  }
  void ensure_tokens(int T) {
    if (T <= cap_t) return;
    const int n = std::max(T, cap_t * 2);
    const size_t e = 2;
    const int64_t H = c.hidden_size, I = I_l, qw = int64_t(nh_l) * c.head_dim;
    reset_graphs();  // captured graphs hold the old buffers' addresses
    for (void* p : {x, h, qkv, attn, o, gu, mlp, static_cast<void*>(merge_cnt)}) dfree(p, 0);
    if (tp > 1) {
      dfree(gather, 0);
      gather = static_cast<float*>(dmalloc(size_t(cuda::kTpSegments) * size_t(n) * size_t(H) * sizeof(float)));
    }
    x = dmalloc(size_t(n) * H * e);
    h = dmalloc(size_t(n) * H * e);
    qkv = dmalloc(size_t(n) * nqkv * e);
    attn = dmalloc(size_t(n) * qw * e);
    o = dmalloc(size_t(n) * H * e);
    gu = dmalloc(size_t(n) * 2 * I * e);
    mlp = dmalloc(size_t(n) * I * e);
    merge_cnt = nullptr;
    if (fused_merge_enabled()) {
      merge_cnt = static_cast<int32_t*>(dmalloc(size_t(n) * size_t(nkv_l) * sizeof(int32_t)));
      VB_CUDA(cudaMemsetAsync(merge_cnt, 0, size_t(n) * size_t(nkv_l) * sizeof(int32_t), stream));
    }
    cap_t = n;
  }
  void ensure_inputs(size_t ints) {
    if (ints > d_in_cap) {
      dfree(d_in, d_in_cap * 4);
      d_in_cap = std::max(ints, d_in_cap * 2);
      d_in = static_cast<int32_t*>(dmalloc(d_in_cap * 4));
    }
    if (ints > h_in_cap) {
      if (h_in) cudaFreeHost(h_in);
      h_in_cap = std::max(ints, h_in_cap * 2);
      VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&h_in), h_in_cap * 4));
    }
  }

  // --- GEMM: the contract's kernel, or cuBLAS in fast mode.
  void gemm(const void* xin, int M, int K, const void* W, int N, int split, void* y, float* y32) {
    if (M <= 0) return;
    if (opt.fast) {
      const float alpha = 1.0f, beta = 0.0f;
      const cudaDataType_t t = act == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
      cublas_check(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, t, K, xin, t, K, &beta,
                                y32 ? static_cast<void*>(y32) : y, y32 ? CUDA_R_32F : t, N, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
      return;
    }
    cuda::GemmOut out;
    out.y = y;
    out.y32 = y32;
    cuda::gemm(xin, M, K, K, W, N, act, split, out, ws, ws_bytes, stream);
  }

  // A GEMM whose consumer is a fused kernel (fused.h): contract mode may leave split-K partials
  // for the consumer to sum; fast mode (cuBLAS) always writes y.
  cuda::GemmResult fused_gemm(const void* xin, int M, int K, const void* W, int N, int split, void* y) {
    if (opt.fast || M <= 0) {
      gemm(xin, M, K, W, N, split, y, nullptr);
      cuda::GemmResult r;
      r.y = y;
      r.ld = N;
      r.M = M;
      r.N = N;
      return r;
    }
    return cuda::gemm_for_consumer(xin, M, K, W, N, act, split, y, ws, ws_bytes, stream);
  }

  // A row-parallel GEMM (o_proj, down_proj: K = this rank's slice, N = hidden) as its consumer
  // reads it. tp == 1: the split-K GEMM in kTpSegments segments (split_o / split_down). tp > 1:
  // this rank computes its 8 / tp segments into its place of `gather`, then the all-gather (a copy,
  // rank order = segment order) leaves all 8 partials on every rank; the consumer adds them in
  // segment order from partial 0, the arithmetic of tp == 1 on the same operands.
  cuda::GemmResult row_parallel(const void* xin, int T, int K, const void* W, int split, void* y) {
    if (tp == 1) return fused_gemm(xin, T, K, W, int(c.hidden_size), split, y);
    const int64_t H = c.hidden_size;
    const size_t plane = size_t(T) * size_t(H);
    cuda::GemmResult r;
    r.M = T;
    r.N = int(H);
    if (T <= 0) return r;
    if (opt.fast || tp_allreduce) {
      // The control: each rank's whole-slice sum, added across ranks by NCCL (order not ours).
      gemm(xin, T, K, W, int(H), split / tp, nullptr, gather);
      cuda::nccl_all_reduce_sum_f32(comm, gather, gather, plane, stream);
      r.partials = gather;
      r.split = 1;
      return r;
    }
    const int segs = split / tp;
    float* mine = gather + size_t(rank) * size_t(segs) * plane;
    cuda::GemmOut out;
    if (segs > 1) out.partials_only = true;  // [segs, T, H] at `mine`
    else out.y32 = mine;                     // one segment: its sum is the partial
    cuda::gemm(xin, T, K, K, W, int(H), act, segs, out, mine, size_t(segs) * plane * sizeof(float), stream);
    cuda::nccl_all_gather_f32(comm, mine, gather, size_t(segs) * plane, stream);
    r.partials = gather;
    r.split = split;
    return r;
  }

  // lm_head for `rows` rows of `in` into logits [rows, V] (fp32). tp > 1: vocabulary-parallel, each
  // rank's slice of columns all-gathered (a copy) and laid side by side in vocabulary order on rank
  // 0, the one rank that samples (every rank's slices are the same bits; one sample stands for all).
  void lm_head_pass(const void* in, int rows) {
    const int64_t H = c.hidden_size;
    if (tp == 1) {
      gemm(in, rows, int(H), lm_head, c.vocab_size, split_lm, nullptr, logits);
      return;
    }
    const size_t count = size_t(rows) * size_t(V_l);
    float* mine = glog + size_t(rank) * count;
    gemm(in, rows, int(H), lm_head, int(V_l), split_lm, nullptr, mine);
    cuda::nccl_all_gather_f32(comm, mine, glog, count, stream);
    if (rank != 0) return;
    for (int q = 0; q < tp; ++q)
      VB_CUDA(cudaMemcpy2DAsync(logits + size_t(q) * size_t(V_l), size_t(c.vocab_size) * sizeof(float),
                                glog + size_t(q) * count, size_t(V_l) * sizeof(float), size_t(V_l) * sizeof(float),
                                size_t(rows), cudaMemcpyDeviceToDevice, stream));
  }

  int part_tokens(int num_seqs) const {
    // Contract: parts of one attention tile (64 positions), whatever the batch. Fast mode picks
    // the part size from the batch (as flash-decoding heuristics do), which changes the bits of a
    // row with the company it keeps.
    if (!opt.fast) return 64;
    return num_seqs >= 16 ? 1024 : 128;
  }

  // Contract steps of >= VERBATIM_ATTN_RING_MIN_BATCH sequences (default 8; 0: never) run their
  // <= 16-row query tiles in the ring kernel (whole rows folded in the CTA) instead of per-tile
  // parts and a merge. Same bits (cuda_ops_test); speed only: with few (sequence, kv head) CTAs
  // the per-part kernels spread a row over more SMs (s23_f, 8B ms/step without / with: 4
  // sequences 5.077 / 5.173, 8 5.307 / 5.217, 16 5.930 / 5.415; s23_h: 40-56 sequences -2 to -5%
  // with the shape chosen by waves).
  bool use_ring(int num_seqs) const {
    static const int ring_min = cuda::env_int("VERBATIM_ATTN_RING_MIN_BATCH", 8);
    return !opt.fast && ring_min > 0 && num_seqs >= ring_min && cuda::attention_ring_ok(int(c.head_dim));
  }

  // Device pointers and launch plan of one step (eager: d_in; graph: g_in at fixed addresses).
  struct Step {
    int T = 0;
    const int32_t *tok = nullptr, *pos = nullptr, *slot = nullptr, *sb = nullptr, *bt = nullptr, *mt = nullptr,
                  *mp = nullptr;
    const AttnItem* items = nullptr;
    std::vector<cuda::AttnLaunch> launches;
    int part_tokens = 64;
  };
  void launch_layers(const Step& st);  // embed .. final norm into h (kernels only: graph-capturable)

  // CUDA graphs of decode steps, one per (batch bucket, split-KV part cap, part size).
  static constexpr int kGraphMaxBatch = 64;
  static constexpr int kGraphMaxParts = 1024;
  struct GraphKey {
    int bucket, parts_cap, part_tokens;
    bool operator<(const GraphKey& o) const {
      return std::tie(bucket, parts_cap, part_tokens) < std::tie(o.bucket, o.parts_cap, o.part_tokens);
    }
  };
  std::map<GraphKey, cudaGraphExec_t> graphs;
  bool graphs_broken = false;
  int32_t* g_in = nullptr;   // fixed-address inputs of graph steps
  int32_t* hg_in = nullptr;  // pinned staging
  // Recorded after each upload from pinned staging (h_in, hg_in). A step without logit rows (a
  // middle prefill chunk) returns without a sync, so its upload can still be queued behind the
  // previous kernels when the host prepares the next step: wait for it before rewriting staging.
  cudaEvent_t staging_read = nullptr;
  bool staging_pending = false;
  cuda::StepTiming timing;  // VERBATIM_STEP_TIMING=1 (step_timing.h)
  void wait_staging() {
    if (staging_pending) VB_CUDA(cudaEventSynchronize(staging_read));
    staging_pending = false;
  }
  void staging_uploaded() {
    VB_CUDA(cudaEventRecord(staging_read, stream));
    staging_pending = true;
  }
  size_t g_bt_cap = 0;       // block-table ints the graph layout holds
  size_t g_ints = 0;
  int scratch_slot = 0;      // a KV slot nobody owns: padded graph rows write there
  void reset_graphs() {
    for (auto& [k, e] : graphs) cudaGraphExecDestroy(e);
    graphs.clear();
  }
  // Decode or verification batch (every row a logit row, at most 64 rows) that a graph can run.
  bool graph_step(const ForwardBatch& b);

  void validate(const ForwardBatch& b) const;
  void forward(const ForwardBatch& b);  // everything up to h (final-normed hidden rows)
  void logits_pass(const ForwardBatch& b, int r0, int rn);  // lm_head for logit rows [r0, r0 + rn)
  int32_t* in_logit_rows = nullptr;  // device pointer of this step's logit row list
};

CudaBackend::CudaBackend(ModelWeights weights, DType dtype, CudaOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.weights = std::move(weights);
  m.c = m.weights.config;
  m.act = dtype;
  m.opt = options;
  const ModelConfig& c = m.c;
  if (dtype != DType::BF16 && dtype != DType::F16)
    throw Error("--device cuda computes in bfloat16 or float16, not " + std::string(dtype_name(dtype)));
  if (c.head_dim <= 0 || c.head_dim % 16)
    throw Error(m.weights.dir + "/config.json: head_dim " + std::to_string(c.head_dim) +
                " is not a multiple of 16 (the CUDA attention needs 16, 32, 64, 128 or 256)");
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads)
    throw Error(m.weights.dir + "/config.json: num_attention_heads " + std::to_string(c.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
  if (c.hidden_size % 8 || c.intermediate_size % 8 || c.vocab_size % 8)
    throw Error(m.weights.dir + "/config.json: hidden_size, intermediate_size and vocab_size must be multiples of 8 "
                "for --device cuda");
  m.tp = options.tensor_parallel_size;
  m.rank = options.tp_rank;
  m.comm = options.tp_comm;
  cuda::check_tp_plan(c, m.tp, m.weights.dir + "/config.json");
  if (m.tp > 1 && (!m.comm || m.rank < 0 || m.rank >= m.tp))
    throw Error("cuda: a tensor-parallel rank needs its communicator (use make_cuda_backend)");
  if (options.tp_reduce != "allgather" && options.tp_reduce != "allreduce")
    throw Error("--tp-reduce " + options.tp_reduce + ": expected allgather or allreduce");
  m.tp_allreduce = m.tp > 1 && options.tp_reduce == "allreduce";
  m.nh_l = c.num_heads / m.tp;
  m.nkv_l = c.num_kv_heads / m.tp;
  m.I_l = c.intermediate_size / m.tp;
  m.V_l = c.vocab_size / m.tp;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw Error("--device cuda: no CUDA device is visible");
  if (options.device < 0 || options.device + m.tp > count)
    throw Error("--device cuda:" + std::to_string(options.device) +
                (m.tp > 1 ? " with --tensor-parallel-size " + std::to_string(m.tp) : std::string()) + ": only " +
                std::to_string(count) + " device(s)");
  m.device = options.device + m.rank;
  VB_CUDA(cudaSetDevice(m.device));
  cudaDeviceProp prop{};
  VB_CUDA(cudaGetDeviceProperties(&prop, m.device));
  m.name = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  VB_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  VB_CUDA(cudaEventCreateWithFlags(&m.staging_read, cudaEventDisableTiming));
  if (m.opt.fast) {
    cublas_check(cublasCreate(&m.cublas), "cublasCreate");
    cublas_check(cublasSetStream(m.cublas, m.stream), "cublasSetStream");
    // A workspace of our own, so cuBLAS calls can be captured into CUDA graphs.
    const size_t wsb = size_t(32) << 20;
    cublas_check(cublasSetWorkspace(m.cublas, m.dmalloc(wsb), wsb), "cublasSetWorkspace");
  }
  cuda::attention_prepare();  // before any graph capture
  cuda::gemm_prepare();       // likewise (the v2 GEMM's shared-memory limits)

  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  // Every split from the whole model's shapes, whatever tp: a column shard then sums each output
  // over K in the segments of tp == 1 (gemm_split_for reads N, which a shard divides).
  const int nqkv_all = int((c.num_heads + 2 * c.num_kv_heads) * hd);
  m.nqkv = int((m.nh_l + 2 * m.nkv_l) * hd);
  m.split_qkv = cuda::gemm_split_for(nqkv_all, int(H));
  m.split_o = cuda::row_parallel_split(int(H), int(c.num_heads * hd));
  m.split_gu = cuda::gemm_split_for(int(2 * I), int(H));
  m.split_down = cuda::row_parallel_split(int(H), int(I));
  m.split_lm = cuda::gemm_split_for(c.vocab_size, int(H));

  // Rank r's shards (Megatron layout): q rows of its heads, k/v rows of its KV heads, gate/up rows
  // of its intermediate slice, o/down columns of the same slices (= its K-segments), lm_head rows
  // of its vocabulary slice; embedding and norms replicated.
  using Part = Impl::Part;
  const int r = m.rank, N = m.tp;
  const int64_t q0 = int64_t(r) * m.nh_l * hd, q1 = q0 + int64_t(m.nh_l) * hd;
  const int64_t k0 = int64_t(r) * m.nkv_l * hd, k1 = k0 + int64_t(m.nkv_l) * hd;
  const int64_t i0 = cuda::tp_part_begin(I, r, N), i1 = i0 + m.I_l;
  const int64_t v0 = cuda::tp_part_begin(c.vocab_size, r, N), v1 = v0 + m.V_l;
  m.embed = m.upload_parts({Impl::whole(m.weights.embed)});
  const WeightRef& lm = m.weights.lm_head;
  m.lm_head = N == 1 && lm.data == m.weights.embed.data ? m.embed : m.upload_parts({Part{&lm, v0, v1, 0, lm.cols}});
  m.final_norm = m.upload_norm(m.weights.final_norm);
  for (const LayerWeights& L : m.weights.layers) {
    Impl::Layer d;
    d.qkv = m.upload_parts({Part{&L.q_proj, q0, q1, 0, H}, Part{&L.k_proj, k0, k1, 0, H}, Part{&L.v_proj, k0, k1, 0, H}});
    d.o = m.upload_parts({Part{&L.o_proj, 0, H, q0, q1}});
    d.gu = m.upload_parts({Part{&L.gate_proj, i0, i1, 0, H}, Part{&L.up_proj, i0, i1, 0, H}});
    d.down = m.upload_parts({Part{&L.down_proj, 0, H, i0, i1}});
    d.in_norm = m.upload_norm(L.input_norm);
    d.post_norm = m.upload_norm(L.post_norm);
    d.q_norm = m.upload_norm(L.q_norm);
    d.k_norm = m.upload_norm(L.k_norm);
    m.layers.push_back(d);
  }

  m.rope_positions = std::max(1, c.max_position_embeddings);
  {
    const std::vector<float> table = cuda::rope_table(m.rope_positions, int(hd), c.rope_theta);
    m.rope = static_cast<float*>(m.dmalloc(table.size() * sizeof(float)));
    VB_CUDA(cudaMemcpy(m.rope, table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice));
  }

  m.ensure_tokens(std::max(1, options.max_tokens));
  m.last = m.dmalloc(size_t(Impl::kLogitRows) * size_t(H) * 2);
  m.logits = static_cast<float*>(m.dmalloc(size_t(Impl::kLogitRows) * size_t(c.vocab_size) * sizeof(float)));
  if (m.tp > 1) m.glog = static_cast<float*>(m.dmalloc(size_t(Impl::kLogitRows) * size_t(c.vocab_size) * sizeof(float)));
  m.ws = static_cast<float*>(m.dmalloc(m.ws_bytes));
  m.sb.stats = static_cast<float*>(m.dmalloc(size_t(Impl::kLogitRows) * 2 * sizeof(float)));
  m.d_specs = static_cast<cuda::SampleRowSpec*>(m.dmalloc(Impl::kLogitRows * sizeof(cuda::SampleRowSpec)));
  m.d_out = static_cast<cuda::SampleRowOut*>(m.dmalloc(Impl::kLogitRows * sizeof(cuda::SampleRowOut)));
  m.d_top_ids = static_cast<int32_t*>(m.dmalloc(Impl::kLogitRows * cuda::kMaxTopLogprobs * sizeof(int32_t)));
  m.d_top_lps = static_cast<float*>(m.dmalloc(Impl::kLogitRows * cuda::kMaxTopLogprobs * sizeof(float)));
  VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.h_specs), Impl::kLogitRows * sizeof(cuda::SampleRowSpec)));
  VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.h_out), Impl::kLogitRows * sizeof(cuda::SampleRowOut)));
  VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.h_top_ids), Impl::kLogitRows * cuda::kMaxTopLogprobs * sizeof(int32_t)));
  VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.h_top_lps), Impl::kLogitRows * cuda::kMaxTopLogprobs * sizeof(float)));
  VB_CUDA(cudaStreamSynchronize(m.stream));
}

CudaBackend::~CudaBackend() {
  Impl& m = *impl_;
  cudaSetDevice(m.device);
  if (m.stream) cudaStreamSynchronize(m.stream);
  m.reset_graphs();
  if (m.hg_in) cudaFreeHost(m.hg_in);
  for (void* p : m.allocations) cudaFree(p);
  for (void* p : {static_cast<void*>(m.h_in), static_cast<void*>(m.h_specs), static_cast<void*>(m.h_out),
                  static_cast<void*>(m.h_top_ids), static_cast<void*>(m.h_top_lps), static_cast<void*>(m.h_samp_in)})
    if (p) cudaFreeHost(p);
  if (m.cublas) cublasDestroy(m.cublas);
  if (m.staging_read) cudaEventDestroy(m.staging_read);
  if (m.stream) cudaStreamDestroy(m.stream);
}

void CudaBackend::inject_device_fault(bool hang) {
  VB_CUDA(cudaSetDevice(impl_->device));
  cuda::launch_injected_fault(hang, impl_->stream);
}

const ModelConfig& CudaBackend::config() const { return impl_->c; }
DType CudaBackend::dtype() const { return impl_->act; }
std::string CudaBackend::device_name() const { return impl_->name; }
const CudaOptions& CudaBackend::options() const { return impl_->opt; }
size_t CudaBackend::weight_bytes() const { return impl_->weights_held; }
size_t CudaBackend::device_bytes_held() const { return impl_->held; }
size_t CudaBackend::kv_bytes() const { return impl_->kv ? 2 * impl_->kv_layer_bytes * size_t(impl_->c.num_layers) : 0; }
void CudaBackend::synchronize() { VB_CUDA(cudaStreamSynchronize(impl_->stream)); }

void CudaBackend::tp_warm_up() {
  Impl& m = *impl_;
  if (m.tp == 1) return;
  VB_CUDA(cudaSetDevice(m.device));
  // One small and one full-size all-gather (in place, as the steps issue them): both protocols'
  // connections are made eagerly. The buffers hold nothing yet.
  const size_t plane = size_t(m.cap_t) * size_t(m.c.hidden_size);
  const size_t segs = size_t(m.split_o / m.tp);
  cuda::nccl_all_gather_f32(m.comm, m.glog + size_t(m.rank), m.glog, 1, m.stream);
  cuda::nccl_all_gather_f32(m.comm, m.gather + size_t(m.rank) * segs * plane, m.gather, segs * plane, m.stream);
  VB_CUDA(cudaStreamSynchronize(m.stream));
}

std::string CudaBackend::kernel_config() const {
  const Impl& m = *impl_;
  if (m.opt.fast)
    return "cuda-fast-v1;CONTRACT-OFF;gemm=cublasGemmEx-default-heuristics;attn_part=by-batch(128|1024);attn_tile=64";
  auto split = [](const char* name, int s) { return std::string(name) + "=" + std::to_string(s); };
  // The tensor-parallel size is not in it: with the all-gather combine every size gives the bits of
  // one GPU (tests/cuda_tp_test). The all-reduce control changes them, so it is named.
  const std::string tp_control =
      m.tp_allreduce ? ";TP-ALLREDUCE-CONTRACT-OFF;tp=" + std::to_string(m.tp) : std::string();
  // cuda-v2 (session 14): each k32 chunk's two k16 steps take chunk elements 0..15, then 16..31
  // (cuda-v1: 8·tig + {0..3}, then 8·tig + {4..7}); other sums, so another fingerprint.
  return "cuda-v2;gemm=mma.m16n8k16-f32acc,k32-chunks-2mma-k16-sets-0..15|16..31,kseg-split(" +
         split("qkv", m.split_qkv) + "," +
         split("o", m.split_o) + "," + split("gate_up", m.split_gu) + "," + split("down", m.split_down) + "," +
         split("lm_head", m.split_lm) + "),split-sum-in-order;attn_tile=64;attn_part=64,tile-states-folded-in-position-order;"
         "attn_dot=mma.m16n8k16;softmax=online-tile-merge,p-rounded,quad-tree-tile-sum;exp=cody-waite-deg6;"
         "rmsnorm=lanes16-halving-tree;rope=host-table-powf-cosf-sinf;silu=exp_f32;"
         "sampler=vocab-8-chunks-block-tree-sums-chunks-in-order,stable-radix-sort;"
         "row_parallel=kseg8-in-order(o,down),tp-allgather;weights=" +
         std::string(dtype_name(m.act)) + tp_control;
}

size_t CudaBackend::kv_block_bytes(int block_size) const {
  const ModelConfig& c = impl_->c;
  return 2 * size_t(c.num_layers) * size_t(block_size) * size_t(impl_->nkv_l) * size_t(c.head_dim) * 2;
}

size_t CudaBackend::kv_budget_bytes() const {
  size_t free_b = 0, total = 0;
  VB_CUDA(cudaSetDevice(impl_->device));
  VB_CUDA(cudaMemGetInfo(&free_b, &total));
  const double target = impl_->opt.gpu_memory_utilization * double(total);
  const double used = double(total - free_b);
  // Room kept for buffers allocated later (sampler sort buffers, larger activations).
  const double reserve = double(size_t(512) << 20);
  const double budget = target - used - reserve;
  return budget > 0 ? size_t(budget) : 0;
}

void CudaBackend::allocate_kv(int num_blocks, int block_size) {
  Impl& m = *impl_;
  if (num_blocks <= 0 || block_size <= 0)
    throw Error("allocate_kv: num_blocks " + std::to_string(num_blocks) + " and block_size " +
                std::to_string(block_size) + " must be positive");
  VB_CUDA(cudaSetDevice(m.device));
  VB_CUDA(cudaStreamSynchronize(m.stream));
  if (m.kv) m.dfree(m.kv, 2 * m.kv_layer_bytes * size_t(m.c.num_layers));
  m.reset_graphs();  // graphs hold the old cache's addresses
  // One block past the engine's: the scratch slot padded graph rows write their K/V to.
  m.kv_layer_bytes =
      size_t(num_blocks + 1) * size_t(block_size) * size_t(m.nkv_l) * size_t(m.c.head_dim) * 2;
  m.scratch_slot = num_blocks * block_size;
  const size_t total = 2 * m.kv_layer_bytes * size_t(m.c.num_layers);
  m.kv = m.dmalloc(total);
  // Zeros, so a block never holds NaN garbage (masked keys multiply by exactly 0).
  VB_CUDA(cudaMemset(m.kv, 0, total));
  m.num_blocks = num_blocks;
  m.block_size = block_size;
}

void CudaBackend::Impl::validate(const ForwardBatch& b) const {
  const size_t T = b.tokens.size();
  if (num_blocks == 0) throw Error("forward: the KV cache is not allocated (call allocate_kv first)");
  if (b.positions.size() != T || b.token_seq.size() != T)
    throw Error("forward: batch has " + std::to_string(T) + " tokens but " + std::to_string(b.positions.size()) +
                " positions and " + std::to_string(b.token_seq.size()) + " token_seq entries");
  for (size_t t = 0; t < T; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= c.vocab_size)
      throw Error("forward: token " + std::to_string(b.tokens[t]) + " at batch row " + std::to_string(t) +
                  " is outside the vocabulary (" + std::to_string(c.vocab_size) + ")");
    const int32_t s = b.token_seq[t], p = b.positions[t];
    if (s < 0 || size_t(s) >= b.block_tables.size())
      throw Error("forward: token_seq " + std::to_string(s) + " at batch row " + std::to_string(t) +
                  " has no block table");
    if (p < 0) throw Error("forward: negative position at batch row " + std::to_string(t));
    if (p >= rope_positions)
      throw Error("forward: position " + std::to_string(p) + " at batch row " + std::to_string(t) +
                  " is beyond max_position_embeddings (" + std::to_string(rope_positions) + ")");
    const std::vector<int32_t>& bt = b.block_tables[size_t(s)];
    if (size_t(p / block_size) >= bt.size())
      throw Error("forward: position " + std::to_string(p) + " at batch row " + std::to_string(t) +
                  " is beyond its block table (" + std::to_string(bt.size()) + " blocks)");
    // The CUDA attention reads a query tile's keys from one block table: a sequence's tokens
    // must be contiguous in the batch (the engine lays batches out that way).
    if (t > 0 && b.token_seq[t] != b.token_seq[t - 1])
      for (size_t u = 0; u + 1 < t; ++u)
        if (b.token_seq[u] == s) throw Error("forward: the tokens of sequence " + std::to_string(s) + " are not contiguous");
  }
  for (const std::vector<int32_t>& bt : b.block_tables)
    for (int32_t blk : bt)
      if (blk < 0 || blk >= num_blocks)
        throw Error("forward: block id " + std::to_string(blk) + " is outside the KV cache (" +
                    std::to_string(num_blocks) + " blocks)");
  for (int32_t r : b.logit_rows)
    if (r < 0 || size_t(r) >= T) throw Error("forward: logit row " + std::to_string(r) + " is not a batch row");
}

void CudaBackend::Impl::forward(const ForwardBatch& b) {
  const int T = int(b.tokens.size());
  const int64_t hd = c.head_dim;
  const int nh = nh_l, nkv = nkv_l;
  ensure_tokens(T);

  // Host side of the step: slots, flattened block tables, the attention plan, logit rows.
  std::vector<int32_t> bt_offset(b.block_tables.size());
  size_t bt_total = 0;
  for (size_t s = 0; s < b.block_tables.size(); ++s) {
    bt_offset[s] = int32_t(bt_total);
    bt_total += b.block_tables[s].size();
  }
  int num_seqs = 0;  // sequences with tokens in this step (fast mode's part size; the ring kernel)
  for (int t = 0; t < T; ++t) num_seqs += t == 0 || b.token_seq[size_t(t)] != b.token_seq[size_t(t - 1)];
  const size_t state_floats = cuda::attention_state_floats(int(hd)) * size_t(nh);
  const int max_states = int(ws_bytes / (state_floats * sizeof(float)));
  const int part = part_tokens(num_seqs);
  AttnPlan plan = cuda::plan_attention(b.positions.data(), b.token_seq.data(), bt_offset.data(), T, nh / nkv, part,
                                       max_states, /*allow_fold=*/part == 64, use_ring(num_seqs));
  // Layout of the upload: tokens, positions, slots, state_base, block tables, merge tokens,
  // merge parts, logit rows, items (4 ints each).
  const size_t n_items = plan.items.size(), n_merge = plan.merge_tokens.size(), R = b.logit_rows.size();
  const size_t o_tok = 0, o_pos = o_tok + T, o_slot = o_pos + T, o_sb = o_slot + T, o_bt = o_sb + T,
               o_mt = o_bt + bt_total, o_mp = o_mt + n_merge, o_lr = o_mp + n_merge, o_it = (o_lr + R + 3) / 4 * 4,
               total = o_it + 4 * n_items;
  wait_staging();  // before ensure_inputs too: it may free h_in
  ensure_inputs(total);
  int32_t* hi = h_in;
  for (int t = 0; t < T; ++t) {
    const std::vector<int32_t>& bt = b.block_tables[size_t(b.token_seq[size_t(t)])];
    const int32_t p = b.positions[size_t(t)];
    hi[o_tok + t] = b.tokens[size_t(t)];
    hi[o_pos + t] = p;
    hi[o_slot + t] = bt[size_t(p / block_size)] * block_size + p % block_size;
    hi[o_sb + t] = plan.state_base[size_t(t)];
  }
  for (size_t s = 0; s < b.block_tables.size(); ++s)
    std::copy(b.block_tables[s].begin(), b.block_tables[s].end(), hi + o_bt + bt_offset[s]);
  std::copy(plan.merge_tokens.begin(), plan.merge_tokens.end(), hi + o_mt);
  std::copy(plan.merge_parts.begin(), plan.merge_parts.end(), hi + o_mp);
  std::copy(b.logit_rows.begin(), b.logit_rows.end(), hi + o_lr);
  if (n_items) std::memcpy(hi + o_it, plan.items.data(), n_items * sizeof(AttnItem));
  timing.queue_begin(stream);
  VB_CUDA(cudaMemcpyAsync(d_in, h_in, total * 4, cudaMemcpyHostToDevice, stream));
  staging_uploaded();
  Step st;
  st.T = T;
  st.tok = d_in + o_tok;
  st.pos = d_in + o_pos;
  st.slot = d_in + o_slot;
  st.sb = d_in + o_sb;
  st.bt = d_in + o_bt;
  st.mt = d_in + o_mt;
  st.mp = d_in + o_mp;
  st.items = reinterpret_cast<const AttnItem*>(d_in + o_it);
  st.launches = plan.launches;
  st.part_tokens = part;
  in_logit_rows = d_in + o_lr;
  launch_layers(st);
}

void CudaBackend::Impl::launch_layers(const Step& st) {
  const int T = st.T;
  // Scheduling only (same bits): graph steps are captured per bucket, so st.T is the bucket there.
  const cuda::PdlScope pdl(cuda::pdl_for_rows(T));
  const int64_t H = c.hidden_size, I = I_l, hd = c.head_dim;
  const int nh = nh_l, nkv = nkv_l;
  const float scale = float(1.0 / std::sqrt(double(hd)));  // HF: head_dim ** -0.5 (as the CPU)
  const float eps = c.rms_norm_eps;
  const cuda::RowMap flat;
  cuda::embed(embed, H, st.tok, T, act, x, stream);
  cuda::GemmResult down;  // the previous layer's MLP output, as its consumer reads it
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    if (l == 0) cuda::rmsnorm(x, flat, T, int(H), L.in_norm, eps, act, h, flat, stream);
    else cuda::add_rmsnorm_from(x, down, T, int(H), L.in_norm, eps, act, h, stream);
    char* kc = static_cast<char*>(kv) + 2 * kv_layer_bytes * l;
    char* vc = kc + kv_layer_bytes;
    char* q_base = static_cast<char*>(qkv);
    // q/k RMSNorm, RoPE, and the K/V cache write, fused with the qkv GEMM's split-K sum. Every
    // token's K/V is in the cache before any token attends (as the CPU reference).
    cuda::QkvPost qp;
    qp.in = fused_gemm(h, T, int(H), L.qkv, nqkv, split_qkv, qkv);
    qp.qkv = qkv;
    qp.nh = nh;
    qp.nkv = nkv;
    qp.hd = int(hd);
    qp.q_norm = L.q_norm;
    qp.k_norm = L.k_norm;
    qp.eps = eps;
    qp.positions = st.pos;
    qp.cos_sin = rope;
    qp.slots = st.slot;
    qp.k_cache = kc;
    qp.v_cache = vc;
    cuda::qkv_post(qp, T, act, stream);
    AttnArgs a;
    a.q = q_base;
    a.q_ld = nqkv;
    a.k_cache = kc;
    a.v_cache = vc;
    a.out = attn;
    a.states = ws;
    a.positions = st.pos;
    a.block_tables = st.bt;
    a.state_base = st.sb;
    a.items = st.items;
    a.merge_counters = merge_cnt;
    a.heads = nh;
    a.kv_heads = nkv;
    a.head_dim = int(hd);
    a.block_size = block_size;
    a.part_tokens = st.part_tokens;
    a.scale = scale;
    for (const cuda::AttnLaunch& g : st.launches) {
      cuda::attention(a, g, act, stream);
      cuda::attention_merge(a, st.mt + g.merge_begin, st.mp + g.merge_begin, g.merge_end - g.merge_begin, act, stream);
    }
    const cuda::GemmResult ao = row_parallel(attn, T, int(nh * hd), L.o, split_o, o);
    cuda::add_rmsnorm_from(x, ao, T, int(H), L.post_norm, eps, act, h, stream);
    if (!opt.fast && cuda::gemm_silu_mul_ok(T, int(H), int(I), split_gu)) {
      cuda::gemm_silu_mul(h, T, int(H), L.gu, int(I), act, mlp, stream, split_gu);  // SiLU·mul in the GEMM's epilogue
    } else {
      const cuda::GemmResult gu_r = fused_gemm(h, T, int(H), L.gu, int(2 * I), split_gu, gu);
      cuda::silu_mul_from(gu_r, T, I, act, mlp, stream);
    }
    down = row_parallel(mlp, T, int(I), L.down, split_down, o);
  }
  // Last residual add fused with the final norm (row-wise: the same bits as norming only the
  // logit rows, which is what the CPU does).
  cuda::add_rmsnorm_from(x, down, T, int(H), final_norm, eps, act, h, stream);
}

bool CudaBackend::Impl::graph_step(const ForwardBatch& b) {
  const int B = int(b.tokens.size());
  if (!opt.cuda_graphs || graphs_broken || B == 0 || B > kGraphMaxBatch) return false;
  if (c.num_heads / c.num_kv_heads > 16) return false;
  if (b.logit_rows.size() != size_t(B)) return false;
  // Several rows of one sequence (a speculative verification: last token + drafts) run in the
  // graph too: each row is a query at its own position over its sequence's block table, and every
  // row's K/V is written before any row attends (keys past a row's position are masked by
  // position), as in the eager path; by the contract the bits are the same either way.
  // VERBATIM_GRAPH_MULTI_ROW=0 sends such steps down the eager path (to measure the difference).
  static const bool multi_row = [] {
    const char* e = std::getenv("VERBATIM_GRAPH_MULTI_ROW");
    return !(e && std::string(e) == "0");
  }();
  // Tensor parallel: only one-row-per-sequence decode steps (the graphs validated on 2 GPUs, run 2
  // of session 2: prefill-like multi-row steps after graphs failed there, cause not isolated).
  for (int i = 0; i < B; ++i) {
    if (b.logit_rows[size_t(i)] != i) return false;
    if ((!multi_row || tp > 1) && i > 0 && b.token_seq[size_t(i)] == b.token_seq[size_t(i - 1)]) return false;
  }
  // The bucket and part cap decide only how much padding the graph carries: padded rows and
  // empty work items never touch a real row (rows are independent in every kernel).
  static const int kBuckets[] = {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64};
  int bucket = 64;
  for (int v : kBuckets)
    if (v >= B) { bucket = v; break; }
  const int part = part_tokens(B);
  // Contract, decode batches of >= VERBATIM_DECODE_FOLD_MIN_BATCH rows (opt-in, 0/unset: off):
  // each row's tiles folded in one CTA (attention_fold_kernel) instead of per-tile parts and a
  // merge. Same bits: the fold is the merge's arithmetic in the same order (cuda_ops_test
  // AttentionMergeOfManyPartsIsTheFold); only the speed differs.
  static const int fold_min = [] {
    const char* e = std::getenv("VERBATIM_DECODE_FOLD_MIN_BATCH");
    return e ? std::atoi(e) : 0;
  }();
  const bool fold = !opt.fast && fold_min > 0 && B >= fold_min;
  const bool ring = !fold && use_ring(B);
  int parts = 1;
  for (int32_t p : b.positions) parts = std::max(parts, p / part + 1);
  const int parts_cap = cuda::graph_parts_cap(parts);
  if (parts_cap > kGraphMaxParts) return false;
  const size_t state_floats = cuda::attention_state_floats(c.head_dim) * size_t(nh_l);
  if (size_t(bucket) * size_t(parts_cap) * state_floats * sizeof(float) > ws_bytes) return false;
  size_t bt_total = 0;
  for (int i = 0; i < B; ++i) bt_total += b.block_tables[size_t(b.token_seq[size_t(i)])].size();
  // Fixed layout: tokens, positions, slots, state_base, merge tokens, merge parts (kGraphMaxBatch
  // each), items (kGraphMaxBatch * kGraphMaxParts * 4), block tables (g_bt_cap).
  const size_t o_tok = 0, o_pos = 64, o_slot = 128, o_sb = 192, o_mt = 256, o_mp = 320, o_it = 384,
               o_bt = o_it + size_t(kGraphMaxBatch) * kGraphMaxParts * 4;
  wait_staging();  // hg_in may still be read by the previous upload
  if (bt_total > g_bt_cap || !g_in) {
    reset_graphs();  // the layout's addresses change: every captured graph is stale
    if (g_in) dfree(g_in, g_ints * 4);
    if (hg_in) cudaFreeHost(hg_in);
    g_bt_cap = std::max<size_t>(bt_total * 2, 1 << 16);
    g_ints = o_bt + g_bt_cap;
    g_in = static_cast<int32_t*>(dmalloc(g_ints * 4));
    VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&hg_in), g_ints * 4));
  }
  ensure_tokens(bucket);
  int32_t* hi = hg_in;
  size_t bt_at = 0;
  for (int i = 0; i < bucket; ++i) {
    const bool real = i < B;
    const int32_t p = real ? b.positions[size_t(i)] : 0;
    const int nparts = real ? p / part + 1 : 0;
    int32_t off = 0;
    if (real) {
      const std::vector<int32_t>& bt = b.block_tables[size_t(b.token_seq[size_t(i)])];
      off = int32_t(bt_at);
      std::copy(bt.begin(), bt.end(), hi + o_bt + bt_at);
      bt_at += bt.size();
      hi[o_slot + i] = bt[size_t(p / block_size)] * block_size + p % block_size;
    } else {
      hi[o_slot + i] = scratch_slot;
    }
    hi[o_tok + i] = real ? b.tokens[size_t(i)] : 0;
    hi[o_pos + i] = p;
    hi[o_sb + i] = nparts > 1 ? i * parts_cap : -1;
    hi[o_mt + i] = i;
    hi[o_mp + i] = nparts;
    if (fold || ring) {
      const AttnItem it{i, real ? 1 : 0, -1, off};
      std::memcpy(hi + o_it + size_t(i) * 4, &it, sizeof it);
    } else {
      for (int q = 0; q < parts_cap; ++q) {
        AttnItem it{i, q < nparts ? 1 : 0, q, off};
        std::memcpy(hi + o_it + (size_t(i) * parts_cap + q) * 4, &it, sizeof it);
      }
    }
  }
  const size_t used = o_bt + bt_at;
  timing.queue_begin(stream);
  VB_CUDA(cudaMemcpyAsync(g_in, hg_in, used * 4, cudaMemcpyHostToDevice, stream));
  staging_uploaded();
  const GraphKey key{bucket, fold ? 0 : ring ? -1 : parts_cap, part};
  auto it = graphs.find(key);
  if (it == graphs.end()) {
    Step st;
    st.T = bucket;
    st.tok = g_in + o_tok;
    st.pos = g_in + o_pos;
    st.slot = g_in + o_slot;
    st.sb = g_in + o_sb;
    st.bt = g_in + o_bt;
    st.mt = g_in + o_mt;
    st.mp = g_in + o_mp;
    st.items = reinterpret_cast<const AttnItem*>(g_in + o_it);
    cuda::AttnLaunch g;
    if (fold) {
      g.fold_end = bucket;  // whole-row items, padded with empty ones; no states, no merge
    } else if (ring) {
      g.ring_end = bucket;  // the same items, in the ring kernel
      g.ring_rows = int(c.num_heads / c.num_kv_heads);  // one token an item
    } else {
      g.small_end = bucket * parts_cap;  // per-part items, padded with empty ones
      g.large_begin = g.large_end = g.fold_begin = g.fold_end = g.small_end;
      g.merge_end = bucket;
    }
    st.launches = {g};
    st.part_tokens = part;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    VB_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      const cuda::PdlScope pdl(cuda::pdl_for_rows(bucket));
      launch_layers(st);
      lm_head_pass(h, bucket);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      // Tensor parallel: a rank falling back alone would issue other collectives than its peers
      // (sizes by T instead of the bucket): fail the step loudly instead.
      if (tp > 1) {
        std::string why = "unknown error";
        try {
          throw;
        } catch (const std::exception& e) {
          why = e.what();
        } catch (...) {
        }
        throw Error("tensor parallel rank " + std::to_string(rank) + ": CUDA graph capture failed: " + why);
      }
      graphs_broken = true;  // e.g. a library that cannot be captured: run eagerly from now on
      return false;
    }
    VB_CUDA(cudaStreamEndCapture(stream, &graph));
    VB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
    it = graphs.emplace(key, exec).first;
  }
  VB_CUDA(cudaGraphLaunch(it->second, stream));
  return true;
}

void CudaBackend::Impl::logits_pass(const ForwardBatch& b, int r0, int rn) {
  (void)b;
  const int64_t H = c.hidden_size;
  cuda::gather_rows(h, H, in_logit_rows + r0, rn, act, last, stream);
  lm_head_pass(last, rn);
}

void CudaBackend::forward_logits(const ForwardBatch& b, float* out) {
  Impl& m = *impl_;
  VB_CUDA(cudaSetDevice(m.device));
  m.validate(b);
  if (b.tokens.empty()) return;
  const int R = int(b.logit_rows.size());
  const size_t V = size_t(m.c.vocab_size);
  // Tensor-parallel ranks other than 0 run the same steps (and collectives) but hand nothing back.
  const bool hand_back = m.rank == 0;
  if (m.graph_step(b)) {  // decode step: the captured graph leaves every row's logits in m.logits
    if (hand_back)
      VB_CUDA(cudaMemcpyAsync(out, m.logits, size_t(R) * V * sizeof(float), cudaMemcpyDeviceToHost, m.stream));
    VB_CUDA(cudaStreamSynchronize(m.stream));
    return;
  }
  m.forward(b);
  for (int r0 = 0; r0 < R; r0 += Impl::kLogitRows) {
    const int rn = std::min(Impl::kLogitRows, R - r0);
    m.logits_pass(b, r0, rn);
    if (!hand_back) continue;
    // forward_logits is the one call that hands whole logit rows to the host.
    VB_CUDA(cudaMemcpyAsync(out + size_t(r0) * V, m.logits, size_t(rn) * V * sizeof(float), cudaMemcpyDeviceToHost,
                            m.stream));
  }
  VB_CUDA(cudaStreamSynchronize(m.stream));
}

void CudaBackend::forward_sample(const ForwardBatch& b, const std::vector<SampleSpec>& specs,
                                 std::vector<SampleResult>& out) {
  Impl& m = *impl_;
  if (specs.size() != b.logit_rows.size())
    throw Error("forward_sample: " + std::to_string(specs.size()) + " sample specs for " +
                std::to_string(b.logit_rows.size()) + " logit rows");
  VB_CUDA(cudaSetDevice(m.device));
  m.validate(b);
  const int V = m.c.vocab_size;
  for (const SampleSpec& s : specs)
    if (s.score_token >= V)
      throw Error("sample_row: score_token " + std::to_string(s.score_token) + " is outside the vocab of " +
                  std::to_string(V));
  out.assign(specs.size(), SampleResult{});
  if (b.tokens.empty()) return;
  const int R = int(b.logit_rows.size());
  m.timing.begin();
  const bool graphed = m.graph_step(b);  // decode step: all rows' logits in m.logits
  if (!graphed) m.forward(b);
  m.timing.queued();
  for (int r0 = 0; r0 < R; r0 += Impl::kLogitRows) {
    const int rn = std::min(Impl::kLogitRows, R - r0);
    if (!graphed) m.logits_pass(b, r0, rn);
    // Per-row specs, banned ids, and which rows draw.
    std::vector<int32_t> banned, draw_slot(size_t(rn), -1), draw_rows;
    bool any_lp = false;
    for (int i = 0; i < rn; ++i) {
      const SampleSpec& s = specs[size_t(r0 + i)];
      cuda::SampleRowSpec& d = m.h_specs[i];
      d.temperature = s.temperature;
      d.top_k = s.top_k;
      d.top_p = s.top_p;
      d.min_p = s.min_p;
      d.seed = s.seed;
      d.stream = s.stream;
      d.position = s.position;
      d.score_token = s.score_token;
      d.num_top = std::min(s.num_top_logprobs, cuda::kMaxTopLogprobs);
      d.banned_begin = int32_t(banned.size());
      for (int32_t id : s.banned)
        if (id >= 0 && id < V) banned.push_back(id);
      d.banned_end = int32_t(banned.size());
      if (s.score_token < 0 && s.temperature > 0.0f) {
        draw_slot[size_t(i)] = int32_t(draw_rows.size());
        draw_rows.push_back(i);
      }
      any_lp = any_lp || s.want_logprob || s.num_top_logprobs > 0 || s.score_token >= 0;
    }
    const size_t n_in = banned.size() + draw_slot.size() + draw_rows.size() + 1;
    if (n_in > m.samp_in_cap) {
      m.dfree(m.d_samp_in, m.samp_in_cap * 4);
      if (m.h_samp_in) cudaFreeHost(m.h_samp_in);
      m.samp_in_cap = std::max<size_t>(n_in, 1024);
      m.d_samp_in = static_cast<int32_t*>(m.dmalloc(m.samp_in_cap * 4));
      VB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.h_samp_in), m.samp_in_cap * 4));
    }
    std::copy(banned.begin(), banned.end(), m.h_samp_in);
    std::copy(draw_slot.begin(), draw_slot.end(), m.h_samp_in + banned.size());
    std::copy(draw_rows.begin(), draw_rows.end(), m.h_samp_in + banned.size() + draw_slot.size());
    VB_CUDA(cudaMemcpyAsync(m.d_samp_in, m.h_samp_in, n_in * 4, cudaMemcpyHostToDevice, m.stream));
    VB_CUDA(cudaMemcpyAsync(m.d_specs, m.h_specs, size_t(rn) * sizeof(cuda::SampleRowSpec), cudaMemcpyHostToDevice,
                            m.stream));
    if (!draw_rows.empty() && !m.sb.sort_keys) {
      const size_t n = size_t(Impl::kLogitRows) * size_t(V);
      m.sb.sort_keys = static_cast<float*>(m.dmalloc(n * 4));
      m.sb.sort_ids = static_cast<int32_t*>(m.dmalloc(n * 4));
      m.sb.sorted_keys = static_cast<float*>(m.dmalloc(n * 4));
      m.sb.sorted_ids = static_cast<int32_t*>(m.dmalloc(n * 4));
      m.sb.offsets = static_cast<int32_t*>(m.dmalloc((Impl::kLogitRows + 1) * 4));
      m.sb.temp_bytes = cuda::sampler_temp_bytes(Impl::kLogitRows, V);
      m.sb.temp = m.dmalloc(m.sb.temp_bytes);
    }
    cuda::sample(m.logits, rn, V, m.d_specs, m.d_samp_in, m.d_samp_in + banned.size(),
                 m.d_samp_in + banned.size() + draw_slot.size(), int(draw_rows.size()), any_lp, m.sb, m.d_out,
                 m.d_top_ids, m.d_top_lps, m.stream);
    VB_CUDA(cudaMemcpyAsync(m.h_out, m.d_out, size_t(rn) * sizeof(cuda::SampleRowOut), cudaMemcpyDeviceToHost,
                            m.stream));
    if (any_lp) {
      VB_CUDA(cudaMemcpyAsync(m.h_top_ids, m.d_top_ids, size_t(rn) * cuda::kMaxTopLogprobs * 4,
                              cudaMemcpyDeviceToHost, m.stream));
      VB_CUDA(cudaMemcpyAsync(m.h_top_lps, m.d_top_lps, size_t(rn) * cuda::kMaxTopLogprobs * 4,
                              cudaMemcpyDeviceToHost, m.stream));
    }
    m.timing.sample_queued(m.stream);
    VB_CUDA(cudaStreamSynchronize(m.stream));
    for (int i = 0; i < rn; ++i) {
      const SampleSpec& s = specs[size_t(r0 + i)];
      SampleResult& r = out[size_t(r0 + i)];
      r.token = m.h_out[i].token;
      r.logprob = any_lp ? m.h_out[i].logprob : 0.0f;
      const int n = std::min(s.num_top_logprobs, cuda::kMaxTopLogprobs);
      for (int k = 0; k < n; ++k) {
        const int32_t id = m.h_top_ids[i * cuda::kMaxTopLogprobs + k];
        if (id < 0) break;
        r.top.emplace_back(id, m.h_top_lps[i * cuda::kMaxTopLogprobs + k]);
      }
    }
  }
  if (m.rank != 0) VB_CUDA(cudaStreamSynchronize(m.stream));  // its collectives are done when the step is
  m.timing.done();
}

std::unique_ptr<Backend> make_cuda_backend(const std::string& model_dir, DType dtype, CudaOptions options) {
  if (options.tensor_parallel_size > 1) return make_cuda_tp_backend(model_dir, dtype, options);
  return std::make_unique<CudaBackend>(ModelWeights::load(model_dir), dtype, options);
}

bool cuda_device_available() { return cuda_device_count() > 0; }

int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

}  // namespace verbatim
