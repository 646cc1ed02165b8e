// Tensor parallelism simulated on the CPU: N ranks, each with only its weight shard and its KV
// heads, meeting at collectives whose summation order is fixed (tp_sim_backend.h). The op order
// and rounding points are the CPU reference's (cpu_backend.cpp, docs/numerics.md), so at every N
// the logits are the bits of CpuBackend (tests/tp_sim_test.cpp).
#include "engine/tp_sim_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "engine/cpu_backend.h"
#include "engine/sampler.h"
#include "kernels/ops.h"

namespace verbatim {

struct TpSimBackend::Rank {
  int index = 0;
  int nh = 0, nkv = 0;      // this rank's query heads and KV heads
  int c0 = 0, c1 = 0;       // its chunks [c0, c1) of every row-parallel K (cpu::kchunk_begin)
  int64_t i0 = 0, i1 = 0;   // its intermediate columns (= chunks [c0, c1) of down_proj's K)
  int64_t v0 = 0, v1 = 0;   // its vocabulary rows (embedding and lm_head)
  std::vector<std::unique_ptr<uint8_t[]>> owned;  // the shards, in the compute dtype
  WeightRef embed, lm_head, final_norm;
  // q/k/v, gate/up: row shards [out slice, hidden]; o/down: column shards [hidden, K slice];
  // norms: replicated.
  std::vector<LayerWeights> layers;
  std::vector<std::unique_ptr<uint8_t[]>> k_cache, v_cache;  // per layer, this rank's KV heads
  // x: the residual stream (replicated: every rank holds the same bits after each collective).
  std::vector<float> x, h, q, k, v, attn, partial, gate, up, last, logits;
};

namespace {

// Rows [r0, r1) x columns [c0, c1) of w, converted to `act`, owned by rank `r`.
WeightRef shard(TpSimBackend::Rank& r, const WeightRef& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, DType act) {
  const int64_t rows = r1 - r0, cols = c1 - c0;
  const size_t in = dtype_size(w.dtype), out = dtype_size(act);
  r.owned.emplace_back(new uint8_t[size_t(rows * cols) * out]);
  uint8_t* dst = r.owned.back().get();
  for (int64_t i = 0; i < rows; ++i)
    convert_values(static_cast<const uint8_t*>(w.data) + size_t((r0 + i) * w.cols + c0) * in, w.dtype,
                   dst + size_t(i * cols) * out, act, cols);
  WeightRef s = w;
  s.dtype = act;
  s.rows = rows;
  s.cols = cols;
  s.data = dst;
  s.name = w.name + " (tp rank " + std::to_string(r.index) + ")";
  return s;
}

WeightRef replicate(TpSimBackend::Rank& r, const WeightRef& w, DType act) { return shard(r, w, 0, w.rows, 0, w.cols, act); }
WeightRef row_shard(TpSimBackend::Rank& r, const WeightRef& w, int64_t r0, int64_t r1, DType act) {
  return shard(r, w, r0, r1, 0, w.cols, act);
}
WeightRef col_shard(TpSimBackend::Rank& r, const WeightRef& w, int64_t c0, int64_t c1, DType act) {
  return shard(r, w, 0, w.rows, c0, c1, act);
}

// Rank r's part [floor(r*D/N), floor((r+1)*D/N)) of a dimension D: for a row-parallel K these are
// exactly its chunk bounds kchunk_begin(D, r*8/N), since N divides kTpChunks.
int64_t part_begin(int64_t D, int r, int N) { return cpu::kchunk_begin(D, r * (cpu::kTpChunks / N)); }

}  // namespace

TpSimBackend::TpSimBackend(ModelWeights weights, DType dtype, TpSimOptions opts)
    : weights_(std::move(weights)), act_(dtype), opts_(opts) {
  const ModelConfig& c = weights_.config;
  const int N = opts_.tp_size;
  const std::string where = weights_.dir + "/config.json: ";
  if (N < 1 || N > cpu::kTpChunks || cpu::kTpChunks % N)
    throw Error("tensor-parallel size " + std::to_string(N) + " is not 1, 2, 4 or 8");
  if (c.head_dim <= 0 || c.head_dim % 2)
    throw Error(where + "head_dim " + std::to_string(c.head_dim) + " must be even and positive");
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads)
    throw Error(where + "num_attention_heads " + std::to_string(c.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
  if (c.num_heads % N)
    throw Error(where + "num_attention_heads " + std::to_string(c.num_heads) +
                " cannot be split over tensor-parallel size " + std::to_string(N));
  if (N <= c.num_kv_heads ? c.num_kv_heads % N : N % c.num_kv_heads)
    throw Error(where + "num_key_value_heads " + std::to_string(c.num_kv_heads) +
                " can be neither split over nor replicated to tensor-parallel size " + std::to_string(N));
  if (c.intermediate_size < cpu::kTpChunks || c.vocab_size < N)
    throw Error(where + "intermediate_size " + std::to_string(c.intermediate_size) + " or vocab_size " +
                std::to_string(c.vocab_size) + " is too small to split over tensor-parallel size " + std::to_string(N));

  const int64_t hd = c.head_dim, I = c.intermediate_size, V = c.vocab_size;
  const bool tied = weights_.lm_head.data == weights_.embed.data;
  for (int r = 0; r < N; ++r) {
    auto rk = std::make_unique<Rank>();
    Rank& R = *rk;
    R.index = r;
    R.nh = c.num_heads / N;
    // KV heads split by groups; when N > num_kv_heads each is replicated on N / num_kv_heads ranks
    // (rank r's query heads all read KV head floor(r * num_kv_heads / N)).
    R.nkv = std::max(1, c.num_kv_heads / N);
    const int64_t kv0 = int64_t(r) * c.num_kv_heads / N;
    R.c0 = r * (cpu::kTpChunks / N);
    R.c1 = (r + 1) * (cpu::kTpChunks / N);
    R.i0 = part_begin(I, r, N);
    R.i1 = part_begin(I, r + 1, N);
    R.v0 = part_begin(V, r, N);
    R.v1 = part_begin(V, r + 1, N);
    const int64_t q0 = int64_t(r) * R.nh * hd, q1 = q0 + R.nh * hd;  // also o_proj's K slice
    R.embed = row_shard(R, weights_.embed, R.v0, R.v1, act_);
    R.lm_head = tied ? R.embed : row_shard(R, weights_.lm_head, R.v0, R.v1, act_);
    R.final_norm = replicate(R, weights_.final_norm, act_);
    for (const LayerWeights& L : weights_.layers) {
      LayerWeights o;
      o.input_norm = replicate(R, L.input_norm, act_);
      o.q_proj = row_shard(R, L.q_proj, q0, q1, act_);
      o.k_proj = row_shard(R, L.k_proj, kv0 * hd, (kv0 + R.nkv) * hd, act_);
      o.v_proj = row_shard(R, L.v_proj, kv0 * hd, (kv0 + R.nkv) * hd, act_);
      o.o_proj = col_shard(R, L.o_proj, q0, q1, act_);
      o.q_norm = replicate(R, L.q_norm, act_);
      o.k_norm = replicate(R, L.k_norm, act_);
      o.post_norm = replicate(R, L.post_norm, act_);
      o.gate_proj = row_shard(R, L.gate_proj, R.i0, R.i1, act_);
      o.up_proj = row_shard(R, L.up_proj, R.i0, R.i1, act_);
      o.down_proj = col_shard(R, L.down_proj, R.i0, R.i1, act_);
      R.layers.push_back(std::move(o));
    }
    // o_proj's K slice [q0, q1) is the rank's chunks of K = num_heads * head_dim (heads split evenly).
    if (q0 != cpu::kchunk_begin(c.num_heads * hd, R.c0) || q1 != cpu::kchunk_begin(c.num_heads * hd, R.c1))
      throw Error("tensor parallel: rank " + std::to_string(r) + "'s heads do not match its K chunks");
    ranks_.push_back(std::move(rk));
  }
}

TpSimBackend::~TpSimBackend() = default;

std::string TpSimBackend::device_name() const {
  return "cpu (simulated tensor parallel, " + std::to_string(opts_.tp_size) + " ranks)";
}

std::string TpSimBackend::kernel_config() const {
  if (opts_.naive_reduction_for_test)
    return cpu::kernel_config() + ";TEST-naive-row-parallel-tp=" + std::to_string(opts_.tp_size);
  return cpu::kernel_config();
}

size_t TpSimBackend::kv_block_bytes(int block_size) const {
  const ModelConfig& c = weights_.config;
  size_t heads = 0;
  for (const auto& r : ranks_) heads += size_t(r->nkv);
  return 2 * size_t(c.num_layers) * size_t(block_size) * heads * size_t(c.head_dim) * dtype_size(act_);
}

void TpSimBackend::allocate_kv(int num_blocks, int block_size) {
  if (num_blocks <= 0 || block_size <= 0)
    throw Error("allocate_kv: num_blocks " + std::to_string(num_blocks) + " and block_size " +
                std::to_string(block_size) + " must be positive");
  const ModelConfig& c = weights_.config;
  for (auto& r : ranks_) {
    const size_t per_layer =
        size_t(num_blocks) * size_t(block_size) * size_t(r->nkv) * size_t(c.head_dim) * dtype_size(act_);
    r->k_cache.clear();
    r->v_cache.clear();
    for (int l = 0; l < c.num_layers; ++l) {
      r->k_cache.emplace_back(new uint8_t[per_layer]);
      r->v_cache.emplace_back(new uint8_t[per_layer]);
    }
  }
  num_blocks_ = num_blocks;
  block_size_ = block_size;
}

// Every rank's lookup holds its own vocabulary's rows and -0.0 elsewhere. -0.0 is the exact
// identity of IEEE addition (x + -0 = x, also for x = +0 and -0), so the rank-order sum is the
// owner's row bit for bit, whatever N.
void TpSimBackend::all_reduce_embedding(int64_t n) {
  parts_.clear();
  for (const auto& r : ranks_) parts_.push_back(r->partial.data());
  for (auto& r : ranks_) {
    float* x = r->x.data();
    for (int64_t i = 0; i < n; ++i) {
      float s = parts_[0][i];
      for (size_t q = 1; q < parts_.size(); ++q) s = s + parts_[q][i];  // rank order
      x[i] = s;
    }
  }
}

// The row-parallel all-reduce, as all-gather + local combine: every rank receives the N partials
// (one subtree sum of the K-chunk tree each) and finishes the same tree in the same order, so all
// replicas of the residual stream stay equal and equal to TP = 1. The naive test mode adds
// whole-slice sums in rank order instead.
void TpSimBackend::all_gather_combine(int64_t T, int64_t H) {
  const int64_t n = T * H;
  parts_.clear();
  for (const auto& r : ranks_) parts_.push_back(r->partial.data());
  for (auto& r : ranks_) {
    float* o = r->h.data();  // scratch: h is dead until the next norm
    if (opts_.naive_reduction_for_test) {
      for (int64_t i = 0; i < n; ++i) {
        float s = parts_[0][i];
        for (size_t q = 1; q < parts_.size(); ++q) s = s + parts_[q][i];
        o[i] = round_to(act_, s);
      }
    } else {
      cpu::combine_kchunk_partials(parts_.data(), int(parts_.size()), n, act_, o);
    }
    cpu::add_inplace(r->x.data(), o, n, act_);
  }
}

void TpSimBackend::forward_logits(const ForwardBatch& b, float* logits) {
  const ModelConfig& c = weights_.config;
  validate_forward_batch(b, c.vocab_size, num_blocks_, block_size_);
  const int64_t T = int64_t(b.tokens.size());
  if (T == 0) return;
  const int64_t H = c.hidden_size, hd = c.head_dim, V = c.vocab_size;
  const int64_t Ko = int64_t(c.num_heads) * hd, I = c.intermediate_size;
  const DType a = act_;
  const float eps = c.rms_norm_eps;
  // The batch's metadata (tokens, positions, block tables) goes to every rank, as a TP scheduler
  // broadcasts it; each rank's cache holds only its KV heads at the same slots.
  std::vector<int32_t> slots(static_cast<size_t>(T));
  std::vector<const int32_t*> tables(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<int32_t>& bt = b.block_tables[size_t(b.token_seq[size_t(t)])];
    const int32_t p = b.positions[size_t(t)];
    slots[size_t(t)] = bt[size_t(p / block_size_)] * block_size_ + p % block_size_;
    tables[size_t(t)] = bt.data();
  }
  const float scale = float(1.0 / std::sqrt(double(hd)));  // as CpuBackend (HF head_dim ** -0.5)

  for (auto& rp : ranks_) {
    Rank& r = *rp;
    r.x.resize(size_t(T * H));
    r.h.resize(size_t(T * H));
    r.partial.resize(size_t(T * H));
    r.q.resize(size_t(T * r.nh * hd));
    r.attn.resize(size_t(T * r.nh * hd));
    r.k.resize(size_t(T * r.nkv * hd));
    r.v.resize(size_t(T * r.nkv * hd));
    r.gate.resize(size_t(T * (r.i1 - r.i0)));
    r.up.resize(size_t(T * (r.i1 - r.i0)));
    // Vocabulary-parallel embedding: own rows, -0.0 elsewhere (all_reduce_embedding).
    for (int64_t t = 0; t < T; ++t) {
      const int32_t tok = b.tokens[size_t(t)];
      float* row = &r.partial[size_t(t * H)];
      if (tok >= r.v0 && tok < r.v1) {
        const int32_t local = int32_t(tok - r.v0);
        cpu::embed(r.embed, &local, 1, row);
      } else {
        std::fill_n(row, H, -0.0f);
      }
    }
  }
  all_reduce_embedding(T * H);

  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    for (auto& rp : ranks_) {  // attention block, up to the row-parallel partial of o_proj
      Rank& r = *rp;
      const LayerWeights& L = r.layers[l];
      cpu::rmsnorm(r.x.data(), T, H, L.input_norm, eps, a, r.h.data());
      cpu::matmul(r.h.data(), T, L.q_proj, a, r.q.data());  // column-parallel: full K per output
      cpu::matmul(r.h.data(), T, L.k_proj, a, r.k.data());
      cpu::matmul(r.h.data(), T, L.v_proj, a, r.v.data());
      cpu::rmsnorm(r.q.data(), T * r.nh, hd, L.q_norm, eps, a, r.q.data());
      cpu::rmsnorm(r.k.data(), T * r.nkv, hd, L.k_norm, eps, a, r.k.data());
      cpu::rope(r.q.data(), T, r.nh, int(hd), b.positions.data(), c.rope_theta, a);
      cpu::rope(r.k.data(), T, r.nkv, int(hd), b.positions.data(), c.rope_theta, a);
      cpu::PagedKV kv;
      kv.dtype = a;
      kv.block_size = block_size_;
      kv.num_kv_heads = r.nkv;
      kv.head_dim = int(hd);
      kv.k = r.k_cache[l].get();
      kv.v = r.v_cache[l].get();
      cpu::kv_write(kv, r.k.data(), r.v.data(), T, slots.data());  // all K/V before any attention
      cpu::attention(r.q.data(), T, r.nh, kv, b.positions.data(), tables.data(), scale, a, r.attn.data());
      if (opts_.naive_reduction_for_test)
        cpu::matmul_f32out(r.attn.data(), T, L.o_proj, r.partial.data());
      else
        cpu::matmul_kchunk_partial(r.attn.data(), T, L.o_proj, Ko, r.c0, r.c1, r.partial.data());
    }
    all_gather_combine(T, H);
    for (auto& rp : ranks_) {  // MLP, up to the row-parallel partial of down_proj
      Rank& r = *rp;
      const LayerWeights& L = r.layers[l];
      cpu::rmsnorm(r.x.data(), T, H, L.post_norm, eps, a, r.h.data());
      cpu::matmul(r.h.data(), T, L.gate_proj, a, r.gate.data());
      cpu::matmul(r.h.data(), T, L.up_proj, a, r.up.data());
      cpu::silu_mul(r.gate.data(), r.up.data(), T, r.i1 - r.i0, a, r.gate.data());
      if (opts_.naive_reduction_for_test)
        cpu::matmul_f32out(r.gate.data(), T, L.down_proj, r.partial.data());
      else
        cpu::matmul_kchunk_partial(r.gate.data(), T, L.down_proj, I, r.c0, r.c1, r.partial.data());
    }
    all_gather_combine(T, H);
  }
  // The replicas must agree bit for bit (every rank ran the same combine on the same gathered data).
  for (size_t q = 1; q < ranks_.size(); ++q)
    if (std::memcmp(ranks_[q]->x.data(), ranks_[0]->x.data(), size_t(T * H) * sizeof(float)) != 0)
      throw Error("tensor parallel: rank " + std::to_string(q) + "'s residual stream differs from rank 0's");

  const int64_t R = int64_t(b.logit_rows.size());
  if (R == 0) return;
  for (auto& rp : ranks_) {  // final norm (replicated) and this rank's vocabulary columns
    Rank& r = *rp;
    const int64_t w = r.v1 - r.v0;
    r.last.resize(size_t(R * H));
    r.logits.resize(size_t(R * w));
    for (int64_t i = 0; i < R; ++i)
      std::copy_n(&r.x[size_t(b.logit_rows[size_t(i)] * H)], H, &r.last[size_t(i * H)]);
    cpu::rmsnorm(r.last.data(), R, H, r.final_norm, eps, a, r.last.data());
    cpu::matmul_f32out(r.last.data(), R, r.lm_head, r.logits.data());
  }
  // All-gather of the vocabulary slices: a copy, no arithmetic.
  for (const auto& rp : ranks_) {
    const int64_t w = rp->v1 - rp->v0;
    for (int64_t i = 0; i < R; ++i) std::copy_n(&rp->logits[size_t(i * w)], w, logits + i * V + rp->v0);
  }
}

void TpSimBackend::forward_sample(const ForwardBatch& b, const std::vector<SampleSpec>& specs,
                                  std::vector<SampleResult>& out) {
  if (specs.size() != b.logit_rows.size())
    throw Error("forward_sample: " + std::to_string(specs.size()) + " sample specs for " +
                std::to_string(b.logit_rows.size()) + " logit rows");
  const int V = weights_.config.vocab_size;
  std::vector<float> logits(b.logit_rows.size() * size_t(V));
  forward_logits(b, logits.data());
  // Every rank holds the gathered logits and would sample the same token (sampling reads only
  // the logits and (seed, position)); one sample stands for all.
  out.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) out[i] = sample_row(&logits[i * size_t(V)], V, specs[i]);
}

std::unique_ptr<Backend> make_tp_sim_backend(const std::string& model_dir, DType dtype, int tp_size) {
  TpSimOptions o;
  o.tp_size = tp_size;
  return std::make_unique<TpSimBackend>(ModelWeights::load(model_dir), dtype, o);
}

}  // namespace verbatim
