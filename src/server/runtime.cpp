#include "server/runtime.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "model/default_model.h"
#include "model/weights.h"

namespace verbatim::server {

Runtime Runtime::load(const RuntimeOptions& o) {
  Runtime rt;
  rt.model_dir = o.model_dir.empty() ? ensure_default_model() : o.model_dir;
  if (!std::filesystem::is_directory(rt.model_dir)) throw Error(rt.model_dir + ": no such model folder");
  for (const std::string& n : o.served_model_names)
    if (std::find(rt.model_names.begin(), rt.model_names.end(), n) == rt.model_names.end()) rt.model_names.push_back(n);
  if (rt.model_names.empty()) rt.model_names.push_back(o.model_dir.empty() ? std::string("verbatim-default") : o.model_dir);
  rt.device = o.device;
  rt.dtype = resolve_dtype(o.dtype, rt.model_dir);
  if (Tokenizer::exists(rt.model_dir)) rt.tokenizer = Tokenizer::load(rt.model_dir);
  if (o.generation_config == "auto") rt.defaults = SamplingDefaults::from_model_dir(rt.model_dir);
  else if (o.generation_config != "vllm")
    throw Error("--generation-config " + o.generation_config + ": expected auto or vllm");

  std::unique_ptr<Backend> backend = make_backend(o.device, rt.model_dir, rt.dtype, o.backend);
  const ModelConfig cfg = backend->config();
  rt.fingerprint_parts = make_fingerprint(ModelWeights::load(rt.model_dir), *backend);
  rt.fingerprint = rt.fingerprint_parts.short_hash;
  rt.limits.tokenizer = rt.tokenizer.get();
  rt.limits.vocab_size = cfg.vocab_size;
  rt.limits.eos_token_ids = cfg.eos_token_ids;
  if (rt.tokenizer && rt.limits.eos_token_ids.empty()) rt.limits.eos_token_ids = rt.tokenizer->eos_token_ids();
  if (o.async) {
    rt.async_engine = std::make_unique<AsyncEngine>(std::move(backend), o.engine);
    rt.limits.max_model_len = rt.async_engine->max_model_len();
    rt.engine_options = rt.async_engine->options();
    rt.kv_blocks = rt.async_engine->stats().kv_blocks_total;
  } else {
    rt.engine = std::make_unique<Engine>(std::move(backend), o.engine);
    rt.limits.max_model_len = rt.engine->max_model_len();
    rt.engine_options = rt.engine->options();
    rt.kv_blocks = rt.engine->stats().kv_blocks_total;
  }
  return rt;
}

std::string Runtime::describe() const {
  std::string s = "model " + model_name();
  if (model_name() != model_dir) s += " (" + model_dir + ")";
  s += ", dtype " + std::string(dtype_name(dtype)) + ", device " + device;
  s += ", KV capacity " + std::to_string(kv_blocks) + " blocks x " + std::to_string(engine_options.block_size) +
       " = " + std::to_string(int64_t(kv_blocks) * engine_options.block_size) + " tokens";
  s += ", max_model_len " + std::to_string(limits.max_model_len);
  s += tokenizer ? ", tokenizer loaded" : ", no tokenizer (token-id prompts only)";
  s += ", fingerprint " + fingerprint;
  return s;
}

std::string Runtime::capacity_warning() const {
  const int64_t longest = longest_request_tokens(kv_blocks, engine_options.block_size);
  if (limits.max_model_len <= 0 || longest >= limits.max_model_len) return "";
  return "warning: the KV cache holds " + std::to_string(longest - 1) + " tokens, fewer than max_model_len " +
         std::to_string(limits.max_model_len) + " needs: a request (prompt + max_tokens) over " +
         std::to_string(longest) +
         " tokens gets a 400; raise --num-kv-blocks or --gpu-memory-utilization, or lower --max-model-len";
}

int64_t Runtime::now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace verbatim::server
