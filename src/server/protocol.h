#pragma once
// The OpenAI / vLLM wire format. Request bodies are parsed into native structs with every field
// checked (InvalidRequest names the param: HTTP 400), and responses, stream chunks and errors are
// built back into JSON. JSON stops here: nothing below src/server sees it.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::server {

using json = nlohmann::ordered_json;  // keeps our output keys in OpenAI's order
// Request bodies: keys in a std::map. ordered_json finds a key by a linear scan, so parsing an
// object of n keys took O(n^2) (a 3 MB body of 200,000 unknown keys: 26 s of CPU).
using request_json = nlohmann::json;

// Sampling defaults a request starts from. vLLM's `--generation-config auto`: the model's
// generation_config.json (temperature, top_p, top_k, min_p) when present, else OpenAI's defaults.
struct SamplingDefaults {
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  std::vector<std::string> from_model;  // the fields taken from generation_config.json
  static SamplingDefaults from_model_dir(const std::string& dir);
};

// One prompt as the client sent it: text (tokenized later) or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;  // when text is absent
};

// Fields shared by /v1/completions and /v1/chat/completions.
struct GenerationRequest {
  std::string model;               // "" when left out
  SamplingParams params;           // every sampling field, logprobs (k) and prompt_logprobs
  std::optional<int> max_tokens;   // left out: 16 (completions) or the rest of the context (chat)
  const char* max_tokens_param = "max_tokens";  // chat: "max_completion_tokens" when that named it
  int n = 1;
  std::vector<std::string> stop;   // matched on the detokenized text
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  bool stream = false;
  bool include_usage = false;      // stream_options.include_usage (true when stream_options omits it, as vLLM)
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats: usage on every chunk too
  bool return_token_ids = false;
};

struct CompletionRequest : GenerationRequest {
  std::vector<PromptInput> prompts;  // one choice group of n per prompt
  bool echo = false;
  bool echo_only = false;            // echo with max_tokens 0: the prompt alone, finish_reason "length"
  std::optional<int> logprobs;       // top-k count (0..kMaxLogprobs)
};

struct ChatRequest : GenerationRequest {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
  bool enable_thinking = true;       // chat_template_kwargs.enable_thinking (Qwen3's default: on)
  bool logprobs = false;
  int top_logprobs = 0;
};

struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;        // /tokenize with "prompt"
  std::vector<ChatMessage> messages;        // /tokenize with "messages"
  bool add_generation_prompt = true;
  bool enable_thinking = true;
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

constexpr int kMaxLogprobs = 20;  // vLLM's default --max-logprobs
constexpr int kMaxN = 128;
constexpr size_t kMaxChoices = 4096;  // prompts x n in one request

// Parses the body text; InvalidRequest (param "body") when it is not a JSON object.
request_json parse_body(const std::string& body);
CompletionRequest parse_completion_request(const request_json& body, const SamplingDefaults& defaults);
ChatRequest parse_chat_request(const request_json& body, const SamplingDefaults& defaults);
TokenizeRequest parse_tokenize_request(const request_json& body);
DetokenizeRequest parse_detokenize_request(const request_json& body);

// A short, printable excerpt of client input for error messages (never the whole input).
std::string excerpt(const std::string& s, size_t max_chars = 40);

// ---- responses -------------------------------------------------------------------------------

// How token ids are shown as strings (logprobs, /tokenize): the decoded token text when a
// tokenizer is loaded, else vLLM's "token_id:N".
class TokenNamer {
 public:
  explicit TokenNamer(const Tokenizer* tok) : tok_(tok) {}
  std::string name(int32_t id) const;
  std::vector<uint8_t> bytes(int32_t id) const;
  bool has_text() const { return tok_ != nullptr; }

 private:
  const Tokenizer* tok_;
};

// One logprob entry: null for the first prompt token under echo.
struct LogprobEntry {
  int32_t token = -1;
  std::optional<float> logprob;
  std::vector<std::pair<int32_t, float>> top;
};

struct ResponseMeta {
  std::string id;
  int64_t created = 0;
  std::string model;
  std::string fingerprint;
};

// What one finished (or partial, when streaming) choice carries into JSON.
struct ChoiceJson {
  int index = 0;
  std::optional<std::string> text;            // absent without a tokenizer
  std::vector<int32_t> token_ids;
  std::optional<std::vector<int32_t>> prompt_token_ids;  // return_token_ids (first chunk when streaming)
  std::optional<std::vector<LogprobEntry>> logprobs;     // when asked
  size_t text_offset = 0;                     // completions logprobs: offset of the first entry
  std::optional<std::string> finish_reason;   // null until finished
  std::optional<json> stop_reason;            // the stop string or token id, null otherwise
  bool include_token_ids = false;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

json usage_json(const Usage& u);
json completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t text_offset, int top_k,
                              const TokenNamer& namer);
json chat_logprobs_json(const std::vector<LogprobEntry>& entries, int top_k, const TokenNamer& namer);

// /v1/completions: a whole response (stream=false) or one SSE chunk's object (stream=true).
json completion_response(const ResponseMeta& meta, const std::vector<ChoiceJson>& choices, int top_k,
                         const TokenNamer& namer, const std::optional<Usage>& usage, bool chunk);
// /v1/chat/completions. A chunk's choices carry `delta` (role on the first), a response `message`.
json chat_response(const ResponseMeta& meta, const std::vector<ChoiceJson>& choices, int top_k,
                   const TokenNamer& namer, const std::optional<Usage>& usage,
                   const std::optional<std::vector<int32_t>>& prompt_token_ids);
json chat_chunk(const ResponseMeta& meta, const ChoiceJson& choice, bool first, int top_k,
                const TokenNamer& namer);
// The final `choices: []` chunk with usage (stream_options.include_usage).
json usage_chunk(const ResponseMeta& meta, const char* object, const Usage& usage);

// {"error":{"message","type","param","code"}} as OpenAI sends it.
json error_json(int status, const std::string& message, const std::string& param = "");

}  // namespace verbatim::server
