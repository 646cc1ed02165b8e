#include "server/job.h"

#include "core/error.h"

namespace verbatim::server {

const char* finish_reason_string(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    default: return nullptr;
  }
}

Job::Job(Kind kind, GenerationRequest req, std::vector<PreparedPrompt> prompts, const ModelLimits& m)
    : kind_(kind), req_(std::move(req)), prompts_(std::move(prompts)), limits_(m), namer_(m.tokenizer) {
  ChoiceConfig cfg = choice_config(req_, m);
  for (size_t p = 0; p < prompts_.size(); ++p)
    for (int i = 0; i < req_.n; ++i)
      choices_.push_back(Choice{int(p), ChoiceState(int(p) * req_.n + i, m.tokenizer, cfg)});
}

Job Job::completion(CompletionRequest r, const ModelLimits& m) {
  if (r.prompts.size() * size_t(r.n) > kMaxChoices)
    throw InvalidRequest("the request asks for " + std::to_string(r.prompts.size() * size_t(r.n)) +
                             " choices (prompts x n); at most " + std::to_string(kMaxChoices) + " are allowed",
                         "prompt");
  auto prompts = prepare_completion_prompts(r, m);
  bool echo = r.echo, echo_only = r.echo_only;
  int k = r.logprobs.value_or(0);
  Job job(Kind::Completion, std::move(r), std::move(prompts), m);
  job.echo_ = echo;
  job.echo_only_ = echo_only;
  job.top_k_ = k;
  return job;
}

Job Job::chat(ChatRequest r, const ModelLimits& m) {
  PreparedPrompt prompt = prepare_chat_prompt(r, m);
  int k = r.top_logprobs;
  Job job(Kind::Chat, std::move(r), {std::move(prompt)}, m);
  job.top_k_ = k;
  return job;
}

SamplingParams Job::params(const Choice& c) const { return choice_params(req_, c.state.index() % req_.n); }

bool Job::all_finished() const {
  for (const auto& c : choices_)
    if (!c.state.finished()) return false;
  return true;
}

Usage Job::usage() const {
  Usage u;
  for (const auto& p : prompts_) u.prompt_tokens += int64_t(p.ids.size());
  for (const auto& c : choices_) {
    u.completion_tokens += int64_t(shown_tokens(c));
    if (c.state.index() % req_.n == 0) u.cached_tokens += c.state.num_cached_tokens();
  }
  return u;
}

namespace {
LogprobEntry entry(const TokenLogprob& t) { return {t.token, t.logprob, t.top}; }
}  // namespace

// Echo's logprobs: null for the first prompt token (nothing predicts it), then each prompt token's.
std::vector<LogprobEntry> Job::echo_entries(const Choice& c) const {
  const auto& ids = prompts_[c.prompt].ids;
  std::vector<LogprobEntry> out;
  out.push_back({ids[0], std::nullopt, {}});
  const auto& pl = c.state.prompt_logprobs();
  for (size_t i = 1; i < ids.size(); ++i) {
    if (i - 1 < pl.size()) out.push_back(entry(pl[i - 1]));
    else out.push_back({ids[i], std::nullopt, {}});
  }
  return out;
}

size_t Job::shown_tokens(const Choice& c) const { return echo_only_ ? 0 : c.state.token_ids().size(); }

const char* Job::shown_finish_reason(const Choice& c) const {
  if (!c.state.finished()) return nullptr;
  if (echo_only_) return "length";  // max_tokens 0 reached, whatever ended the hidden token
  return finish_reason_string(c.state.finish_reason());
}

ChoiceJson Job::choice_json(const Choice& c, size_t first_token, size_t num_tokens, bool first) const {
  const ChoiceState& s = c.state;
  if (echo_only_) num_tokens = 0;
  ChoiceJson j;
  j.index = s.index();
  j.include_token_ids = req_.return_token_ids || always_token_ids_ || !has_text();
  j.token_ids.assign(s.token_ids().begin() + first_token, s.token_ids().begin() + first_token + num_tokens);
  if (first && req_.return_token_ids && kind_ == Kind::Completion) j.prompt_token_ids = prompts_[c.prompt].ids;
  if (req_.params.logprobs >= 0) {
    std::vector<LogprobEntry> entries;
    if (first && echo_ && kind_ == Kind::Completion) entries = echo_entries(c);
    const auto& lps = s.logprobs();
    for (size_t i = first_token; i < first_token + num_tokens && i < lps.size(); ++i) entries.push_back(entry(lps[i]));
    j.logprobs = std::move(entries);
  }
  if (const char* r = shown_finish_reason(c)) j.finish_reason = r;
  if (s.finished() && !echo_only_) {
    if (s.stop_string()) j.stop_reason = json(*s.stop_string());
    else if (s.stop_token()) j.stop_reason = json(*s.stop_token());
  }
  return j;
}

json Job::response(const ResponseMeta& meta) const {
  std::vector<ChoiceJson> out;
  for (const auto& c : choices_) {
    ChoiceJson j = choice_json(c, 0, c.state.token_ids().size(), true);
    if (has_text()) {
      std::string text = echo_only_ ? "" : c.state.text();
      if (echo_ && prompts_[c.prompt].text) text = *prompts_[c.prompt].text + text;
      j.text = std::move(text);
    }
    out.push_back(std::move(j));
  }
  if (kind_ == Kind::Chat)
    return chat_response(meta, out, top_k_, namer_, usage(),
                         req_.return_token_ids ? std::optional(prompts_[0].ids) : std::nullopt);
  return completion_response(meta, out, top_k_, namer_, usage(), false);
}

std::vector<json> Job::chunks(const ResponseMeta& meta, Choice& c, const ChoiceState::Delta& d) {
  const bool opens = !c.started;
  std::vector<json> out = chunks_of(meta, c, d);
  if (!req_.include_usage) return out;
  if (!req_.continuous_usage_stats) {  // OpenAI: every chunk before the usage chunk carries "usage": null
    for (json& j : out) j["usage"] = nullptr;
    return out;
  }
  // vLLM's continuous_usage_stats: each chunk carries its choice's usage so far (its prompt, the
  // tokens shown up to and including this chunk; a chat choice's opening role chunk shows none).
  Usage u;
  u.prompt_tokens = int64_t(prompts_[c.prompt].ids.size());
  u.cached_tokens = c.state.num_cached_tokens();
  const int64_t shown = echo_only_ ? 0 : int64_t(d.first_token + d.num_tokens);
  for (size_t i = 0; i < out.size(); ++i) {
    u.completion_tokens = opens && kind_ == Kind::Chat && i == 0 ? 0 : shown;
    out[i]["usage"] = usage_json(u);
  }
  return out;
}

std::vector<json> Job::chunks_of(const ResponseMeta& meta, Choice& c, const ChoiceState::Delta& delta) {
  ChoiceState::Delta d = delta;
  if (echo_only_) {  // the hidden token: no tokens, no text, only the finish
    d.num_tokens = 0;
    d.text.clear();
  }
  std::vector<json> out;
  bool first = !c.started;
  c.started = true;
  if (kind_ == Kind::Chat) {
    if (first) {  // vLLM opens every choice with a role-only delta
      ChoiceJson role;
      role.index = c.state.index();
      role.text = "";
      if (req_.return_token_ids) {
        role.prompt_token_ids = prompts_[0].ids;
        role.include_token_ids = true;
      }
      out.push_back(chat_chunk(meta, role, true, top_k_, namer_));
    }
    if (d.num_tokens == 0 && d.text.empty() && !d.finished) return out;
    ChoiceJson j = choice_json(c, d.first_token, d.num_tokens, false);
    j.text = d.text;
    out.push_back(chat_chunk(meta, j, false, top_k_, namer_));
    return out;
  }
  bool echo_now = first && echo_;
  if (!first && d.num_tokens == 0 && d.text.empty() && !d.finished) return out;
  ChoiceJson j = choice_json(c, d.first_token, d.num_tokens, first);
  if (has_text()) j.text = (echo_now && prompts_[c.prompt].text ? *prompts_[c.prompt].text : "") + d.text;
  j.text_offset = c.text_offset;
  if (j.logprobs)
    for (const auto& e : *j.logprobs) {
      std::string name = namer_.name(e.token);
      for (unsigned char ch : name) c.text_offset += (ch & 0xC0) != 0x80;
    }
  out.push_back(completion_response(meta, {j}, top_k_, namer_, std::nullopt, true));
  return out;
}

}  // namespace verbatim::server
