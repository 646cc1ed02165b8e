// Binds every Qwen3 tensor of a checkpoint to a WeightRef, checking names, shapes and dtypes
// against config.json.
#include "model/weights.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "model/safetensors.h"

namespace verbatim {
namespace {

std::string dims(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// rows == 0 means a vector of `cols` elements (stored 1-D as [cols]).
WeightRef bind_weight(const Checkpoint& ck, const ModelConfig& cfg, const std::string& name, int64_t rows, int64_t cols) {
  const TensorInfo* t = ck.find(name);
  if (!t) throw Error(ck.file_for(name) + ": tensor '" + name + "' is missing");
  const std::string where = t->file + ": tensor '" + name + "'";
  if (!is_model_dtype(t->dtype))
    throw Error(where + " has unsupported dtype " + st_dtype_name(t->dtype) + " (expected BF16, F16 or F32)");
  if (to_model_dtype(t->dtype) != cfg.dtype)
    throw Error(where + " is " + st_dtype_name(t->dtype) + " but config.json says dtype " + dtype_name(cfg.dtype) +
                " (mixed dtypes are not supported)");
  std::vector<int64_t> want = rows == 0 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  if (t->shape != want) throw Error(where + " has shape " + dims(t->shape) + ", expected " + dims(want) + " from config.json");
  WeightRef w;
  w.dtype = cfg.dtype;
  w.rows = rows == 0 ? 1 : rows;
  w.cols = cols;
  w.data = t->data;
  w.name = name;
  return w;
}

// A tensor the model does not read means config.json and the weights disagree (e.g. a layer
// count lowered below the weights'): refused, as vLLM refuses it, never run as another model.
// Skipped as HF and vLLM skip them: a tied model's stored lm_head.weight (HF ties over it), old
// checkpoints' rotary buffers (inv_freq, cos / sin caches: recomputed from rope_theta), and a
// bias the architecture has no place for (vLLM: "extra bias for GPTQ models"; HF ignores it).
void refuse_unused_tensors(const ModelWeights& m) {
  std::vector<std::string> used;
  for (const WeightRef* w : m.tensors()) used.push_back(w->name);
  std::sort(used.begin(), used.end());
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const std::string& name : m.checkpoint->names()) {
    if (std::binary_search(used.begin(), used.end(), name)) continue;
    if (name == "lm_head.weight" && m.config.tie_word_embeddings) continue;
    if (ends_with(name, ".rotary_emb.inv_freq") || ends_with(name, ".rotary_emb.cos_cached") ||
        ends_with(name, ".rotary_emb.sin_cached") || ends_with(name, ".bias"))
      continue;
    throw Error(m.checkpoint->file_for(name) + ": tensor '" + name + "' is not part of the model config.json describes (" +
                std::to_string(m.config.num_layers) + " layers" + (m.config.tie_word_embeddings ? ", tied embeddings" : "") +
                "); config.json and the weights disagree");
  }
}

}  // namespace

ModelWeights ModelWeights::load(const std::string& dir) {
  ModelWeights m;
  m.dir = dir;
  m.config = ModelConfig::load(dir);
  m.checkpoint = Checkpoint::open(dir);
  const ModelConfig& c = m.config;
  const Checkpoint& ck = *m.checkpoint;
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size, hd = c.head_dim;
  const int64_t q_width = int64_t(c.num_heads) * hd, kv_width = int64_t(c.num_kv_heads) * hd;
  m.embed = bind_weight(ck, c, "model.embed_tokens.weight", c.vocab_size, hidden);
  // Grown layer by layer, so a num_hidden_layers far past the checkpoint's fails on the first
  // missing tensor, not on allocating the vector.
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights& L = m.layers.emplace_back();
    L.input_norm = bind_weight(ck, c, p + "input_layernorm.weight", 0, hidden);
    L.q_proj = bind_weight(ck, c, p + "self_attn.q_proj.weight", q_width, hidden);
    L.k_proj = bind_weight(ck, c, p + "self_attn.k_proj.weight", kv_width, hidden);
    L.v_proj = bind_weight(ck, c, p + "self_attn.v_proj.weight", kv_width, hidden);
    L.o_proj = bind_weight(ck, c, p + "self_attn.o_proj.weight", hidden, q_width);
    L.q_norm = bind_weight(ck, c, p + "self_attn.q_norm.weight", 0, hd);
    L.k_norm = bind_weight(ck, c, p + "self_attn.k_norm.weight", 0, hd);
    L.post_norm = bind_weight(ck, c, p + "post_attention_layernorm.weight", 0, hidden);
    L.gate_proj = bind_weight(ck, c, p + "mlp.gate_proj.weight", inter, hidden);
    L.up_proj = bind_weight(ck, c, p + "mlp.up_proj.weight", inter, hidden);
    L.down_proj = bind_weight(ck, c, p + "mlp.down_proj.weight", hidden, inter);
  }
  m.final_norm = bind_weight(ck, c, "model.norm.weight", 0, hidden);
  // Tied (HF): the output projection is the embedding and lm_head.weight is not stored (if a
  // file stores one anyway, HF ties over it, so we ignore it too). Untied: lm_head.weight is required.
  m.lm_head = c.tie_word_embeddings ? m.embed : bind_weight(ck, c, "lm_head.weight", c.vocab_size, hidden);
  refuse_unused_tensors(m);
  return m;
}


std::vector<const WeightRef*> ModelWeights::tensors() const {
  std::vector<const WeightRef*> out{&embed};
  for (const LayerWeights& L : layers)
    for (const WeightRef* w : {&L.input_norm, &L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.q_norm, &L.k_norm,
                               &L.post_norm, &L.gate_proj, &L.up_proj, &L.down_proj})
      out.push_back(w);
  out.push_back(&final_norm);
  if (!config.tie_word_embeddings) out.push_back(&lm_head);
  return out;
}

uint64_t ModelWeights::digest() const {
  const std::vector<const WeightRef*> list = tensors();
  // Each tensor is hashed on its own (in parallel: 16 GB of weights take seconds), then the
  // per-tensor hashes are combined in the fixed tensors() order, so the digest does not depend on
  // the thread count.
  std::vector<uint64_t> per(list.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < list.size();) {
      const WeightRef& w = *list[i];
      const std::string head = w.name + "|" + dtype_name(w.dtype) + "|" + std::to_string(w.rows) + "x" + std::to_string(w.cols);
      per[i] = hash_combine(hash_str(head), hash_bytes(w.data, size_t(w.rows * w.cols) * dtype_size(w.dtype)));
    }
  };
  const size_t n_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads && t < list.size(); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  uint64_t h = hash_str(config.tie_word_embeddings ? "qwen3|tied" : "qwen3|untied");
  for (uint64_t x : per) h = hash_combine(h, x);
  return h;
}

}  // namespace verbatim
