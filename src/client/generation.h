#pragma once
// One generation request against /v1/completions or /v1/chat/completions, in the OpenAI / vLLM
// shapes: the body built from a Prompt, the answer parsed into token ids, logprobs and text
// (non-streaming, for check), or timed chunk by chunk over SSE (streaming, for bench).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/http_client.h"
#include "client/prompts.h"

namespace verbatim::client {

struct SamplingOptions {
  std::string model;
  int max_tokens = 128;
  double temperature = 0.0;        // 0: greedy
  std::optional<int64_t> seed;
  bool chat = false;               // text prompts as one user message to /v1/chat/completions
  bool ignore_eos = false;         // vLLM's extension: always max_tokens tokens
  bool echo = false;               // completions' echo: every prompt token's logprob too (loglikelihood evals)
};

// What a server turned out to support (probed once, then read-only across threads).
struct ServerFeatures {
  bool token_ids = true;   // accepts "return_token_ids" and answers with choices[].token_ids
  bool logprobs = true;    // answers with logprobs
  std::string route;       // the probe's route: what it found holds for answers from that route
};

// One finished answer. Token identity comes from the best source the server gave.
struct Output {
  std::vector<int64_t> token_ids;  // return_token_ids
  bool has_token_ids = false;
  std::vector<std::string> tokens; // logprobs' token strings (fallback identity)
  std::vector<double> logprobs;    // the chosen tokens' logprobs; NaN for null
  bool has_logprobs = false;
  std::string text;
  std::string finish_reason;
  std::string fingerprint;         // system_fingerprint ("" when absent)
  int64_t completion_tokens = -1;  // usage, when sent
  int64_t prompt_tokens = -1;      // usage.prompt_tokens, when sent
  int64_t cached_tokens = -1;      // usage.prompt_tokens_details.cached_tokens, when sent

  json to_json() const;
  static Output from_json(const json& j);
};

// The route a prompt goes to; Error for combinations the API cannot express (token ids as chat).
std::string route_for(const Prompt& p, const SamplingOptions& s);
json request_body(const Prompt& p, const SamplingOptions& s, const ServerFeatures& f, bool stream);
// A finish_reason that ends a request the server completed (OpenAI's and vLLM's; vLLM's "abort"
// and "error" mean it did not).
bool completed_finish_reason(const std::string& r);
// Parses a non-streaming answer; ClientError(BadAnswer) naming what is missing. echo: the
// logprobs start with the prompt's, whose first is null (nothing predicts it; kept as NaN).
Output parse_answer(const json& answer, bool chat, const std::string& where, bool echo = false);

Output generate(HttpClient& c, const Prompt& p, const SamplingOptions& s, const ServerFeatures& f);

// A streamed answer timed on the client's steady clock, in seconds after the request was sent.
struct StreamTiming {
  double first_token_s = -1;        // TTFT: the first event with a choice (a chat role-only delta aside)
  double last_token_s = -1;
  double end_s = -1;                // the stream closed
  std::vector<double> chunk_s;      // arrival of every such event (vLLM's benchmark times the same)
  int64_t completion_tokens = 0;    // usage.completion_tokens, else token ids seen, else non-empty chunks
  int64_t prompt_tokens = 0;
  bool usage_reported = false;
  bool tokens_from_chunks = false;  // no usage, no token ids: completion_tokens counts chunks
  bool usage_disagrees = false;     // usage.completion_tokens differed from the token ids streamed
                                    // (completion_tokens is then the token ids counted)
  std::string finish_reason;
  std::string fingerprint;
};

StreamTiming generate_streaming(HttpClient& c, const Prompt& p, const SamplingOptions& s, const ServerFeatures& f);

// First request against a server: learns whether it answers with token ids and logprobs (and
// drops return_token_ids when a strict server rejects the field). Returns the probe's output.
Output probe_features(HttpClient& c, const Prompt& p, const SamplingOptions& s, ServerFeatures& f);

}  // namespace verbatim::client
