// Continuous batching, GPU-free: the token budget and sequence cap, chunked prefill, decodes
// first, FIFO admission, preemption of the newest with recompute, and no starvation.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "engine/scheduler.h"

using namespace verbatim;

namespace {

// Plays the engine: runs each plan, appends one token per chunk that needs logits, finishes a
// sequence after its number of generated tokens.
struct Sim {
  BlockManager bm;
  Scheduler sched;
  SchedulerConfig cfg;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::map<Sequence*, int> to_generate;
  std::vector<uint64_t> finished;  // in finishing order
  int steps = 0;

  Sim(int blocks, int block_size, SchedulerConfig c, bool caching = false)
      : bm(blocks, block_size, caching), sched(c, bm), cfg(c) {}

  Sequence* add(int prompt_len, int gen, int32_t first_token = 0) {
    auto s = std::make_unique<Sequence>();
    s->id = seqs.size();
    s->tokens.resize(size_t(prompt_len));
    std::iota(s->tokens.begin(), s->tokens.end(), first_token);
    s->num_prompt_tokens = prompt_len;
    Sequence* p = s.get();
    seqs.push_back(std::move(s));
    to_generate[p] = gen;
    sched.add(p);
    return p;
  }

  std::vector<ScheduledChunk> step() {
    std::vector<ScheduledChunk> plan = sched.schedule();
    int tokens = 0;
    std::set<Sequence*> in_plan;
    for (const ScheduledChunk& c : plan) {
      tokens += c.num_tokens;
      EXPECT_TRUE(in_plan.insert(c.seq).second) << "a sequence twice in one step";
      EXPECT_EQ(c.start, c.seq->num_computed);
      EXPECT_GT(c.num_tokens, 0);
      EXPECT_LE(c.start + c.num_tokens, int(c.seq->tokens.size()));
      EXPECT_EQ(c.needs_logits, c.start + c.num_tokens == int(c.seq->tokens.size()));
      EXPECT_GE(int(c.seq->table.blocks.size()) * bm.block_size(), c.start + c.num_tokens) << "KV room";
      EXPECT_TRUE(c.seq->running);
    }
    EXPECT_LE(tokens, cfg.max_num_batched_tokens);
    EXPECT_LE(sched.num_running(), cfg.max_num_seqs);
    sched.complete(plan);
    for (const ScheduledChunk& c : plan) {
      if (!c.needs_logits) continue;
      Sequence* s = c.seq;
      s->tokens.push_back(int32_t(1000 + s->tokens.size()));
      if (int(s->tokens.size()) - s->num_prompt_tokens >= to_generate[s]) {
        sched.remove(s);
        finished.push_back(s->id);
      }
    }
    ++steps;
    return plan;
  }

  void run(int max_steps = 10000) {
    while (!sched.empty() && steps < max_steps) step();
    ASSERT_TRUE(sched.empty()) << "did not finish in " << max_steps << " steps";
  }
};

}  // namespace

TEST(Scheduler, RespectsTheTokenBudgetAndSequenceCap) {
  Sim sim(400, 16, {4, 64});
  for (int i = 0; i < 12; ++i) sim.add(30 + 17 * i, 5 + i);
  sim.run();
  EXPECT_EQ(sim.finished.size(), 12u);
  EXPECT_EQ(sim.bm.num_used(), 0);
  EXPECT_EQ(sim.sched.preemptions(), 0u);
}

TEST(Scheduler, ChunksALongPromptByTheRemainingBudget) {
  Sim sim(100, 16, {8, 32});
  Sequence* s = sim.add(100, 2);
  std::vector<std::pair<int, int>> chunks;
  for (int i = 0; i < 4; ++i) {
    auto plan = sim.step();
    ASSERT_EQ(plan.size(), 1u);
    chunks.push_back({plan[0].start, plan[0].num_tokens});
    EXPECT_EQ(plan[0].needs_logits, i == 3);
  }
  EXPECT_EQ(chunks, (std::vector<std::pair<int, int>>{{0, 32}, {32, 32}, {64, 32}, {96, 4}}));
  EXPECT_EQ(s->num_computed, 100);
  auto plan = sim.step();  // the decode of the first generated token
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].start, 100);
  EXPECT_EQ(plan[0].num_tokens, 1);
}

TEST(Scheduler, DecodesGoFirstThenPrefillChunksThenAdmissions) {
  Sim sim(100, 16, {8, 10});
  Sequence* a = sim.add(5, 50);
  sim.step();  // a prefilled, now decodes
  Sequence* b = sim.add(40, 2);
  Sequence* c = sim.add(3, 2);
  auto plan = sim.step();
  ASSERT_EQ(plan.size(), 2u);  // a's decode, then b's first chunk takes the rest; c waits (budget)
  EXPECT_EQ(plan[0].seq, a);
  EXPECT_EQ(plan[0].num_tokens, 1);
  EXPECT_EQ(plan[1].seq, b);
  EXPECT_EQ(plan[1].num_tokens, 9);
  plan = sim.step();
  ASSERT_EQ(plan.size(), 2u);  // b's running prefill goes before c's admission
  EXPECT_EQ(plan[0].seq, a);
  EXPECT_EQ(plan[1].seq, b);
  EXPECT_EQ(plan[1].start, 9);
  EXPECT_EQ(sim.sched.num_waiting(), 1);
  (void)c;
  sim.run();
}

TEST(Scheduler, AdmitsFifoTheHeadIsNotOvertaken) {
  Sim sim(10, 4, {8, 100});  // 40 token slots
  sim.add(30, 3);            // 8 blocks
  sim.step();
  Sequence* big = sim.add(20, 1);   // needs 5 blocks: only 2 free
  Sequence* small = sim.add(2, 1);  // would fit, but must not overtake
  sim.step();
  EXPECT_FALSE(big->running);
  EXPECT_FALSE(small->running);
  sim.run();
  EXPECT_EQ(sim.finished, (std::vector<uint64_t>{0, 1, 2}));
}

TEST(Scheduler, PreemptsTheNewestAndRecomputesItLater) {
  Sim sim(6, 4, {8, 64});  // 24 slots
  Sequence* old_seq = sim.add(8, 12);   // grows to 19 slots
  Sequence* new_seq = sim.add(8, 12);
  bool saw_preemption = false;
  while (!sim.sched.empty()) {
    sim.step();
    if (sim.sched.preemptions() > 0 && !saw_preemption) {
      saw_preemption = true;
      EXPECT_TRUE(old_seq->running);  // the newest yields
      EXPECT_FALSE(new_seq->running);
      EXPECT_EQ(new_seq->num_computed, 0);
      EXPECT_TRUE(new_seq->table.blocks.empty());
      EXPECT_GT(int(new_seq->tokens.size()), new_seq->num_prompt_tokens);  // keeps what it generated
      ASSERT_FALSE(sim.sched.waiting().empty());
      EXPECT_EQ(sim.sched.waiting().front(), new_seq);
    }
    ASSERT_LT(sim.steps, 1000);
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_EQ(sim.finished, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(int(new_seq->tokens.size()), 20);
  // Its recompute covered prompt + generated tokens: generated ids follow the position rule.
  for (int p = 8; p < 20; ++p) EXPECT_EQ(new_seq->tokens[size_t(p)], 1000 + p);
  EXPECT_EQ(sim.bm.num_used(), 0);
}

TEST(Scheduler, PreemptedVictimsKeepTheirAgeOrder) {
  Sim sim(8, 2, {8, 64});  // 16 slots, 4 sequences of 3 prompt tokens, growing
  for (int i = 0; i < 4; ++i) sim.add(3, 6);
  sim.run();
  EXPECT_GT(sim.sched.preemptions(), 0u);
  EXPECT_EQ(sim.finished.size(), 4u);
  EXPECT_EQ(sim.finished.front(), 0u);  // the oldest is never the victim while others run
}

TEST(Scheduler, NoStarvationUnderAStreamOfArrivals) {
  Sim sim(64, 4, {4, 16});
  Sequence* first = sim.add(60, 20);
  for (int i = 0; i < 200 && !sim.sched.empty(); ++i) {
    sim.add(6, 3, 300);
    sim.step();
  }
  EXPECT_NE(std::find(sim.finished.begin(), sim.finished.end(), first->id), sim.finished.end());
  sim.run();
  EXPECT_EQ(sim.finished.size(), sim.seqs.size());
}

TEST(Scheduler, AdmissionTakesTheCachedPrefix) {
  Sim sim(32, 4, {8, 64}, /*caching=*/true);
  sim.add(18, 1);
  sim.run();
  Sequence* again = sim.add(18, 1);
  auto plan = sim.step();
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].start, 16);  // 4 full blocks cached, 2 tokens computed
  EXPECT_EQ(plan[0].num_tokens, 2);
  EXPECT_EQ(again->num_cached_tokens, 16);
  EXPECT_EQ(sim.bm.prefix_hits(), 16u);
  Sequence* exact = sim.add(16, 1);  // 16 tokens: at most 15 from the cache, so 3 blocks
  plan = sim.step();
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].start, 12);
  EXPECT_EQ(exact->num_cached_tokens, 12);
  Sequence* echo = sim.add(18, 1);
  echo->use_prefix_cache = false;  // needs every position's logits
  plan = sim.step();
  EXPECT_EQ(plan[0].start, 0);
  sim.run();
}

TEST(Scheduler, RemoveReleasesRunningAndWaiting) {
  Sim sim(10, 4, {1, 64});
  Sequence* a = sim.add(10, 5);
  Sequence* b = sim.add(10, 5);
  sim.step();
  EXPECT_TRUE(a->running);
  EXPECT_EQ(sim.sched.num_waiting(), 1);
  sim.sched.remove(b);
  EXPECT_EQ(sim.sched.num_waiting(), 0);
  sim.sched.remove(a);
  EXPECT_TRUE(sim.sched.empty());
  EXPECT_EQ(sim.bm.num_used(), 0);
}
