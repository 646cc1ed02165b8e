// Speculative decoding (n-gram drafts) through the Engine on the real CPU backend: every request's
// token ids and logprobs are bit-identical with speculation on and off, greedy and seeded, alone
// and batched, across token budgets (chunked prefill), prefix cache off / on / warm, forced
// preemption, K = 1, 3, 5, and stop tokens / min_tokens landing inside a verification. The
// repetitive prompts get most drafts accepted (so the comparison is not vacuous), and a control
// shows that a verification drawing its randomness at a wrong position is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/spec_decode.h"
#include "model/make_model.h"
#include "support/engine_runs.h"
#include "support/paths.h"

using namespace verbatim;

namespace {

// ----- n-gram proposer and throttle, on their own ----------------------------------------------

TEST(NgramProposer, MostRecentLongestMatchWithOverlappingCopy) {
  // "1 2 3 9 | 1 2 3 7 | ... 1 2 3": the 3-gram "1 2 3" last occurred before 7.
  std::vector<int32_t> t = {1, 2, 3, 9, 1, 2, 3, 7, 5, 1, 2, 3};
  EXPECT_EQ(propose_ngram(t, 1, 3, 2), (std::vector<int32_t>{7, 5}));
  // Longest n first: "5 1 2 3" never occurred before, so n = 3 decides.
  EXPECT_EQ(propose_ngram(t, 1, 4, 1), (std::vector<int32_t>{7}));
  // A loop of period 2 still yields k drafts: the copy runs on into its own proposal.
  std::vector<int32_t> loop = {4, 8, 6, 8, 6, 8, 6};
  EXPECT_EQ(propose_ngram(loop, 1, 2, 5), (std::vector<int32_t>{8, 6, 8, 6, 8}));
  // Nothing matches: no draft. n below n_min is never tried.
  EXPECT_TRUE(propose_ngram(std::vector<int32_t>{1, 2, 3, 4}, 1, 3, 4).empty());
  EXPECT_TRUE(propose_ngram(std::vector<int32_t>{5, 1, 2, 1}, 2, 3, 4).empty());
  EXPECT_EQ(propose_ngram(std::vector<int32_t>{5, 1, 2, 1}, 1, 3, 2), (std::vector<int32_t>{2, 1}));
  EXPECT_TRUE(propose_ngram(std::vector<int32_t>{7}, 1, 3, 4).empty());
  EXPECT_TRUE(propose_ngram(t, 1, 3, 0).empty());
}

// The proposer against a brute-force reading of its definition, on short sequences over tiny
// alphabets (many matches, overlaps, edge lengths, bad arguments).
TEST(NgramProposer, EqualsBruteForceOnRandomSequences) {
  auto brute = [](const std::vector<int32_t>& t, int n_min, int n_max, int k) {
    std::vector<int32_t> ext = t, draft;
    const int len = int(t.size());
    if (k <= 0 || n_min < 1 || n_max < n_min) return draft;
    for (int n = n_max; n >= n_min; --n)
      for (int j = len - n - 1; j >= 0 && n <= len - 1; --j) {
        if (!std::equal(t.begin() + j, t.begin() + j + n, t.end() - n)) continue;
        for (int i = 0; i < k; ++i) {
          const int32_t next = ext[size_t(j + n + i)];  // may be a token proposed just before
          ext.push_back(next);
          draft.push_back(next);
        }
        return draft;
      }
    return draft;
  };
  int nonempty = 0;
  for (uint64_t it = 0; it < 20000; ++it) {
    auto u = [&](int i, int m) { return int(sample_uniform(77, it, i) * float(m)); };
    std::vector<int32_t> t(size_t(u(0, 20)));
    for (size_t i = 0; i < t.size(); ++i) t[i] = u(int(10 + i), 1 + u(1, 4));
    const int n_min = u(2, 4), n_max = u(3, 5), k = u(4, 7) - 1;
    const auto got = propose_ngram(t, n_min, n_max, k);
    ASSERT_EQ(got, brute(t, n_min, n_max, k)) << "case " << it;
    nonempty += !got.empty();
  }
  EXPECT_GT(nonempty, 2000);
}

TEST(SpecThrottle, DraftLengthFollowsAcceptanceAndPausesGrow) {
  SpecThrottle s;
  EXPECT_EQ(s.draft_len(5), 1);  // a first probe: one draft
  s.record(1, 1);
  EXPECT_EQ(s.draft_len(5), 3);
  s.record(3, 3);
  EXPECT_EQ(s.draft_len(5), 5);  // 7, capped at K
  EXPECT_EQ(s.draft_len(2), 2);
  s.record(5, 0);
  EXPECT_EQ(s.draft_len(5), 1);  // after a rejection: back to one draft
  s.record(1, 1);
  EXPECT_FALSE(s.paused());      // a window of 4 verifications, 5 of 10 accepted: it passes

  // Four verifications with nothing accepted: paused for kFirstPause decode steps.
  for (int i = 0; i < SpecThrottle::kWindowSteps; ++i) {
    ASSERT_EQ(s.draft_len(5), i == 0 ? 3 : 1);
    s.record(i == 0 ? 3 : 1, 0);
  }
  EXPECT_TRUE(s.paused());
  int paused = 0;
  while (s.draft_len(5) == 0) ++paused;
  EXPECT_EQ(paused, SpecThrottle::kFirstPause);
  for (int i = 0; i < SpecThrottle::kWindowSteps; ++i) s.record(1, 0);
  paused = 0;
  while (s.draft_len(5) == 0) ++paused;
  EXPECT_EQ(paused, 2 * SpecThrottle::kFirstPause);  // the second failing window pauses longer
  for (int i = 0; i < SpecThrottle::kWindowSteps; ++i) s.record(3, 3);
  EXPECT_FALSE(s.paused());
  EXPECT_EQ(s.next_pause(), SpecThrottle::kFirstPause);  // a good window resets the pause
  s.record(0, 0);                                        // steps without drafts do not count
  EXPECT_FALSE(s.paused());
}

// Drafts ride on a decode only with the budget and cache-free blocks left after decodes, prefill
// chunks and admissions; the blocks only rejected drafts used go back; only full blocks of
// accepted tokens reach the prefix cache.
TEST(SpecScheduler, DraftsTakeLeftoversAndRejectedBlocksGoBack) {
  BlockManager bm(/*num_blocks=*/6, /*block_size=*/4, /*enable_prefix_caching=*/true);
  Scheduler sch({/*max_num_seqs=*/4, /*max_num_batched_tokens=*/8}, bm);
  Sequence a;
  a.id = 1;
  a.tokens = {10, 11, 12, 13, 14, 15, 16};
  a.num_prompt_tokens = 7;
  sch.add(&a);
  auto plan = sch.schedule();
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].num_draft, 0);
  sch.complete(plan);
  a.tokens.push_back(17);  // decoding now: position 7 is next, in block 1
  a.draft = {18, 19, 20, 21, 22};

  Sequence b;
  b.id = 2;
  b.tokens = {30, 31, 32};
  b.num_prompt_tokens = 3;
  sch.add(&b);
  plan = sch.schedule();  // a's decode (1), b's prompt (3), then a's drafts from the 4 left
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].seq, &a);
  EXPECT_EQ(plan[0].num_tokens, 1 + 4);
  EXPECT_EQ(plan[0].num_draft, 4);
  EXPECT_EQ(plan[1].seq, &b);
  EXPECT_EQ(plan[1].num_tokens, 3);
  EXPECT_EQ(a.table.blocks.size(), 3u);  // positions 0..11
  // Every draft rejected: the step emits one token (the target's choice at position 8).
  plan[0].num_tokens = 1;
  a.tokens.push_back(40);
  b.tokens.push_back(41);
  sch.complete(plan);
  EXPECT_EQ(a.num_computed, 8);
  EXPECT_EQ(a.table.blocks.size(), 3u);  // position 8 (the next to compute) lives in block 2
  EXPECT_EQ(bm.num_cached_blocks(), 2);  // a's two full blocks of real tokens, nothing past them
  a.tokens.push_back(42);  // pretend the next step emitted one more plainly: now rejecting 4 drafts
  a.num_computed = 9;
  a.draft = {1, 2, 3, 4};
  b.draft.clear();
  plan = sch.schedule();
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].num_draft, 4);         // positions 10..13: block 3 taken
  EXPECT_EQ(a.table.blocks.size(), 4u);
  plan[0].num_tokens = 1;
  a.tokens.push_back(43);
  b.tokens.push_back(44);
  sch.complete(plan);
  EXPECT_EQ(a.table.blocks.size(), 3u);  // block 3 held only rejected drafts: released
  EXPECT_EQ(bm.num_used(), 3 + 1);

  // No free block: drafts get only the room left in a's last block (position 11), nobody is
  // preempted and no cached block is evicted for them.
  sch.remove(&b);
  BlockTable hog;
  ASSERT_TRUE(bm.ensure_capacity(hog, bm.num_free_uncached() * 4));
  const int cached = bm.num_cached_blocks();
  a.draft = {5, 6, 7};
  plan = sch.schedule();
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].num_tokens, 2);
  EXPECT_EQ(plan[0].num_draft, 1);
  EXPECT_EQ(sch.preemptions(), 0u);
  EXPECT_EQ(bm.num_cached_blocks(), cached);
  bm.release(hog);
  sch.remove(&a);
  EXPECT_EQ(bm.num_used(), 0);
}

// ----- the engine -------------------------------------------------------------------------------

// Outcome, EngineRequest, drain, run_together, random_ids, repeated_ids: tests/support/engine_runs.h
// (shared with the GPU matrix, tests/cuda_invariance_test.cpp).
using test::Outcome;
using Request = test::EngineRequest;
using test::random_ids;
using test::repeated_ids;
using test::run_together;

// The make-model tiny shape (real 151,936-token vocabulary), made once per test process. Init std
// 0.05 (the real shapes' default) rather than tiny's 0.1: greedy decoding then loops, as
// repetitive text does, instead of wandering over 151,936 ids.
std::string made_model_dir() {
  static std::string dir = [] {
    MakeModelOptions o;
    o.arch = "tiny";
    o.seed = 11;
    o.init_std = 0.05;
    o.dtype = DType::BF16;
    o.out_dir = test::temp_dir("spec-make-model");
    o.copy_tokenizer = false;
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

std::string model_dir(const std::string& name) { return name == "make-model-tiny" ? made_model_dir() : test::fixture(name); }

// A verification that draws a draft row's randomness one position too far: the bug the
// bit-identity comparison must catch. Rows of one sequence after its first sampled row are the
// draft rows (without speculation a sequence has at most one sampled row per step).
class WrongRngPositionBackend : public Backend {
 public:
  explicit WrongRngPositionBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  void allocate_kv(int n, int bs) override { inner_->allocate_kv(n, bs); }
  size_t kv_block_bytes(int bs) const override { return inner_->kv_block_bytes(bs); }
  void forward_logits(const ForwardBatch& b, float* logits) override { inner_->forward_logits(b, logits); }
  void forward_sample(const ForwardBatch& b, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override {
    std::vector<SampleSpec> wrong = specs;
    for (size_t i = 1; i < wrong.size(); ++i)
      if (b.token_seq[size_t(b.logit_rows[i])] == b.token_seq[size_t(b.logit_rows[i - 1])] &&
          wrong[i].score_token < 0 && wrong[i - 1].score_token < 0)
        wrong[i].position += 1;
    inner_->forward_sample(b, wrong, out);
  }
  const ModelConfig& config() const override { return inner_->config(); }
  DType dtype() const override { return inner_->dtype(); }
  std::string device_name() const override { return inner_->device_name(); }
  std::string kernel_config() const override { return inner_->kernel_config(); }

 private:
  std::unique_ptr<Backend> inner_;
};

std::unique_ptr<Engine> make_engine(const std::string& model, EngineOptions opts, bool wrong_rng = false) {
  if (opts.num_kv_blocks == 0) opts.num_kv_blocks = 256;
  std::unique_ptr<Backend> be = make_cpu_backend(model_dir(model), DType::BF16);
  if (wrong_rng) be = std::make_unique<WrongRngPositionBackend>(std::move(be));
  return std::make_unique<Engine>(std::move(be), opts);
}

EngineOptions spec(int k, EngineOptions o = {}) {
  o.speculative = "ngram";
  o.num_speculative_tokens = k;
  o.ngram_min = 1;
  o.ngram_max = 4;
  return o;
}

// Each request alone in a fresh engine, prefix cache off.
std::vector<Outcome> run_alone(const std::string& model, const std::vector<Request>& reqs, EngineOptions o = {},
                               EngineStats* total = nullptr) {
  o.enable_prefix_caching = false;
  std::vector<Outcome> res;
  for (const Request& r : reqs) {
    auto e = make_engine(model, o);
    res.push_back(run_together(*e, {r})[0]);
    if (total) {
      total->spec_draft_tokens += e->stats().spec_draft_tokens;
      total->spec_accepted_tokens += e->stats().spec_accepted_tokens;
    }
  }
  return res;
}

// 12 requests (6 for the 151,936-id vocabulary, whose lm_head and sampling dominate the run time):
// kinds cycle repetitive / repetitive then a random tail / random; greedy and seeded alternate,
// the seeded ones at temperatures 0.15 / 0.3 / 0.6 / 0.9 (low ones loop, so their drafts get
// accepted too) with top-p / top-k / min-p; logprobs with top 2, the chosen one only, or none;
// min_tokens on some.
std::vector<Request> mixed_requests(int vocab, int max_tokens = 28) {
  const bool big = vocab > 10000;
  if (big) max_tokens = max_tokens * 3 / 4;
  std::vector<Request> reqs;
  for (int r = 0; r < (big ? 6 : 12); ++r) {
    Request q;
    const uint64_t st = uint64_t(r);
    if (r % 3 == 0) q.prompt = repeated_ids(vocab, st, 3 + r % 5, 30 + r);
    else if (r % 3 == 1) {
      q.prompt = repeated_ids(vocab, st, 4 + r % 3, 24);
      for (int32_t t : random_ids(vocab, 100 + st, 5 + r)) q.prompt.push_back(t);
    } else {
      q.prompt = random_ids(vocab, 200 + st, 9 + 3 * r);
    }
    q.params.max_tokens = max_tokens + r % 7;
    q.params.logprobs = r % 4 == 0 ? 2 : (r % 4 == 1 ? 0 : -1);
    q.params.min_tokens = r % 5 == 0 ? 3 : 0;
    if (r % 2 == 0) {
      q.params.temperature = 0.0f;
    } else {
      static const float kTemps[] = {0.15f, 0.3f, 0.6f, 0.9f};
      q.params.temperature = kTemps[(r / 2) % 4];
      q.params.top_p = r % 3 == 1 ? 0.9f : 1.0f;
      q.params.top_k = r % 5 == 1 ? 40 : 0;
      q.params.min_p = r % 7 == 3 ? 0.05f : 0.0f;
      q.params.seed = 1000 + st;
    }
    reqs.push_back(std::move(q));
  }
  return reqs;
}

int vocab_of(const std::string& model) { return make_cpu_backend(model_dir(model), DType::BF16)->config().vocab_size; }

void expect_same(const std::vector<Outcome>& want, const std::vector<Outcome>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i] == got[i]) << what << ": request " << i << " differs (tokens " << want[i].tokens.size()
                                   << " vs " << got[i].tokens.size() << ") " << got[i].error;
    EXPECT_TRUE(got[i].error.empty()) << what << ": " << got[i].error;
  }
}

double acceptance(const EngineStats& s) {
  return s.spec_draft_tokens ? double(s.spec_accepted_tokens) / double(s.spec_draft_tokens) : 0.0;
}

class SpecDecode : public ::testing::TestWithParam<std::string> {};

// Speculation off, each request alone, is the reference; speculation on must match it bit for bit
// alone (K = 1, 3, 5), batched across budgets and prefix-cache states, and warm.
TEST_P(SpecDecode, OnEqualsOffAloneBatchedAcrossBudgetsAndCache) {
  const std::string model = GetParam();
  const auto reqs = mixed_requests(vocab_of(model));
  const auto off = run_alone(model, reqs);
  for (const Outcome& o : off) ASSERT_TRUE(o.error.empty()) << o.error;

  for (int k : {1, 3, 5}) {
    EngineStats st;
    expect_same(off, run_alone(model, reqs, spec(k), &st), "alone K " + std::to_string(k));
    EXPECT_GT(st.spec_draft_tokens, 0u) << "K " << k;
    EXPECT_GT(st.spec_accepted_tokens, 0u) << "K " << k;
  }
  for (int mnbt : {16, 64, 2048}) {
    for (bool cache : {false, true}) {
      EngineOptions o = spec(3);
      o.max_num_batched_tokens = mnbt;
      o.enable_prefix_caching = cache;
      auto e = make_engine(model, o);
      const std::string what = "together mnbt " + std::to_string(mnbt) + (cache ? " cache on" : " cache off");
      expect_same(off, run_together(*e, reqs), what);
      EXPECT_GT(e->stats().spec_accepted_tokens, 0u) << what;
      EXPECT_EQ(e->stats().kv_blocks_used, 0) << what;
      if (!cache) continue;
      const uint64_t hits = e->stats().prefix_hits;
      expect_same(off, run_together(*e, reqs), what + " warm");
      EXPECT_GT(e->stats().prefix_hits, hits) << what;
    }
  }
}

// The blocks speculation commits during decode hold exactly the bits a recompute writes: prompts
// that extend earlier requests by their outputs hit those blocks (warm), and still match alone.
TEST_P(SpecDecode, BlocksCommittedDuringVerificationServeLaterPrompts) {
  const std::string model = GetParam();
  auto reqs = mixed_requests(vocab_of(model), 40);
  reqs.resize(6);
  const auto off = run_alone(model, reqs);
  std::vector<Request> ext;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request q = reqs[i];
    q.prompt.insert(q.prompt.end(), off[i].tokens.begin(), off[i].tokens.end() - 1);
    q.params.max_tokens = 12;
    q.params.min_tokens = 0;
    ext.push_back(std::move(q));
  }
  const auto ext_off = run_alone(model, ext);
  EngineOptions o = spec(5);
  o.block_size = 4;  // small blocks: many of them fill up (and get committed) during verification
  auto e = make_engine(model, o);
  expect_same(off, run_together(*e, reqs), "first pass");
  const uint64_t hits = e->stats().prefix_hits;
  expect_same(ext_off, run_together(*e, ext), "extended prompts, warm");
  EXPECT_GT(e->stats().prefix_hits - hits, uint64_t(6 * 30)) << "the extensions were served from the cache";
}

TEST_P(SpecDecode, ForcedPreemptionRecomputesTheSameBits) {
  const std::string model = GetParam();
  const auto reqs = mixed_requests(vocab_of(model));
  const auto off = run_alone(model, reqs);
  for (bool cache : {false, true}) {
    EngineOptions o = spec(5);
    o.num_kv_blocks = 12;  // 192 slots: about three requests' worth, so running ones get preempted
    o.max_num_batched_tokens = 64;
    o.enable_prefix_caching = cache;
    auto e = make_engine(model, o);
    expect_same(off, run_together(*e, reqs), cache ? "preemption, cache on" : "preemption, cache off");
    EXPECT_GT(e->stats().preemptions, 0u);
    EXPECT_GT(e->stats().spec_accepted_tokens, 0u);
    EXPECT_EQ(e->stats().kv_blocks_used, 0);
  }
}

// Stop tokens and min_tokens apply token by token: a stop id that a verification accepts ends the
// request right there, exactly where the plain decode ends it.
TEST_P(SpecDecode, StopTokensAndMinTokensInsideAVerification) {
  const std::string model = GetParam();
  auto reqs = mixed_requests(vocab_of(model));
  const auto base = run_alone(model, reqs);
  std::vector<Request> stops;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request q = reqs[i];
    q.params.stop_token_ids = {base[i].tokens[8]};
    q.params.min_tokens = i % 2 ? 0 : 5;
    stops.push_back(std::move(q));
  }
  const auto off = run_alone(model, stops);
  int stopped = 0;
  for (const Outcome& o : off) stopped += o.reason == FinishReason::Stop;
  EXPECT_GE(stopped, int(stops.size()) / 2);
  for (int k : {1, 5}) expect_same(off, run_alone(model, stops, spec(k)), "stops alone K " + std::to_string(k));
  auto e = make_engine(model, spec(3));
  expect_same(off, run_together(*e, stops), "stops together");
}

// Prompts that repeat a token (or a pair): greedy outputs loop and most drafts are accepted.
TEST_P(SpecDecode, RepetitivePromptsAcceptMostDrafts) {
  const std::string model = GetParam();
  const int vocab = vocab_of(model);
  std::vector<Request> reqs;
  for (int r = 0; r < 8; ++r) {
    Request q;
    q.prompt = repeated_ids(vocab, uint64_t(50 + r), 1 + r % 2, 36);  // a token, or a pair, repeated
    q.params.temperature = 0.0f;
    q.params.max_tokens = 48;
    reqs.push_back(std::move(q));
  }
  const auto off = run_alone(model, reqs);
  auto e = make_engine(model, spec(5));
  expect_same(off, run_together(*e, reqs), "repetitive, greedy");
  const EngineStats s = e->stats();
  EXPECT_GT(acceptance(s), 0.5) << s.spec_accepted_tokens << " of " << s.spec_draft_tokens;
  // Each accepted draft saved a step: fewer steps than tokens.
  EXPECT_LT(s.steps + s.spec_accepted_tokens, s.generation_tokens + 20);
  EXPECT_GT(s.spec_accepted_tokens, s.generation_tokens / 3);
}

// The control: a verification that keys a draft row's random draw one position off changes
// seeded outputs (greedy ones cannot notice), so the equality above is not vacuous.
TEST_P(SpecDecode, ControlWrongRngPositionInVerificationIsCaught) {
  const std::string model = GetParam();
  const auto reqs = mixed_requests(vocab_of(model));
  const auto off = run_alone(model, reqs);
  auto bad = make_engine(model, spec(5), /*wrong_rng=*/true);
  const auto got = run_together(*bad, reqs);
  int seeded_differ = 0, greedy_differ = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].params.temperature > 0) seeded_differ += !(got[i] == off[i]);
    else greedy_differ += !(got[i] == off[i]);
  }
  EXPECT_GE(seeded_differ, 1);
  EXPECT_EQ(greedy_differ, 0);
  // The same wrapper without speculation is harmless (one sampled row per sequence and step).
  auto plain = make_engine(model, {}, /*wrong_rng=*/true);
  expect_same(off, run_together(*plain, reqs), "wrapper, speculation off");
}

INSTANTIATE_TEST_SUITE_P(Models, SpecDecode,
                         ::testing::Values("qwen3-tiny-tied", "qwen3-tiny-untied", "make-model-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(SpecDecodeOptions, BadOptionsAreRejected) {
  auto expect_error = [](EngineOptions o, const std::string& fragment) {
    try {
      make_engine("qwen3-tiny-tied", o);
      ADD_FAILURE() << "accepted " << fragment;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  EngineOptions o;
  o.speculative = "eagle";
  expect_error(o, "unknown speculative method 'eagle'");
  o = spec(0);
  expect_error(o, "num_speculative_tokens");
  o = spec(3);
  o.ngram_min = 3;
  o.ngram_max = 2;
  expect_error(o, "ngram_max");
  o.speculative = "none";
  EXPECT_NO_THROW(make_engine("qwen3-tiny-tied", o));
}

}  // namespace
