#pragma once
// Continuous batching (no device code here). Each step, under max_num_batched_tokens tokens and
// max_num_seqs sequences:
//  1. running sequences that decode get their one token, oldest first;
//  2. running sequences still in prefill get a chunk of what budget is left (chunked prefill),
//     oldest first;
//  3. waiting sequences are admitted FIFO (the head blocks the rest) while sequences, budget and
//     KV blocks allow; an admitted sequence first takes what the prefix cache holds of it;
//  4. speculative decoding: a decode whose sequence carries draft tokens gets them appended (a
//     verification chunk), LAST, from the budget and the cache-free blocks left: drafts never
//     preempt, never evict, and never take budget or blocks that steps 1-3 would have used.
// When a running sequence needs a KV block and none is left, the NEWEST running sequence is
// preempted: its blocks are released and it returns to the front of the waiting queue, to be
// recomputed later from its prompt plus the tokens generated so far. The schedule never changes a
// bit of any result (design.md): it only decides which rows share a step.
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/block_manager.h"

namespace verbatim {

struct Sequence {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int num_prompt_tokens = 0;
  int num_computed = 0;         // leading tokens whose K/V are in the cache
  int num_cached_tokens = 0;    // tokens the prefix cache supplied at the last admission
  bool use_prefix_cache = true; // false while every prompt position's logits are needed (echo)
  bool running = false;
  uint64_t admitted_at = 0;     // admission counter: larger is newer
  BlockTable table;
  std::vector<int32_t> draft;   // proposed next tokens (speculative decoding); set before schedule()
};

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int start = 0;              // absolute position of the first token
  int num_tokens = 0;
  bool needs_logits = false;  // the chunk ends at the last known token: a new token is sampled
  int num_draft = 0;          // trailing tokens of the chunk taken from seq->draft (verification)
};

struct SchedulerConfig {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig cfg, BlockManager& blocks);

  void add(Sequence* seq);           // to the back of the waiting queue
  std::vector<ScheduledChunk> schedule();
  // After the step ran: advances num_computed and commits newly full blocks to the prefix cache.
  // A verification chunk must come back with num_tokens cut to the positions whose K/V holds the
  // sequence's real tokens (the last token plus the accepted drafts) and those tokens appended to
  // seq->tokens; blocks that only rejected drafts used are released.
  void complete(const std::vector<ScheduledChunk>& plan);
  void remove(Sequence* seq);        // finished or aborted, running or waiting: releases its blocks

  bool empty() const { return running_.empty() && waiting_.empty(); }
  int num_running() const { return int(running_.size()); }
  int num_waiting() const { return int(waiting_.size()); }
  uint64_t preemptions() const { return preemptions_; }
  const std::deque<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }

 private:
  void preempt(Sequence* seq);
  bool admit(Sequence* seq, int& budget, std::vector<ScheduledChunk>& plan);

  SchedulerConfig cfg_;
  BlockManager& blocks_;
  std::deque<Sequence*> running_;  // admission order: front is the oldest
  std::deque<Sequence*> waiting_;
  uint64_t admissions_ = 0;
  uint64_t preemptions_ = 0;
};

}  // namespace verbatim
