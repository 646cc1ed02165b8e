#pragma once
// Between a parsed request and the engine: tokenize prompts (or render the chat template), check
// them against the model (vocabulary, context length), and derive each choice's SamplingParams and
// ChoiceConfig. Shared by `verbatim serve` and `verbatim generate`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/choice_state.h"
#include "server/protocol.h"

namespace verbatim::server {

struct ModelLimits {
  const Tokenizer* tokenizer = nullptr;  // null: token-id prompts only, no text in responses
  int vocab_size = 0;
  int max_model_len = 0;
  std::vector<int32_t> eos_token_ids;
};

struct PreparedPrompt {
  std::vector<int32_t> ids;
  std::optional<std::string> text;  // the prompt as text (sent, rendered, or decoded ids) for echo
};

// Each prompt tokenized and checked; InvalidRequest (param "prompt") on an empty prompt, a token id
// outside the vocabulary, or a prompt that leaves no room for max_tokens within max_model_len.
std::vector<PreparedPrompt> prepare_completion_prompts(const CompletionRequest& r, const ModelLimits& m);
// The chat template rendered and tokenized; max_tokens defaults to the rest of the context.
PreparedPrompt prepare_chat_prompt(ChatRequest& r, const ModelLimits& m);

// SamplingParams of choice `choice` (0..n-1) of one prompt: stream = choice, so choice j of a
// prompt samples the same tokens whether the prompt came alone or in a list.
SamplingParams choice_params(const GenerationRequest& r, int choice);
ChoiceConfig choice_config(const GenerationRequest& r, const ModelLimits& m);

// Checks that need the model: stop_token_ids in the vocabulary, stop strings need a tokenizer.
void check_against_model(const GenerationRequest& r, const ModelLimits& m);

}  // namespace verbatim::server
