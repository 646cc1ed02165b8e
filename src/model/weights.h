#pragma once
// The Qwen3 weights of one checkpoint folder, memory-mapped and validated against the config.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"

namespace verbatim {

class Checkpoint;  // model/safetensors.h

// A row-major tensor view into the mapped checkpoint: [rows, cols] (a vector has rows == 1).
struct WeightRef {
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
  std::string name;  // the safetensors tensor name, for messages
};

struct LayerWeights {
  WeightRef input_norm;  // [1, hidden]                          model.layers.i.input_layernorm.weight
  WeightRef q_proj;      // [num_heads * head_dim, hidden]       self_attn.q_proj.weight
  WeightRef k_proj;      // [num_kv_heads * head_dim, hidden]    self_attn.k_proj.weight
  WeightRef v_proj;      // [num_kv_heads * head_dim, hidden]    self_attn.v_proj.weight
  WeightRef o_proj;      // [hidden, num_heads * head_dim]       self_attn.o_proj.weight
  WeightRef q_norm;      // [1, head_dim]                        self_attn.q_norm.weight
  WeightRef k_norm;      // [1, head_dim]                        self_attn.k_norm.weight
  WeightRef post_norm;   // [1, hidden]                          post_attention_layernorm.weight
  WeightRef gate_proj;   // [intermediate, hidden]               mlp.gate_proj.weight
  WeightRef up_proj;     // [intermediate, hidden]               mlp.up_proj.weight
  WeightRef down_proj;   // [hidden, intermediate]               mlp.down_proj.weight
};

struct ModelWeights {
  ModelConfig config;
  std::string dir;
  std::shared_ptr<Checkpoint> checkpoint;  // keeps the mappings alive
  WeightRef embed;       // [vocab, hidden]   model.embed_tokens.weight
  std::vector<LayerWeights> layers;
  WeightRef final_norm;  // [1, hidden]       model.norm.weight
  WeightRef lm_head;     // [vocab, hidden]   lm_head.weight, or embed when tie_word_embeddings

  // Loads config.json and every tensor (single file or sharded index); checks names, shapes and
  // dtypes. Throws Error naming the file and tensor on any problem.
  static ModelWeights load(const std::string& dir);
  // XXH3 digest of every tensor's name, dtype, shape and bytes, in a fixed order. Reads all weights.
  uint64_t digest() const;
  // Every distinct tensor in a fixed order: embed, each layer's fields in declaration order,
  // final_norm, then lm_head when untied (tied: lm_head aliases embed and is not listed again).
  std::vector<const WeightRef*> tensors() const;
};

}  // namespace verbatim
