#include "server/prompt_prep.h"

#include "core/error.h"

namespace verbatim::server {
namespace {

void check_ids(const std::vector<int32_t>& ids, const ModelLimits& m, const char* param) {
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab_size)
      throw InvalidRequest("token id " + std::to_string(id) + " in '" + param + "' is outside the vocabulary (0.." +
                               std::to_string(m.vocab_size - 1) + ")",
                           param);
}

// vLLM's wording, so clients that parse it keep working. `prompt_tokens`: the count, or "more than N".
[[noreturn]] void throw_no_room(const std::string& prompt_tokens, const ModelLimits& m, const char* param) {
  throw InvalidRequest("This model's maximum context length is " + std::to_string(m.max_model_len) +
                           " tokens. However, your prompt is " + prompt_tokens +
                           " tokens long, which leaves no room for a completion. Please shorten the prompt.",
                       param);
}

void check_length(size_t prompt_len, int max_tokens, const ModelLimits& m, const char* param, const char* where,
                  const char* max_param = "max_tokens") {
  if (m.max_model_len <= 0) return;
  if (prompt_len >= size_t(m.max_model_len)) throw_no_room(std::to_string(prompt_len), m, param);
  if (prompt_len + size_t(max_tokens) > size_t(m.max_model_len))
    throw InvalidRequest("This model's maximum context length is " + std::to_string(m.max_model_len) +
                             " tokens. However, you requested " + std::to_string(prompt_len + max_tokens) +
                             " tokens (" + std::to_string(prompt_len) + " in the " + where + ", " +
                             std::to_string(max_tokens) +
                             " in the completion). Please reduce the length of the " + where + " or completion.",
                         max_param);
}

// Text is tokenized only as far as the length check needs: up to twice the context the count is
// exact; past that the prompt is "more than" that many tokens, so 60 MiB of text costs a handler
// thread milliseconds, not the half minute a full encode takes.
std::vector<int32_t> encode_for_context(const Tokenizer& tok, const std::string& text, const ModelLimits& m,
                                        const char* param) {
  const size_t limit = m.max_model_len > 0 ? 2 * size_t(m.max_model_len) : SIZE_MAX;
  std::optional<std::vector<int32_t>> ids = tok.encode_at_most(text, limit);
  if (!ids) throw_no_room("more than " + std::to_string(limit), m, param);
  return std::move(*ids);
}

const Tokenizer& need_tokenizer(const ModelLimits& m, const char* param, const char* what) {
  if (!m.tokenizer)
    throw InvalidRequest(std::string("this model folder has no tokenizer files, so ") + what +
                             " cannot be used; send token ids instead",
                         param);
  return *m.tokenizer;
}

}  // namespace

void check_against_model(const GenerationRequest& r, const ModelLimits& m) {
  check_ids(r.params.stop_token_ids, m, "stop_token_ids");
  if (!r.stop.empty()) need_tokenizer(m, "stop", "stop strings");
}

std::vector<PreparedPrompt> prepare_completion_prompts(const CompletionRequest& r, const ModelLimits& m) {
  check_against_model(r, m);
  std::vector<PreparedPrompt> out;
  for (const PromptInput& p : r.prompts) {
    PreparedPrompt pp;
    if (p.text) {
      pp.ids = encode_for_context(need_tokenizer(m, "prompt", "text prompts"), *p.text, m, "prompt");
      pp.text = *p.text;
    } else {
      pp.ids = p.ids;
      check_ids(pp.ids, m, "prompt");
      // The echoed prompt keeps its special tokens, as vLLM's decode of a token prompt does: the
      // echo's logprobs name them too, so text_offset indexes this text ('skip_special_tokens'
      // applies to the generated text only).
      if (m.tokenizer && r.echo) pp.text = m.tokenizer->decode(pp.ids, false);
    }
    if (pp.ids.empty()) throw InvalidRequest("'prompt' must not be empty (it has no tokens)", "prompt");
    check_length(pp.ids.size(), *r.max_tokens, m, "prompt", "prompt");
    out.push_back(std::move(pp));
  }
  return out;
}

PreparedPrompt prepare_chat_prompt(ChatRequest& r, const ModelLimits& m) {
  check_against_model(r, m);
  const Tokenizer& tok = need_tokenizer(m, "messages", "chat messages");
  PreparedPrompt pp;
  pp.text = render_chat(r.messages, r.add_generation_prompt, r.enable_thinking);
  pp.ids = encode_for_context(tok, *pp.text, m, "messages");
  if (pp.ids.empty()) throw InvalidRequest("'messages' render to an empty prompt", "messages");
  if (!r.max_tokens) {  // vLLM's chat default: whatever the context has left
    if (m.max_model_len > 0 && pp.ids.size() >= size_t(m.max_model_len)) check_length(pp.ids.size(), 1, m, "messages", "messages");
    r.max_tokens = m.max_model_len > 0 ? m.max_model_len - int(pp.ids.size()) : 16;
    r.params.max_tokens = *r.max_tokens;
    if (r.params.min_tokens > *r.max_tokens)
      throw InvalidRequest("'min_tokens' is more than the context leaves for the completion", "min_tokens");
  }
  check_length(pp.ids.size(), *r.max_tokens, m, "messages", "messages", r.max_tokens_param);
  return pp;
}

SamplingParams choice_params(const GenerationRequest& r, int choice) {
  SamplingParams p = r.params;
  p.stream = uint64_t(choice);
  if (r.max_tokens) p.max_tokens = *r.max_tokens;
  return p;
}

ChoiceConfig choice_config(const GenerationRequest& r, const ModelLimits& m) {
  ChoiceConfig c;
  c.stop = r.stop;
  c.stop_token_ids = r.params.stop_token_ids;
  c.include_stop_str_in_output = r.include_stop_str_in_output;
  c.min_tokens = r.params.min_tokens;
  c.skip_special_tokens = r.skip_special_tokens;
  c.want_logprobs = r.params.logprobs >= 0;
  return c;
}

}  // namespace verbatim::server
