#pragma once
// One choice's output as the engine's updates arrive: token ids, logprobs, UTF-8-safe text with the
// stop strings applied, and the finish reason. Every decision depends only on the token sequence,
// never on how the tokens were grouped into updates, so a streamed answer equals the unstreamed one
// and a stop string cuts the same token list whatever the engine ran ahead.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::server {

struct ChoiceConfig {
  std::vector<std::string> stop;        // stop strings, matched on the detokenized text
  std::vector<int32_t> stop_token_ids;  // reported as stop_reason when one ends the choice
  bool include_stop_str_in_output = false;  // also the text of a stop_token_ids / EOS token that ends it
  int min_tokens = 0;                       // a stop string must end after these tokens' text (vLLM)
  bool skip_special_tokens = true;
  bool want_logprobs = false;
};

class ChoiceState {
 public:
  ChoiceState(int index, const Tokenizer* tok, ChoiceConfig cfg);

  struct Delta {
    size_t first_token = 0;  // index into token_ids() of the first new token
    size_t num_tokens = 0;
    std::string text;        // text newly safe to emit (whole UTF-8 characters, no stop-string prefix)
    bool finished = false;
  };
  // Feeds one engine update. Updates after the choice finished (a stop string matched while the
  // engine ran on) are ignored.
  Delta apply(const RequestUpdate& u);

  // A stop string ended the choice while the engine request still runs: abort it.
  bool needs_abort() const { return finished_ && !engine_finished_; }
  void engine_done() { engine_finished_ = true; }

  int index() const { return index_; }
  bool finished() const { return finished_; }
  const std::vector<int32_t>& token_ids() const { return tokens_; }
  const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }
  const std::vector<TokenLogprob>& prompt_logprobs() const { return prompt_logprobs_; }
  const std::string& text() const { return text_; }  // the whole generated text so far
  FinishReason finish_reason() const { return reason_; }
  const std::optional<std::string>& stop_string() const { return stop_str_; }
  const std::optional<int32_t>& stop_token() const { return stop_token_; }
  int num_prompt_tokens() const { return num_prompt_tokens_; }
  int num_cached_tokens() const { return num_cached_tokens_; }

 private:
  void feed_text(const std::string& piece);
  std::string take_safe_text();

  int index_;
  const Tokenizer* tok_;
  ChoiceConfig cfg_;
  std::optional<StreamDecoder> decoder_;
  size_t hold_ = 0;  // bytes held back while streaming: a stop string may still start there
  size_t min_text_ = 0;  // bytes of the first min_tokens tokens' text: no stop string ends inside
  std::vector<int32_t> tokens_;
  std::vector<TokenLogprob> logprobs_;
  std::vector<TokenLogprob> prompt_logprobs_;
  std::string text_;
  size_t emitted_ = 0;
  bool finished_ = false;
  bool engine_finished_ = false;
  FinishReason reason_ = FinishReason::None;
  std::optional<std::string> stop_str_;
  std::optional<int32_t> stop_token_;
  int num_prompt_tokens_ = 0;
  int num_cached_tokens_ = 0;
};

}  // namespace verbatim::server
