#pragma once
// One /v1/completions or /v1/chat/completions request after parsing: its prepared prompts, one
// ChoiceState per (prompt, n) choice, and how the choices become a response or SSE chunks.
// Choice i of prompt p has index p * n + i, as in vLLM.
#include <cstdint>
#include <string>
#include <vector>

#include "server/choice_state.h"
#include "server/prompt_prep.h"
#include "server/protocol.h"

namespace verbatim::server {

class Job {
 public:
  enum class Kind { Completion, Chat };

  // Tokenize and check everything; throws InvalidRequest.
  static Job completion(CompletionRequest r, const ModelLimits& m);
  static Job chat(ChatRequest r, const ModelLimits& m);

  struct Choice {
    int prompt = 0;            // index into prompts()
    ChoiceState state;
    uint64_t engine_id = 0;
    bool started = false;      // the first chunk (role / echo / prompt_token_ids) went out
    size_t text_offset = 0;    // completions logprobs: text_offset of the next entry
  };

  Kind kind() const { return kind_; }
  const GenerationRequest& request() const { return req_; }
  const std::vector<PreparedPrompt>& prompts() const { return prompts_; }
  std::vector<Choice>& choices() { return choices_; }
  const std::vector<Choice>& choices() const { return choices_; }
  SamplingParams params(const Choice& c) const;
  bool has_text() const { return limits_.tokenizer != nullptr; }
  bool all_finished() const;
  const char* chunk_object() const { return kind_ == Kind::Chat ? "chat.completion.chunk" : "text_completion"; }
  // choices[].token_ids in every answer, asked for or not (`verbatim generate` always shows them).
  void always_include_token_ids() { always_token_ids_ = true; }

  Usage usage() const;
  json response(const ResponseMeta& meta) const;
  // The SSE objects one delta of choice `c` gives (possibly none). The first call for a choice
  // also carries the role (chat) or the echoed prompt (completions) and prompt_token_ids.
  std::vector<json> chunks(const ResponseMeta& meta, Choice& c, const ChoiceState::Delta& d);
  // The finish_reason choice `c`'s answer shows (null while it runs; echo-only: always "length"),
  // so /metrics counts what the client was told.
  const char* shown_finish_reason(const Choice& c) const;

 private:
  Job(Kind kind, GenerationRequest req, std::vector<PreparedPrompt> prompts, const ModelLimits& m);
  ChoiceJson choice_json(const Choice& c, size_t first_token, size_t num_tokens, bool first) const;
  std::vector<LogprobEntry> echo_entries(const Choice& c) const;
  size_t shown_tokens(const Choice& c) const;  // the generated tokens an answer shows (echo-only: none)
  std::vector<json> chunks_of(const ResponseMeta& meta, Choice& c, const ChoiceState::Delta& d);

  Kind kind_;
  GenerationRequest req_;
  bool echo_ = false;
  bool echo_only_ = false;  // max_tokens 0: the one token the engine samples is never shown
  int top_k_ = 0;  // logprobs alternatives shown per token
  bool always_token_ids_ = false;
  std::vector<PreparedPrompt> prompts_;
  std::vector<Choice> choices_;
  ModelLimits limits_;
  TokenNamer namer_;
};

const char* finish_reason_string(FinishReason r);

}  // namespace verbatim::server
