#pragma once
// The engine: requests in, tokens out. Single-threaded: whoever calls step() owns the running batch
// (async_engine.h puts it on its own thread). No JSON, no HTTP, no GPU code here.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend.h"

namespace verbatim {

struct SamplingParams {
  float temperature = 1.0f;   // 0: greedy
  float top_p = 1.0f;
  int top_k = 0;              // 0 or -1: off
  float min_p = 0.0f;
  std::optional<uint64_t> seed;  // none: the engine's seed (--seed, default 0)
  uint64_t stream = 0;        // choice index when one prompt asks for n > 1
  int max_tokens = 16;
  int min_tokens = 0;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int logprobs = -1;          // < 0: none; k >= 0: the chosen token's logprob and the top k
  bool prompt_logprobs = false;  // logprob of every prompt token after the first (echo)
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

enum class FinishReason { None, Stop, Length, Abort };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", null for None

struct EngineOptions {
  int block_size = 16;
  int num_kv_blocks = 0;            // 0: max_num_seqs full-length sequences, capped by
                                    //    backend.kv_budget_bytes() (engine.cpp, default_kv_blocks)
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  int max_model_len = 0;            // 0: the model's max_position_embeddings
  bool enable_prefix_caching = true;
  uint64_t seed = 0;
  int max_waiting = 4096;           // queue bound: add() beyond it throws QueueFull
  // Speculative decoding (spec_decode.h): "" or "none": off; "ngram": drafts copied from the
  // sequence's own earlier text, verified in one step. Changes no bit of any output, only speed.
  std::string speculative;
  int num_speculative_tokens = 3;   // K: most drafts verified per step and sequence
  int ngram_min = 2;                // shortest suffix looked up (1: single tokens, more drafts rejected)
  int ngram_max = 4;                // longest suffix looked up (tried first)
};

// The most tokens (prompt + max_tokens) one request may need of a KV cache of `blocks` blocks:
// the last generated token's K/V is never written, so it takes no slot.
inline int64_t longest_request_tokens(int64_t blocks, int block_size) { return blocks * block_size + 1; }

// The context length an engine of `opts` on a model of `cfg` serves (max_model_len, or the model's
// max_position_embeddings); throws Error when max_model_len exceeds what the model supports.
int effective_max_model_len(const EngineOptions& opts, const ModelConfig& cfg);

class QueueFull : public std::runtime_error {
 public:
  QueueFull() : std::runtime_error("the server's request queue is full; retry later") {}
};

// add() after a step failed in the backend (a device fault): the engine is dead for good.
class EngineFailed : public std::runtime_error {
 public:
  explicit EngineFailed(const std::string& reason)
      : std::runtime_error("the engine failed and takes no new requests: " + reason) {}
};

struct RequestUpdate {
  uint64_t id = 0;
  std::vector<TokenLogprob> tokens;           // new tokens since the last update
  std::vector<TokenLogprob> prompt_logprobs;  // once, when asked for: entries for prompt[1..]
  bool finished = false;
  FinishReason reason = FinishReason::None;
  int num_prompt_tokens = 0;
  int num_cached_tokens = 0;                  // prompt tokens served from the prefix cache
  std::string error;                          // the fault, when the engine failed it (reason Abort)
};

struct EngineStats {
  int running = 0;
  int waiting = 0;
  int kv_blocks_total = 0;
  int kv_blocks_used = 0;
  uint64_t preemptions = 0;
  uint64_t prefix_queries = 0;   // prompt tokens looked up in the prefix cache
  uint64_t prefix_hits = 0;      // of those, tokens found
  uint64_t prompt_tokens = 0;    // of requests whose prefill is done (counted at their first token)
  uint64_t generation_tokens = 0;
  uint64_t steps = 0;
  uint64_t spec_draft_tokens = 0;     // draft tokens verified (speculative decoding)
  uint64_t spec_accepted_tokens = 0;  // of those, the ones that matched the target's choice
};

class Engine {
 public:
  Engine(std::unique_ptr<Backend> backend, EngineOptions opts);
  ~Engine();
  // Validates and queues a request; returns its id. Throws InvalidRequest (bad prompt or params,
  // prompt + max_tokens beyond max_model_len), QueueFull or EngineFailed.
  uint64_t add(std::vector<int32_t> prompt, const SamplingParams& params);
  // The checks add() makes, without queueing. Reads only immutable state: safe from any thread.
  void validate(const std::vector<int32_t>& prompt, const SamplingParams& params) const;
  int max_model_len() const;         // the effective limit (options, else the model's)
  void abort(uint64_t id);           // frees its blocks; its final update has reason Abort
  std::vector<RequestUpdate> step(); // one scheduling step; empty when idle
  // Empty while healthy. Once a step's backend call threw (a device fault leaves the device and the
  // K/V cache untrustworthy), the fault: that step ended every request with it as the error, and
  // add() throws EngineFailed from then on.
  const std::string& failure() const;
  bool has_work() const;
  EngineStats stats() const;
  void reset_prefix_cache();
  const EngineOptions& options() const;
  Backend& backend();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace verbatim
