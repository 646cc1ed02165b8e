#pragma once
// Everything a serving process loads once: the checkpoint folder (or the embedded default), the
// backend for --device/--dtype, the tokenizer when the folder has one, the engine (inline for
// `generate`, on its own thread for `serve`), the model's limits, sampling defaults and the
// system_fingerprint.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/async_engine.h"
#include "engine/engine.h"
#include "engine/fingerprint.h"
#include "server/backend_factory.h"
#include "server/prompt_prep.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::server {

struct RuntimeOptions {
  std::string model_dir;            // "": the embedded default (ensure_default_model)
  // --served-model-name: none: the model folder as given; several (as vLLM takes them): the first
  // names the model in answers and /metrics, and a request may name any of them.
  std::vector<std::string> served_model_names;
  std::string device = "cpu";
  std::string dtype = "auto";
  std::string generation_config = "auto";  // "auto": defaults from generation_config.json; "vllm": OpenAI's
  EngineOptions engine;
  BackendOptions backend;
  bool async = false;               // serve: the engine on its own thread
};

struct Runtime {
  std::string model_dir;
  std::vector<std::string> model_names;  // every name a request may give (never empty once loaded)
  const std::string& model_name() const { return model_names.front(); }  // the name answers carry
  std::string device;
  DType dtype = DType::F32;
  std::unique_ptr<Tokenizer> tokenizer;
  ModelLimits limits;
  SamplingDefaults defaults;
  Fingerprint fingerprint_parts;
  std::string fingerprint;          // the short hash every response carries
  std::unique_ptr<Engine> engine;            // generate
  std::unique_ptr<AsyncEngine> async_engine;  // serve
  EngineOptions engine_options;     // as resolved
  int kv_blocks = 0;

  // Throws Error naming what failed (folder, tokenizer, device, dtype).
  static Runtime load(const RuntimeOptions& o);
  // "model M (dir D), dtype, device, KV capacity, fingerprint": the startup summary.
  std::string describe() const;
  // Empty, or a warning that the KV cache holds fewer tokens than one max_model_len request needs
  // (such requests get a 400 naming the KV cache, however idle the server is).
  std::string capacity_warning() const;
  static int64_t now();  // unix seconds, for `created`
};

}  // namespace verbatim::server
