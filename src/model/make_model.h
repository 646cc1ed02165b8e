#pragma once
// make-model: a Qwen3 checkpoint folder with random weights, in the exact Hugging Face layout
// (config.json, generation_config.json, model.safetensors or shards + index, tokenizer files).
// The weights are a pure function of (arch, seed, dtype): never of the thread count.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"

namespace verbatim {

// "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-32b", "tiny".
std::vector<std::string> known_archs();
// The config of a known arch (real Qwen3 shapes), in `dtype`. Throws Error naming the choices.
ModelConfig arch_config(const std::string& arch, DType dtype);

struct MakeModelOptions {
  std::string arch = "tiny";
  uint64_t seed = 0;
  DType dtype = DType::BF16;
  std::string out_dir;
  // Where tokenizer.json / tokenizer_config.json are copied from. Empty: default_tokenizer_dir(),
  // and a missing tokenizer there is only a warning; a folder named here must hold one.
  std::string tokenizer_dir;
  bool copy_tokenizer = true;
  // Shard like HF's save_pretrained once the weights exceed this many bytes.
  uint64_t max_shard_bytes = 4ull << 30;
  double init_std = 0;  // std of the linear and embedding weights; 0: the arch's initializer_range
  int threads = 0;  // 0: all hardware threads (the weights do not depend on it)
};

struct MakeModelResult {
  ModelConfig config;
  std::vector<std::string> weight_files;  // file names inside out_dir
  uint64_t weight_bytes = 0;
  uint64_t num_params = 0;
  bool tokenizer_copied = false;
  std::string warning;  // non-empty: something the caller should print (e.g. no tokenizer found)
};

MakeModelResult make_model(const MakeModelOptions& opts);

// The value of element `index` of tensor number `tensor` (its place in the fixed tensor order)
// for `seed`: N(0,1), from a counter-based generator. Exposed for tests.
float random_normal(uint64_t seed, uint64_t tensor, uint64_t index);

}  // namespace verbatim
