#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/error.h"
#include "engine/block_manager.h"
#include "engine/scheduler.h"
#include "engine/spec_decode.h"

namespace verbatim {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::None: break;
  }
  return nullptr;
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Default KV capacity (num_kv_blocks == 0): room for max_num_seqs sequences of max_model_len
// tokens, capped by the backend's memory budget, and never below one block.
int default_kv_blocks(const Backend& backend, const EngineOptions& opts, int max_model_len) {
  const int64_t per_seq = (int64_t(max_model_len) + opts.block_size - 1) / opts.block_size;
  int64_t blocks = per_seq * opts.max_num_seqs;
  const size_t block_bytes = backend.kv_block_bytes(opts.block_size);
  if (block_bytes > 0) blocks = std::min<int64_t>(blocks, int64_t(backend.kv_budget_bytes() / block_bytes));
  return int(std::clamp<int64_t>(blocks, 1, 1 << 30));
}

}  // namespace

int effective_max_model_len(const EngineOptions& opts, const ModelConfig& cfg) {
  if (opts.max_model_len < 0) throw Error("max_model_len must be positive (got " + std::to_string(opts.max_model_len) + ")");
  if (cfg.max_position_embeddings > 0 && opts.max_model_len > cfg.max_position_embeddings)
    throw Error("max_model_len " + std::to_string(opts.max_model_len) + " exceeds the model's max_position_embeddings " +
                std::to_string(cfg.max_position_embeddings));
  int len = opts.max_model_len > 0 ? opts.max_model_len : cfg.max_position_embeddings;
  if (len <= 0) throw Error("max_model_len is unknown: config.json has no max_position_embeddings; pass one");
  return len;
}

struct Engine::Impl {
  struct Request {
    Sequence seq;
    SamplingParams params;
    uint64_t seed = 0;
    int num_generated = 0;
    int num_cached_at_first_admission = -1;
    std::vector<TokenLogprob> new_tokens;    // since the last update
    std::vector<TokenLogprob> prompt_lp;     // entry i: prompt[i + 1]; filled by position
    bool prompt_lp_due = false;              // echo: still to be computed and sent
    bool prompt_lp_ready = false;            // complete, goes out with the next update
    FinishReason finished = FinishReason::None;
    SpecThrottle spec;                       // speculative decoding: propose or pause
    // Within one step's results: the verification chunk's rows are taken in position order while
    // every earlier draft matched; `step_emitted` tokens came out of it.
    bool verify_open = false;
    int step_emitted = 0;
    int step_accepted = 0;
  };

  std::unique_ptr<Backend> backend;
  EngineOptions opts;
  ModelConfig cfg;
  int max_len = 0;
  int num_blocks = 0;
  std::unique_ptr<BlockManager> blocks;
  std::unique_ptr<Scheduler> scheduler;
  std::map<uint64_t, std::unique_ptr<Request>> requests;
  std::vector<RequestUpdate> pending;  // aborts, delivered by the next step()
  std::string failure;                 // the backend fault that ended the engine (empty: healthy)
  uint64_t next_id = 1;
  uint64_t prompt_tokens = 0, generation_tokens = 0, steps = 0;  // prompt: of prefills done
  bool spec_ngram = false;
  uint64_t spec_drafted = 0, spec_accepted = 0;

  RequestUpdate update_of(Request& r) {
    RequestUpdate u;
    u.id = r.seq.id;
    u.tokens = std::move(r.new_tokens);
    r.new_tokens.clear();
    if (r.prompt_lp_ready) {
      u.prompt_logprobs = std::move(r.prompt_lp);
      r.prompt_lp_ready = false;
    }
    u.finished = r.finished != FinishReason::None;
    u.reason = r.finished;
    u.num_prompt_tokens = r.seq.num_prompt_tokens;
    u.num_cached_tokens = std::max(0, r.num_cached_at_first_admission);
    return u;
  }

  // The spec of the token `ahead` positions after the next one: exactly what a plain decode step
  // would use there once the `ahead` tokens before it were appended (verification relies on it).
  SampleSpec sample_spec(const Request& r, int ahead = 0) const {
    const SamplingParams& p = r.params;
    SampleSpec s;
    s.temperature = p.temperature;
    s.top_k = p.top_k > 0 ? p.top_k : 0;
    s.top_p = p.top_p;
    s.min_p = p.min_p;
    s.seed = r.seed;
    s.stream = p.stream;
    s.position = int64_t(r.seq.tokens.size()) + ahead;  // the absolute position the token will take
    s.want_logprob = p.logprobs >= 0;
    s.num_top_logprobs = std::max(0, p.logprobs);
    if (r.num_generated + ahead < p.min_tokens) {  // min_tokens: no stopping token may be drawn yet
      s.banned = p.stop_token_ids;
      if (!p.ignore_eos) s.banned.insert(s.banned.end(), cfg.eos_token_ids.begin(), cfg.eos_token_ids.end());
    }
    return s;
  }

  // Sets seq.draft of every running sequence that decodes next (empty for the others). Drafts are
  // capped so the step can emit at most the tokens max_tokens still allows.
  void propose_drafts() {
    for (auto& [id, rp] : requests) {
      Request& r = *rp;
      r.seq.draft.clear();
      if (!spec_ngram || !r.seq.running || r.seq.num_computed != int(r.seq.tokens.size()) - 1) continue;
      const int k = r.spec.draft_len(std::min(opts.num_speculative_tokens, r.params.max_tokens - r.num_generated - 1));
      if (k > 0) r.seq.draft = propose_ngram(r.seq.tokens, opts.ngram_min, opts.ngram_max, k);
    }
  }

  void append_token(Request& r, const SampleResult& res) {
    const SamplingParams& p = r.params;
    r.seq.tokens.push_back(res.token);
    // A prompt counts once its prefill is done (as vLLM counts it, at the first token): one that
    // waited and was aborted never ran, and a preempted one recomputed is not counted twice.
    if (++r.num_generated == 1) prompt_tokens += uint64_t(r.seq.num_prompt_tokens);
    ++generation_tokens;
    TokenLogprob t;
    t.token = res.token;
    if (p.logprobs >= 0) {
      t.logprob = res.logprob;
      t.top = res.top;
    }
    r.new_tokens.push_back(std::move(t));
    ++r.step_emitted;
    auto contains = [&](const std::vector<int32_t>& v) { return std::find(v.begin(), v.end(), res.token) != v.end(); };
    if (r.num_generated >= p.min_tokens && ((!p.ignore_eos && contains(cfg.eos_token_ids)) || contains(p.stop_token_ids)))
      r.finished = FinishReason::Stop;
    else if (r.num_generated >= p.max_tokens)
      r.finished = FinishReason::Length;
  }
};

Engine::Engine(std::unique_ptr<Backend> backend, EngineOptions opts) : impl_(std::make_unique<Impl>()) {
  if (!backend) throw Error("the engine needs a backend");
  if (opts.block_size < 1) throw Error("block_size must be at least 1 (got " + std::to_string(opts.block_size) + ")");
  if (opts.num_kv_blocks < 0) throw Error("num_kv_blocks must be >= 0 (got " + std::to_string(opts.num_kv_blocks) + ")");
  if (opts.max_waiting < 1) throw Error("max_waiting must be at least 1");
  Impl& m = *impl_;
  m.cfg = backend->config();
  m.max_len = effective_max_model_len(opts, m.cfg);
  m.num_blocks = opts.num_kv_blocks > 0 ? opts.num_kv_blocks : default_kv_blocks(*backend, opts, m.max_len);
  // Out of memory for the cache (a large --num-kv-blocks) is a sentence naming the size, not
  // "std::bad_alloc".
  auto no_room = [&] {
    const double gib = double(backend->kv_block_bytes(opts.block_size)) * double(m.num_blocks) / double(1ull << 30);
    char size[32];
    std::snprintf(size, sizeof size, "%.2f", gib);
    return Error("cannot allocate a KV cache of " + std::to_string(m.num_blocks) + " blocks of " +
                 std::to_string(opts.block_size) + " tokens (" + size + " GiB on " + backend->device_name() +
                 "): out of memory; ask for fewer blocks (--num-kv-blocks)");
  };
  try {
    m.blocks = std::make_unique<BlockManager>(m.num_blocks, opts.block_size, opts.enable_prefix_caching);
  } catch (const std::bad_alloc&) {
    throw no_room();
  }
  m.scheduler = std::make_unique<Scheduler>(SchedulerConfig{opts.max_num_seqs, opts.max_num_batched_tokens}, *m.blocks);
  if (opts.speculative == "ngram") {
    m.spec_ngram = true;
    if (opts.num_speculative_tokens < 1 || opts.num_speculative_tokens > 64)
      throw Error("num_speculative_tokens must be between 1 and 64 (got " + std::to_string(opts.num_speculative_tokens) + ")");
    if (opts.ngram_min < 1 || opts.ngram_max < opts.ngram_min)
      throw Error("ngram_min must be >= 1 and ngram_max >= ngram_min (got " + std::to_string(opts.ngram_min) + " and " +
                  std::to_string(opts.ngram_max) + ")");
  } else if (!opts.speculative.empty() && opts.speculative != "none") {
    throw Error("unknown speculative method '" + opts.speculative + "' (choose one of: none, ngram)");
  }
  try {
    backend->allocate_kv(m.num_blocks, opts.block_size);
  } catch (const std::bad_alloc&) {
    throw no_room();
  }
  m.backend = std::move(backend);
  m.opts = opts;
}

Engine::~Engine() = default;

const EngineOptions& Engine::options() const { return impl_->opts; }
Backend& Engine::backend() { return *impl_->backend; }
int Engine::max_model_len() const { return impl_->max_len; }

void Engine::validate(const std::vector<int32_t>& prompt, const SamplingParams& p) const {
  const Impl& m = *impl_;
  const int vocab = m.cfg.vocab_size;
  if (prompt.empty()) throw InvalidRequest("the prompt is empty; it needs at least one token", "prompt");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      throw InvalidRequest("prompt token " + std::to_string(i) + " has id " + std::to_string(prompt[i]) +
                               ", outside the model's vocabulary of " + std::to_string(vocab) + " ids",
                           "prompt");
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
    throw InvalidRequest("temperature must be a finite number >= 0 (got " + num(p.temperature) + ")", "temperature");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    throw InvalidRequest("top_p must be in (0, 1] (got " + num(p.top_p) + ")", "top_p");
  if (p.top_k < -1) throw InvalidRequest("top_k must be -1 or 0 (off) or positive (got " + std::to_string(p.top_k) + ")", "top_k");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    throw InvalidRequest("min_p must be in [0, 1] (got " + num(p.min_p) + ")", "min_p");
  if (p.max_tokens < 1) throw InvalidRequest("max_tokens must be at least 1 (got " + std::to_string(p.max_tokens) + ")", "max_tokens");
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens)
    throw InvalidRequest("min_tokens must be between 0 and max_tokens (" + std::to_string(p.max_tokens) + "), got " +
                             std::to_string(p.min_tokens),
                         "min_tokens");
  if (p.logprobs > vocab)
    throw InvalidRequest("logprobs asks for " + std::to_string(p.logprobs) + " alternatives; the vocabulary has " +
                             std::to_string(vocab),
                         "logprobs");
  for (int32_t id : p.stop_token_ids)
    if (id < 0 || id >= vocab)
      throw InvalidRequest("stop_token_ids holds " + std::to_string(id) + ", outside the model's vocabulary of " +
                               std::to_string(vocab) + " ids",
                           "stop_token_ids");
  const int64_t total = int64_t(prompt.size()) + p.max_tokens;
  if (total > m.max_len)
    throw InvalidRequest("the prompt has " + std::to_string(prompt.size()) + " tokens and max_tokens is " +
                             std::to_string(p.max_tokens) + ": " + std::to_string(total) +
                             " tokens exceed the maximum context length of " + std::to_string(m.max_len),
                         "max_tokens");
  const int64_t capacity = int64_t(m.num_blocks) * m.opts.block_size;
  if (total > longest_request_tokens(m.num_blocks, m.opts.block_size))
    throw InvalidRequest("the prompt has " + std::to_string(prompt.size()) + " tokens and max_tokens is " +
                             std::to_string(p.max_tokens) + ": the KV cache holds only " + std::to_string(capacity) +
                             " tokens (num_kv_blocks x block_size)",
                         "max_tokens");
}

uint64_t Engine::add(std::vector<int32_t> prompt, const SamplingParams& params) {
  validate(prompt, params);
  Impl& m = *impl_;
  if (!m.failure.empty()) throw EngineFailed(m.failure);
  if (m.scheduler->num_waiting() >= m.opts.max_waiting) throw QueueFull();
  auto r = std::make_unique<Impl::Request>();
  r->params = params;
  r->seed = params.seed.value_or(m.opts.seed);
  r->seq.id = m.next_id++;
  r->seq.num_prompt_tokens = int(prompt.size());
  r->seq.tokens = std::move(prompt);
  // Echo needs the logits of every prompt position, so the prefix cache may not skip any (it may
  // still be filled from this request).
  r->prompt_lp_due = params.prompt_logprobs;
  r->seq.use_prefix_cache = !r->prompt_lp_due;
  if (r->prompt_lp_due) r->prompt_lp.resize(r->seq.tokens.size() - 1);
  const uint64_t id = r->seq.id;
  m.scheduler->add(&r->seq);
  m.requests.emplace(id, std::move(r));
  return id;
}

void Engine::abort(uint64_t id) {
  Impl& m = *impl_;
  auto it = m.requests.find(id);
  if (it == m.requests.end()) return;  // unknown or already finished: nothing to do
  Impl::Request& r = *it->second;
  m.scheduler->remove(&r.seq);
  r.finished = FinishReason::Abort;
  m.pending.push_back(m.update_of(r));
  m.requests.erase(it);
}

const std::string& Engine::failure() const { return impl_->failure; }

bool Engine::has_work() const { return !impl_->scheduler->empty() || !impl_->pending.empty(); }

void Engine::reset_prefix_cache() { impl_->blocks->reset_prefix_cache(); }

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  EngineStats s;
  s.running = m.scheduler->num_running();
  s.waiting = m.scheduler->num_waiting();
  s.kv_blocks_total = m.blocks->num_blocks();
  s.kv_blocks_used = m.blocks->num_used();
  s.preemptions = m.scheduler->preemptions();
  s.prefix_queries = m.blocks->prefix_queries();
  s.prefix_hits = m.blocks->prefix_hits();
  s.prompt_tokens = m.prompt_tokens;
  s.generation_tokens = m.generation_tokens;
  s.steps = m.steps;
  s.spec_draft_tokens = m.spec_drafted;
  s.spec_accepted_tokens = m.spec_accepted;
  return s;
}

std::vector<RequestUpdate> Engine::step() {
  Impl& m = *impl_;
  std::vector<RequestUpdate> updates = std::move(m.pending);
  m.pending.clear();
  m.propose_drafts();
  std::vector<ScheduledChunk> plan = m.scheduler->schedule();
  if (plan.empty()) return updates;

  // One row per token, sequence after sequence; logit rows: every prompt position still owed a
  // prompt logprob (scored with the next prompt token), then the chunk's last token if it samples.
  // A verification chunk (last token + d drafts) asks for all its d + 1 rows: row i chooses the
  // token at position start + 1 + i, with the SampleSpec a plain decode would use there.
  ForwardBatch batch;
  std::vector<SampleSpec> specs;
  struct RowUse { Impl::Request* req; int prompt_pos; int verify; };  // prompt_pos < 0: a sampled token
  std::vector<RowUse> uses;
  std::vector<Impl::Request*> reqs;
  for (size_t j = 0; j < plan.size(); ++j) {
    const ScheduledChunk& c = plan[j];
    Impl::Request& r = *m.requests.at(c.seq->id);
    reqs.push_back(&r);
    r.verify_open = true;
    r.step_emitted = r.step_accepted = 0;
    c.seq->draft.resize(size_t(c.num_draft));  // what the scheduler kept of it (none: not verifying)
    if (r.num_cached_at_first_admission < 0) r.num_cached_at_first_admission = c.seq->num_cached_tokens;
    batch.block_tables.push_back(c.seq->table.blocks);
    const int known = int(c.seq->tokens.size());
    for (int t = 0; t < c.num_tokens; ++t) {
      const int pos = c.start + t;
      const int row = int(batch.tokens.size());
      batch.tokens.push_back(pos < known ? c.seq->tokens[size_t(pos)] : c.seq->draft[size_t(pos - known)]);
      batch.positions.push_back(pos);
      batch.token_seq.push_back(int32_t(j));
      if (r.prompt_lp_due && pos < c.seq->num_prompt_tokens - 1) {
        SampleSpec s;
        s.score_token = c.seq->tokens[size_t(pos) + 1];
        s.want_logprob = true;
        s.num_top_logprobs = std::max(0, r.params.logprobs);
        batch.logit_rows.push_back(row);
        specs.push_back(std::move(s));
        uses.push_back({&r, pos, 0});
      }
      if (c.needs_logits && pos >= known - 1) {  // the last known token, then each draft
        batch.logit_rows.push_back(row);
        specs.push_back(m.sample_spec(r, pos - (known - 1)));
        uses.push_back({&r, -1, pos - (known - 1)});
      }
    }
  }

  std::vector<SampleResult> results;
  try {
    m.backend->forward_sample(batch, specs, results);
    if (results.size() != specs.size()) throw Error("the backend returned " + std::to_string(results.size()) +
                                                    " results for " + std::to_string(specs.size()) + " rows");
  } catch (const std::exception& e) {
    // A device fault (an illegal address, an ECC error) is sticky: every later launch fails too,
    // and K/V written before it may be wrong. So the engine ends every request, running or
    // waiting, with the fault, and refuses new ones: a server must say it is dead, not answer
    // each request with an error (or worse, with tokens from a corrupt cache).
    m.failure = e.what();
    if (m.failure.empty()) m.failure = "the backend threw an exception with no message";
    for (auto& [id, r] : m.requests) {
      m.scheduler->remove(&r->seq);
      r->finished = FinishReason::Abort;
      RequestUpdate u = m.update_of(*r);
      u.error = m.failure;
      updates.push_back(std::move(u));
    }
    m.requests.clear();
    return updates;
  }
  ++m.steps;

  // Tokens go out in position order, each checked for stops as a plain decode would. Verification
  // row i > 0 counts only while the drafts before it equal the tokens chosen there; the first
  // mismatch's choice is still emitted (it is exactly the token a plain decode picks there).
  for (size_t i = 0; i < uses.size(); ++i) {
    Impl::Request& r = *uses[i].req;
    if (uses[i].prompt_pos >= 0) {
      r.prompt_lp[size_t(uses[i].prompt_pos)] = TokenLogprob{results[i].token, results[i].logprob, std::move(results[i].top)};
      continue;
    }
    if (!r.verify_open) continue;
    if (r.prompt_lp_due) {  // the first sample closes the prompt: every position has been scored
      r.prompt_lp_due = false;
      r.prompt_lp_ready = true;
      r.seq.use_prefix_cache = true;
    }
    const int v = uses[i].verify;
    const bool matched = v < int(r.seq.draft.size()) && results[i].token == r.seq.draft[size_t(v)];
    m.append_token(r, results[i]);
    r.step_accepted += matched ? 1 : 0;
    r.verify_open = matched && r.finished == FinishReason::None;
  }
  // K/V is now right for the last token and the accepted drafts only: complete() advances
  // num_computed over those (never over a rejected draft) and frees blocks only rejects used.
  for (ScheduledChunk& c : plan) {
    if (c.num_draft == 0) continue;
    Impl::Request& r = *m.requests.at(c.seq->id);
    m.spec_drafted += uint64_t(c.num_draft);
    m.spec_accepted += uint64_t(r.step_accepted);
    r.spec.record(c.num_draft, r.step_accepted);
    c.num_tokens = r.step_emitted;
  }
  m.scheduler->complete(plan);

  for (Impl::Request* r : reqs) {
    if (r->new_tokens.empty() && !r->prompt_lp_ready && r->finished == FinishReason::None) continue;
    updates.push_back(m.update_of(*r));
    if (r->finished != FinishReason::None) {
      m.scheduler->remove(&r->seq);
      const uint64_t id = r->seq.id;
      m.requests.erase(id);
    }
  }
  return updates;
}

}  // namespace verbatim
