#include "server/choice_state.h"

#include <algorithm>

namespace verbatim::server {

ChoiceState::ChoiceState(int index, const Tokenizer* tok, ChoiceConfig cfg)
    : index_(index), tok_(tok), cfg_(std::move(cfg)) {
  if (tok_) decoder_.emplace(*tok_, cfg_.skip_special_tokens);
  for (const auto& s : cfg_.stop) hold_ = std::max(hold_, s.size() - 1);
}

ChoiceState::Delta ChoiceState::apply(const RequestUpdate& u) {
  Delta d;
  d.first_token = tokens_.size();
  if (!u.prompt_logprobs.empty()) prompt_logprobs_ = u.prompt_logprobs;
  if (u.num_prompt_tokens) num_prompt_tokens_ = u.num_prompt_tokens;
  num_cached_tokens_ = std::max(num_cached_tokens_, u.num_cached_tokens);
  if (u.finished) engine_finished_ = true;
  if (finished_) return d;
  for (size_t i = 0; i < u.tokens.size() && !finished_; ++i) {
    const TokenLogprob& t = u.tokens[i];
    tokens_.push_back(t.token);
    if (cfg_.want_logprobs) logprobs_.push_back(t);
    // The engine stops right after an EOS or stop_token_ids token: that token counts in token_ids
    // but its text is left out unless include_stop_str_in_output, as in vLLM.
    bool stop_trigger = u.finished && u.reason == FinishReason::Stop && i + 1 == u.tokens.size();
    if (stop_trigger &&
        std::find(cfg_.stop_token_ids.begin(), cfg_.stop_token_ids.end(), t.token) != cfg_.stop_token_ids.end())
      stop_token_ = t.token;
    if (decoder_ && (!stop_trigger || cfg_.include_stop_str_in_output)) feed_text(decoder_->push(t.token));
  }
  if (!finished_ && u.finished) {
    if (decoder_) feed_text(decoder_->finish());
    if (!finished_) {
      finished_ = true;
      reason_ = u.reason;
    }
  }
  d.num_tokens = tokens_.size() - d.first_token;
  d.text = take_safe_text();
  d.finished = finished_;
  return d;
}

void ChoiceState::feed_text(const std::string& piece) {
  if (piece.empty() || finished_) return;
  // Only a match that ends inside the new piece can be new: search from hold_ bytes back.
  size_t from = text_.size() > hold_ ? text_.size() - hold_ : 0;
  text_ += piece;
  // min_tokens holds off stop strings: one may start in the first min_tokens tokens' text but
  // must end after it (vLLM's stop_check_offset).
  if (tokens_.size() <= size_t(std::max(cfg_.min_tokens, 0))) {
    min_text_ = text_.size();
    return;
  }
  size_t best = std::string::npos;
  const std::string* hit = nullptr;
  for (const auto& s : cfg_.stop) {  // earliest match wins; at equal positions the first listed
    size_t pos = text_.find(s, from);
    while (pos != std::string::npos && pos + s.size() <= min_text_) pos = text_.find(s, pos + 1);
    if (pos != std::string::npos && pos < best) {
      best = pos;
      hit = &s;
    }
  }
  if (!hit) return;
  text_.resize(cfg_.include_stop_str_in_output ? best + hit->size() : best);
  if (emitted_ > text_.size()) emitted_ = text_.size();  // never: held-back bytes cover any match
  finished_ = true;
  reason_ = FinishReason::Stop;
  stop_str_ = *hit;
}

std::string ChoiceState::take_safe_text() {
  size_t safe = text_.size();
  if (!finished_) {
    safe = text_.size() > hold_ ? text_.size() - hold_ : 0;
    // Back up to a character boundary so the held part never splits a UTF-8 character.
    while (safe > emitted_ && safe < text_.size() && (static_cast<unsigned char>(text_[safe]) & 0xC0) == 0x80) --safe;
  }
  if (safe <= emitted_) return {};
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

}  // namespace verbatim::server
