// `verbatim serve [MODEL_DIR]`: the OpenAI-compatible server, with vLLM's option names.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/error.h"
#include "server/backend_factory.h"
#include "server/server.h"

namespace verbatim::cli {
namespace {

Registrar reg(30, [](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<server::ServeOptions>();
  auto& rt = o->runtime;
  auto& e = rt.engine;
  CLI::App* sub = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  auto positional_dir = std::make_shared<std::string>();
  sub->add_option("model_dir", *positional_dir, "Checkpoint folder (default: the embedded default model)");
  sub->add_option("--model", rt.model_dir, "Same as MODEL_DIR");
  sub->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "Port (0: any free port, printed at startup)")
      ->check(at_least(0, 65535))
      ->capture_default_str();
  sub->add_option("--device", rt.device, "cpu (or cuda, cuda:N in CUDA builds)")->capture_default_str();
  sub->add_option("--dtype", rt.dtype, "auto|bfloat16|float16|float32")->capture_default_str();
  // Checked in make_backend (server/backend_factory.h), so every command refuses bad values alike.
  sub->add_option("--mode", rt.backend.kernels,
                  "contract | fast (cuda only: the contract off, to measure its cost; other fingerprint)")
      ->capture_default_str();
  sub->add_option("--gpu-memory-utilization", rt.backend.gpu_memory_utilization,
                  "cuda: share of the device's memory for weights, KV cache and scratch, in (0, 1]")
      ->capture_default_str();
  sub->add_option("--tensor-parallel-size", rt.backend.tensor_parallel_size,
                  "cuda: GPUs from cuda:N on (1, 2, 4, 8), one thread each; the same bits at every size")
      ->capture_default_str();
  sub->add_option("--max-model-len", e.max_model_len, "Context length (default: the model's)")
      ->check(at_least(1, 1 << 24));
  sub->add_option("--max-num-seqs", e.max_num_seqs, "Most sequences in one step")
      ->check(at_least(1, 1 << 16))
      ->capture_default_str();
  sub->add_option("--max-num-batched-tokens", e.max_num_batched_tokens, "Most tokens in one step (chunked prefill)")
      ->check(at_least(1, 1 << 24))
      ->capture_default_str();
  sub->add_option("--block-size", e.block_size, "Tokens per KV-cache block")
      ->check(at_least(1, 1024))
      ->capture_default_str();
  sub->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", e.enable_prefix_caching,
                "Reuse the K/V of prompt prefixes seen before (default on)");
  sub->add_option("--seed", e.seed, "Seed of requests that name none")->capture_default_str()->check(decimal_seed<uint64_t>());
  sub->add_option("--served-model-name", rt.served_model_names,
                  "Model name(s) in the API, as vLLM's: answers carry the first, requests may name any (default: MODEL_DIR)")
      ->check([](const std::string& s) { return s.empty() ? std::string("is empty") : std::string(); });
  sub->add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' on /v1/* and /reset_prefix_cache (or $VERBATIM_API_KEY)");
  sub->add_option("--num-kv-blocks", e.num_kv_blocks, "KV-cache capacity in blocks (default: sized by the engine)")
      ->check(at_least(1, 1 << 30));
  sub->add_option("--max-queue-len", e.max_waiting, "Waiting requests beyond which new ones get 503")
      ->check(at_least(1, 1 << 30))
      ->capture_default_str();
  sub->add_option("--http-threads", o->http_threads,
                  "Most HTTP connections served at once, a thread each (0: max-num-seqs + max-queue-len + 64)")
      ->check(at_least(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("--generation-config", rt.generation_config,
                  "auto: sampling defaults from generation_config.json; vllm: OpenAI's defaults")
      ->check(CLI::IsMember({"auto", "vllm"}))
      ->capture_default_str();
  sub->add_flag("!--disable-access-log,!--disable-uvicorn-access-log", o->access_log,
                "No line per answered request (the access log; health checks and scrapes are never logged)");
  sub->add_option("--status-interval", o->status_interval_s, "Seconds between status lines while busy (0: off)")
      ->capture_default_str()
      ->check(finite_range(0.0, 86400.0));
  sub->add_option("--engine-step-timeout", o->engine_step_timeout_s,
                  "Seconds one engine step may run before the engine counts as hung: /health says 503, the "
                  "waiting requests get an error, the process exits 1 (default: 60 on cuda, off on cpu; 0: off)")
      ->check(finite_range(0.0, 86400.0));
  // Speculative decoding: changes no bit of any output (engine/spec_decode.h), only speed.
  sub->add_option("--speculative", e.speculative, "none | ngram: drafts copied from the sequence's own text, verified in one step")
      ->check(CLI::IsMember({"none", "ngram"}));
  sub->add_option("--num-speculative-tokens", e.num_speculative_tokens, "Most drafts verified per step and sequence")
      ->check(at_least(1, 64))
      ->capture_default_str();
  sub->add_option("--ngram-min", e.ngram_min, "Shortest n-gram looked up for drafts")->check(at_least(1, 64))->capture_default_str();
  sub->add_option("--ngram-max", e.ngram_max, "Longest n-gram looked up for drafts")->check(at_least(1, 64))->capture_default_str();
  // vLLM options its launch scripts carry that have no work to do here: accepted (each logged at
  // startup), so a script runs unchanged. --disable-log-stats does what it says.
  struct VllmFlags {
    bool disable_log_requests = false, disable_log_stats = false, enable_chunked_prefill = false,
         no_chunked_prefill = false, trust_remote_code = false, no_trust_remote_code = false;
  };
  auto vllm = std::make_shared<VllmFlags>();
  sub->add_flag("--disable-log-requests", vllm->disable_log_requests,
                "vLLM's; no effect here (verbatim never logs prompts; the access log: --disable-access-log)");
  sub->add_flag("--disable-log-stats", vllm->disable_log_stats, "vLLM's: no status lines (as --status-interval 0)");
  sub->add_flag("--enable-chunked-prefill", vllm->enable_chunked_prefill,
                "vLLM's; no effect here (prefill is always chunked by --max-num-batched-tokens)");
  sub->add_flag("--no-enable-chunked-prefill", vllm->no_chunked_prefill,
                "vLLM's; no effect here (raise --max-num-batched-tokens to take whole prompts in one step)");
  sub->add_flag("--trust-remote-code", vllm->trust_remote_code,
                "vLLM's; no effect here (verbatim runs no code from a model folder)");
  sub->add_flag("--no-trust-remote-code", vllm->no_trust_remote_code, "vLLM's; no effect here");
  return [o, positional_dir, vllm] {
    if (vllm->disable_log_requests)
      o->notes.push_back("--disable-log-requests: no effect (verbatim never logs prompts; --disable-access-log drops the access lines)");
    if (vllm->disable_log_stats) {
      o->status_interval_s = 0;
      o->notes.push_back("--disable-log-stats: no status lines");
    }
    if (vllm->enable_chunked_prefill)
      o->notes.push_back("--enable-chunked-prefill: no effect (prefill is always chunked by --max-num-batched-tokens)");
    if (vllm->no_chunked_prefill)
      o->notes.push_back("--no-enable-chunked-prefill: no effect (prompts longer than --max-num-batched-tokens are "
                         "still taken in chunks; the chunking changes no output bit)");
    if (vllm->trust_remote_code || vllm->no_trust_remote_code)
      o->notes.push_back(std::string(vllm->trust_remote_code ? "--trust-remote-code" : "--no-trust-remote-code") +
                         ": no effect (verbatim runs no code from a model folder)");
    // Both spellings naming two folders would leave one silently unused: refused.
    if (!positional_dir->empty()) {
      if (!o->runtime.model_dir.empty() && o->runtime.model_dir != *positional_dir)
        throw Error("serve: MODEL_DIR '" + *positional_dir + "' and --model '" + o->runtime.model_dir +
                    "' name two folders; give the model once");
      o->runtime.model_dir = *positional_dir;
    }
    // --served-model-name takes every word after it (vLLM's nargs +), so 'serve --served-model-name a
    // DIR' would make DIR a name and serve the embedded default: refused when a name is a model folder.
    if (o->runtime.model_dir.empty())
      for (const std::string& n : o->runtime.served_model_names)
        if (std::filesystem::is_regular_file(std::filesystem::path(n) / "config.json"))
          throw Error("serve: '" + n + "' is a model folder given as a --served-model-name (the option takes every "
                      "word after it); put MODEL_DIR before --served-model-name or use --model");
    // Refuse --device/--mode/--gpu-memory-utilization values that cannot work before listening.
    server::validate_backend_options(server::parse_device(o->runtime.device), o->runtime.backend);
    if (o->api_key.empty())
      if (const char* k = std::getenv("VERBATIM_API_KEY")) o->api_key = k;
    return server::serve(*o);
  };
});

}  // namespace
}  // namespace verbatim::cli
