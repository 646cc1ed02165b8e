#pragma once
// config.json of a Qwen3ForCausalLM checkpoint (transformers 4 and 5 spellings).
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace verbatim {

struct ModelConfig {
  std::string architecture = "Qwen3ForCausalLM";
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;            // num_hidden_layers
  int num_heads = 0;             // num_attention_heads
  int num_kv_heads = 0;          // num_key_value_heads
  int head_dim = 0;              // may differ from hidden_size / num_heads (Qwen3-0.6B: 128 vs 1024/16=64)
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 1e6;       // rope_parameters.rope_theta (tf5) or rope_theta (tf4)
  bool tie_word_embeddings = false;
  DType dtype = DType::BF16;     // "dtype" (tf5) or "torch_dtype" (tf4)
  std::vector<int32_t> eos_token_ids;  // config.json, then generation_config.json; may be empty
  int32_t bos_token_id = -1;
  double initializer_range = 0.02;  // written by make-model (the std of its random linear weights)

  // Reads DIR/config.json (and DIR/generation_config.json when present). Throws Error with a
  // one-line message naming the file and field on anything missing, malformed or unsupported.
  static ModelConfig load(const std::string& dir);
  std::string to_json() const;   // HF config.json text (transformers-5 layout), for make-model
};

}  // namespace verbatim
