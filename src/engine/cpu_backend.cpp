// The Qwen3 forward pass on the CPU reference kernels. The op order and the rounding points are
// docs/numerics.md; every op reduces each row on its own, so a token's logits do not depend on
// which other tokens share the batch, how its prompt was chunked, or whose blocks hold its prefix.
#include "engine/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "engine/sampler.h"
#include "kernels/ops.h"

namespace verbatim {

// Converts n values of one dtype to another (exact when widening, round-to-nearest-even otherwise).
void convert_values(const void* src, DType from, void* dst, DType to, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= (int64_t(1) << 16))
  for (int64_t i = 0; i < n; ++i) {
    float f;
    switch (from) {
      case DType::BF16: f = bf16_to_f32(static_cast<const uint16_t*>(src)[i]); break;
      case DType::F16: f = f16_to_f32(static_cast<const uint16_t*>(src)[i]); break;
      default: f = static_cast<const float*>(src)[i];
    }
    switch (to) {
      case DType::BF16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(f); break;
      case DType::F16: static_cast<uint16_t*>(dst)[i] = f32_to_f16(f); break;
      default: static_cast<float*>(dst)[i] = f;
    }
  }
}

WeightRef CpuBackend::in_compute_dtype(const WeightRef& w) {
  if (w.dtype == act_) return w;
  const int64_t n = w.rows * w.cols;
  owned_.emplace_back(new uint8_t[size_t(n) * dtype_size(act_)]);
  convert_values(w.data, w.dtype, owned_.back().get(), act_, n);
  WeightRef out = w;
  out.dtype = act_;
  out.data = owned_.back().get();
  return out;
}

CpuBackend::CpuBackend(ModelWeights weights, DType dtype) : weights_(std::move(weights)), act_(dtype) {
  const ModelConfig& c = weights_.config;
  if (c.head_dim <= 0 || c.head_dim % 2)
    throw Error(weights_.dir + "/config.json: head_dim " + std::to_string(c.head_dim) + " must be even and positive");
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads)
    throw Error(weights_.dir + "/config.json: num_attention_heads " + std::to_string(c.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
  embed_ = in_compute_dtype(weights_.embed);
  // Tied embeddings share one converted copy.
  lm_head_ = weights_.lm_head.data == weights_.embed.data ? embed_ : in_compute_dtype(weights_.lm_head);
  final_norm_ = in_compute_dtype(weights_.final_norm);
  for (const LayerWeights& L : weights_.layers) {
    LayerWeights o;
    o.input_norm = in_compute_dtype(L.input_norm);
    o.q_proj = in_compute_dtype(L.q_proj);
    o.k_proj = in_compute_dtype(L.k_proj);
    o.v_proj = in_compute_dtype(L.v_proj);
    o.o_proj = in_compute_dtype(L.o_proj);
    o.q_norm = in_compute_dtype(L.q_norm);
    o.k_norm = in_compute_dtype(L.k_norm);
    o.post_norm = in_compute_dtype(L.post_norm);
    o.gate_proj = in_compute_dtype(L.gate_proj);
    o.up_proj = in_compute_dtype(L.up_proj);
    o.down_proj = in_compute_dtype(L.down_proj);
    layers_.push_back(std::move(o));
  }
}

size_t CpuBackend::kv_block_bytes(int block_size) const {
  const ModelConfig& c = weights_.config;
  return 2 * size_t(c.num_layers) * size_t(block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) *
         dtype_size(act_);
}

void CpuBackend::allocate_kv(int num_blocks, int block_size) {
  if (num_blocks <= 0 || block_size <= 0)
    throw Error("allocate_kv: num_blocks " + std::to_string(num_blocks) + " and block_size " +
                std::to_string(block_size) + " must be positive");
  const size_t per_layer = kv_block_bytes(block_size) / (2 * size_t(weights_.config.num_layers)) * size_t(num_blocks);
  k_cache_.clear();
  v_cache_.clear();
  for (int l = 0; l < weights_.config.num_layers; ++l) {
    k_cache_.emplace_back(new uint8_t[per_layer]);
    v_cache_.emplace_back(new uint8_t[per_layer]);
  }
  num_blocks_ = num_blocks;
  block_size_ = block_size;
}

std::string CpuBackend::kernel_config() const { return cpu::kernel_config(); }

void CpuBackend::validate(const ForwardBatch& b) const {
  validate_forward_batch(b, weights_.config.vocab_size, num_blocks_, block_size_);
}

void validate_forward_batch(const ForwardBatch& b, int vocab_size, int num_blocks, int block_size) {
  const size_t T = b.tokens.size();
  if (num_blocks == 0) throw Error("forward: the KV cache is not allocated (call allocate_kv first)");
  if (b.positions.size() != T || b.token_seq.size() != T)
    throw Error("forward: batch has " + std::to_string(T) + " tokens but " + std::to_string(b.positions.size()) +
                " positions and " + std::to_string(b.token_seq.size()) + " token_seq entries");
  for (size_t t = 0; t < T; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= vocab_size)
      throw Error("forward: token " + std::to_string(b.tokens[t]) + " at batch row " + std::to_string(t) +
                  " is outside the vocabulary (" + std::to_string(vocab_size) + ")");
    const int32_t s = b.token_seq[t], p = b.positions[t];
    if (s < 0 || size_t(s) >= b.block_tables.size())
      throw Error("forward: token_seq " + std::to_string(s) + " at batch row " + std::to_string(t) +
                  " has no block table");
    if (p < 0) throw Error("forward: negative position at batch row " + std::to_string(t));
    const std::vector<int32_t>& bt = b.block_tables[size_t(s)];
    if (size_t(p / block_size) >= bt.size())
      throw Error("forward: position " + std::to_string(p) + " at batch row " + std::to_string(t) +
                  " is beyond its block table (" + std::to_string(bt.size()) + " blocks)");
  }
  for (const std::vector<int32_t>& bt : b.block_tables)
    for (int32_t blk : bt)
      if (blk < 0 || blk >= num_blocks)
        throw Error("forward: block id " + std::to_string(blk) + " is outside the KV cache (" +
                    std::to_string(num_blocks) + " blocks)");
  for (int32_t r : b.logit_rows)
    if (r < 0 || size_t(r) >= T) throw Error("forward: logit row " + std::to_string(r) + " is not a batch row");
}

void CpuBackend::forward_logits(const ForwardBatch& b, float* logits) {
  validate(b);
  const ModelConfig& c = weights_.config;
  const int64_t T = int64_t(b.tokens.size());
  if (T == 0) return;
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int nh = c.num_heads, nkv = c.num_kv_heads;
  const int64_t qw = nh * hd, kvw = nkv * hd;
  const DType a = act_;
  x_.resize(size_t(T * H));
  h_.resize(size_t(T * H));
  q_.resize(size_t(T * qw));
  k_.resize(size_t(T * kvw));
  v_.resize(size_t(T * kvw));
  attn_.resize(size_t(T * qw));
  o_.resize(size_t(T * H));
  gate_.resize(size_t(T * I));
  up_.resize(size_t(T * I));
  slots_.resize(size_t(T));
  tables_.resize(size_t(T));
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<int32_t>& bt = b.block_tables[size_t(b.token_seq[size_t(t)])];
    const int32_t p = b.positions[size_t(t)];
    slots_[size_t(t)] = bt[size_t(p / block_size_)] * block_size_ + p % block_size_;
    tables_[size_t(t)] = bt.data();
  }
  // HF Qwen3Attention: scaling = head_dim ** -0.5, applied to the fp32 scores.
  const float scale = float(1.0 / std::sqrt(double(hd)));

  cpu::embed(embed_, b.tokens.data(), T, x_.data());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerWeights& L = layers_[l];
    cpu::rmsnorm(x_.data(), T, H, L.input_norm, c.rms_norm_eps, a, h_.data());
    cpu::matmul(h_.data(), T, L.q_proj, a, q_.data());
    cpu::matmul(h_.data(), T, L.k_proj, a, k_.data());
    cpu::matmul(h_.data(), T, L.v_proj, a, v_.data());
    cpu::rmsnorm(q_.data(), T * nh, hd, L.q_norm, c.rms_norm_eps, a, q_.data());
    cpu::rmsnorm(k_.data(), T * nkv, hd, L.k_norm, c.rms_norm_eps, a, k_.data());
    cpu::rope(q_.data(), T, nh, int(hd), b.positions.data(), c.rope_theta, a);
    cpu::rope(k_.data(), T, nkv, int(hd), b.positions.data(), c.rope_theta, a);
    cpu::PagedKV kv;
    kv.dtype = a;
    kv.block_size = block_size_;
    kv.num_kv_heads = nkv;
    kv.head_dim = int(hd);
    kv.k = k_cache_[l].get();
    kv.v = v_cache_[l].get();
    // Every token's K/V is written before any token attends: a later token of the same chunk
    // reads it from the cache exactly as a later decode step would.
    cpu::kv_write(kv, k_.data(), v_.data(), T, slots_.data());
    cpu::attention(q_.data(), T, nh, kv, b.positions.data(), tables_.data(), scale, a, attn_.data());
    // o_proj and down_proj are the row-parallel GEMMs of tensor parallelism: K in fixed chunks,
    // so this TP = 1 run has the bits of every TP size (docs/tensor-parallel.md).
    cpu::matmul_kchunked(attn_.data(), T, L.o_proj, a, o_.data());
    cpu::add_inplace(x_.data(), o_.data(), T * H, a);
    cpu::rmsnorm(x_.data(), T, H, L.post_norm, c.rms_norm_eps, a, h_.data());
    cpu::matmul(h_.data(), T, L.gate_proj, a, gate_.data());
    cpu::matmul(h_.data(), T, L.up_proj, a, up_.data());
    cpu::silu_mul(gate_.data(), up_.data(), T, I, a, gate_.data());
    cpu::matmul_kchunked(gate_.data(), T, L.down_proj, a, o_.data());
    cpu::add_inplace(x_.data(), o_.data(), T * H, a);
  }
  // Only the rows that need a distribution go through the final norm and lm_head (row-wise ops,
  // so this changes no bit of those rows).
  const int64_t R = int64_t(b.logit_rows.size());
  if (R == 0) return;
  last_.resize(size_t(R * H));
  for (int64_t r = 0; r < R; ++r)
    std::copy_n(&x_[size_t(b.logit_rows[size_t(r)] * H)], H, &last_[size_t(r * H)]);
  cpu::rmsnorm(last_.data(), R, H, final_norm_, c.rms_norm_eps, a, last_.data());
  cpu::matmul_f32out(last_.data(), R, lm_head_, logits);  // logits stay fp32
}

void CpuBackend::forward_sample(const ForwardBatch& b, const std::vector<SampleSpec>& specs,
                                std::vector<SampleResult>& out) {
  if (specs.size() != b.logit_rows.size())
    throw Error("forward_sample: " + std::to_string(specs.size()) + " sample specs for " +
                std::to_string(b.logit_rows.size()) + " logit rows");
  const int V = weights_.config.vocab_size;
  std::vector<float> logits(b.logit_rows.size() * size_t(V));
  forward_logits(b, logits.data());
  out.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) out[i] = sample_row(&logits[i * size_t(V)], V, specs[i]);
}

std::unique_ptr<Backend> make_cpu_backend(const std::string& model_dir, DType dtype) {
  return std::make_unique<CpuBackend>(ModelWeights::load(model_dir), dtype);
}

}  // namespace verbatim
