#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace verbatim {

Scheduler::Scheduler(SchedulerConfig cfg, BlockManager& blocks) : cfg_(cfg), blocks_(blocks) {
  if (cfg_.max_num_seqs < 1) throw Error("max_num_seqs must be at least 1");
  if (cfg_.max_num_batched_tokens < 1) throw Error("max_num_batched_tokens must be at least 1");
}

void Scheduler::add(Sequence* seq) {
  seq->running = false;
  waiting_.push_back(seq);
}

void Scheduler::preempt(Sequence* seq) {
  blocks_.release(seq->table);
  seq->num_computed = 0;  // recomputed from prompt + generated tokens on readmission
  seq->running = false;
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  waiting_.push_front(seq);  // victims go newest first, so older victims end up ahead
  ++preemptions_;
}

bool Scheduler::admit(Sequence* seq, int& budget, std::vector<ScheduledChunk>& plan) {
  const std::vector<int32_t> prefix =
      seq->use_prefix_cache ? blocks_.find_prefix(seq->tokens) : std::vector<int32_t>{};
  const int cached = int(prefix.size()) * blocks_.block_size();
  const int n = std::min(int(seq->tokens.size()) - cached, budget);
  const int need = blocks_.blocks_for(cached + n) - int(prefix.size());
  // Taking the matched blocks removes the evictable ones among them from the free room.
  if (need + blocks_.num_evictable(prefix) > blocks_.num_free()) return false;
  waiting_.pop_front();
  if (seq->use_prefix_cache && blocks_.prefix_caching())
    blocks_.acquire_prefix(seq->tokens, prefix, seq->table, int(seq->tokens.size()));
  blocks_.ensure_capacity(seq->table, cached + n);  // cannot fail: checked above
  seq->num_computed = cached;
  seq->num_cached_tokens = cached;
  seq->running = true;
  seq->admitted_at = ++admissions_;
  running_.push_back(seq);
  plan.push_back({seq, cached, n, cached + n == int(seq->tokens.size())});
  budget -= n;
  return true;
}

std::vector<ScheduledChunk> Scheduler::schedule() {
  std::vector<ScheduledChunk> plan;
  int budget = cfg_.max_num_batched_tokens;
  // Preempts the newest running sequence unless that is `self`; a victim already in this step's
  // plan is taken out of it (its tokens go back to the budget).
  auto preempt_newer_than = [&](Sequence* self) {
    Sequence* victim = running_.back();
    if (victim == self) return false;
    auto it = std::find_if(plan.begin(), plan.end(), [&](const ScheduledChunk& c) { return c.seq == victim; });
    if (it != plan.end()) {
      budget += it->num_tokens;
      plan.erase(it);
    }
    preempt(victim);
    return true;
  };

  // 1. Decodes, oldest first. Victims are always newer, so they sit later in running_ than i.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* s = running_[i];
    if (s->num_computed != int(s->tokens.size()) - 1) continue;
    bool ok = blocks_.ensure_capacity(s->table, s->num_computed + 1);
    while (!ok && preempt_newer_than(s)) ok = blocks_.ensure_capacity(s->table, s->num_computed + 1);
    if (!ok) {  // s is the newest and still no block: it yields its own
      preempt(s);
      break;
    }
    plan.push_back({s, s->num_computed, 1, true});
    budget -= 1;
  }

  // 2. Prefill chunks of running sequences, oldest first, cut to the budget and to the free blocks.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* s = running_[i];
    const int remaining = int(s->tokens.size()) - s->num_computed;
    if (remaining <= 1) continue;  // a decode (handled above)
    int n = 0;
    for (;;) {
      const int room = (int(s->table.blocks.size()) + blocks_.num_free()) * blocks_.block_size() - s->num_computed;
      n = std::min({remaining, budget, room});
      if (n > 0 || !preempt_newer_than(s)) break;
    }
    if (n <= 0) continue;  // the newest, with no room: it waits, holding what it has
    blocks_.ensure_capacity(s->table, s->num_computed + n);
    plan.push_back({s, s->num_computed, n, s->num_computed + n == int(s->tokens.size())});
    budget -= n;
  }

  // 3. Admissions, FIFO: the head waits for room rather than being overtaken.
  while (!waiting_.empty() && budget > 0 && int(running_.size()) < cfg_.max_num_seqs)
    if (!admit(waiting_.front(), budget, plan)) break;

  // 4. Drafts on decodes, oldest first, from what is left: the work above is exactly what it would
  //    be without speculation, and drafts take only blocks that hold no prefix-cache entry (they
  //    neither preempt nor evict).
  for (ScheduledChunk& c : plan) {
    if (budget <= 0) break;
    Sequence* s = c.seq;
    if (s->draft.empty() || c.num_tokens != 1 || !c.needs_logits || c.start != int(s->tokens.size()) - 1) continue;
    const int room = (int(s->table.blocks.size()) + blocks_.num_free_uncached()) * blocks_.block_size() - (c.start + 1);
    const int d = std::min({int(s->draft.size()), budget, room});
    if (d <= 0) continue;
    blocks_.ensure_capacity(s->table, c.start + 1 + d);  // cannot fail: d fits the room
    c.num_tokens += d;
    c.num_draft = d;
    budget -= d;
  }
  return plan;
}

void Scheduler::complete(const std::vector<ScheduledChunk>& plan) {
  for (const ScheduledChunk& c : plan) {
    c.seq->num_computed = c.start + c.num_tokens;
    // Only full blocks below num_computed are registered: rejected drafts sit at or past it.
    blocks_.commit(c.seq->tokens, c.seq->num_computed, c.seq->table);
    // Blocks that held nothing but rejected drafts go back now (the next token's slot stays).
    if (c.num_draft > 0) blocks_.shrink(c.seq->table, int(c.seq->tokens.size()));
  }
}

void Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) waiting_.erase(it);
  blocks_.release(seq->table);
  seq->running = false;
}

}  // namespace verbatim
