// The engine on the real CPU backend and the tiny Qwen3 fixtures: every request's token ids and
// logprobs are bit-identical whatever it shares a step with (alone vs 18 at once), whatever the
// token budget (chunked prefill), the prefix cache (off / on / warm), the block size, and forced
// preemption with recompute. Controls show the comparisons are not vacuous.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "engine/fault_backend.h"
#include "engine/sampler.h"
#include "support/paths.h"

using namespace verbatim;

namespace {

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<uint32_t> logprob_bits;  // chosen token's logprob, then each top entry's id and bits
  std::vector<uint32_t> prompt_lp_bits;
  FinishReason reason = FinishReason::None;
  int num_cached_tokens = 0;
  std::string error;
  bool operator==(const Outcome& o) const {
    return tokens == o.tokens && logprob_bits == o.logprob_bits && prompt_lp_bits == o.prompt_lp_bits &&
           reason == o.reason;
  }
};

void append_bits(std::vector<uint32_t>& out, const TokenLogprob& t) {
  out.push_back(uint32_t(t.token));
  out.push_back(f32_bits(t.logprob));
  for (const auto& [id, lp] : t.top) {
    out.push_back(uint32_t(id));
    out.push_back(f32_bits(lp));
  }
}

struct Request {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

std::string model_dir(const std::string& name) { return test::fixture(name); }

std::unique_ptr<Engine> make_engine(const std::string& model, EngineOptions opts) {
  if (opts.num_kv_blocks == 0) opts.num_kv_blocks = 256;
  return std::make_unique<Engine>(make_cpu_backend(model_dir(model), DType::BF16), opts);
}

// Steps until idle, collecting every update.
void drain(Engine& e, std::map<uint64_t, Outcome>& out) {
  for (int guard = 0; e.has_work(); ++guard) {
    ASSERT_LT(guard, 100000) << "engine never went idle";
    for (const RequestUpdate& u : e.step()) {
      Outcome& o = out[u.id];
      for (const TokenLogprob& t : u.tokens) {
        o.tokens.push_back(t.token);
        append_bits(o.logprob_bits, t);
      }
      for (const TokenLogprob& t : u.prompt_logprobs) append_bits(o.prompt_lp_bits, t);
      if (u.finished) {
        EXPECT_EQ(o.reason, FinishReason::None) << "two final updates";
        o.reason = u.reason;
        o.num_cached_tokens = u.num_cached_tokens;
        o.error = u.error;
      }
    }
  }
}

// All requests added at once, in order; outcomes in request order.
std::vector<Outcome> run_together(Engine& e, const std::vector<Request>& reqs) {
  std::vector<uint64_t> ids;
  for (const Request& r : reqs) ids.push_back(e.add(r.prompt, r.params));
  std::map<uint64_t, Outcome> out;
  drain(e, out);
  std::vector<Outcome> res;
  for (uint64_t id : ids) res.push_back(out[id]);
  return res;
}

// Each request alone in a fresh engine: no cache, whole prompt in one step.
std::vector<Outcome> run_alone(const std::string& model, const std::vector<Request>& reqs, int block_size = 16) {
  EngineOptions o;
  o.enable_prefix_caching = false;
  o.block_size = block_size;
  std::vector<Outcome> res;
  for (const Request& r : reqs) {
    auto e = make_engine(model, o);
    auto one = run_together(*e, {r});
    res.push_back(one[0]);
  }
  return res;
}

// 18 prompts: a 37-token common prefix (so blocks of 16 and 32 both have shared full blocks), then
// tails of varied length; half greedy, half seeded sampling with filters; logprobs with top 3.
std::vector<Request> shared_prefix_requests(int vocab, uint64_t seed_base = 100) {
  std::vector<int32_t> prefix;
  for (int i = 0; i < 37; ++i) prefix.push_back(int32_t(sample_uniform(1, 2, i) * float(vocab)));
  std::vector<Request> reqs;
  for (int r = 0; r < 18; ++r) {
    Request q;
    q.prompt = prefix;
    const int tail = 1 + (r * 7) % 41;
    for (int i = 0; i < tail; ++i) q.prompt.push_back(int32_t(sample_uniform(3, uint64_t(r), i) * float(vocab)));
    q.params.max_tokens = 10 + r % 5;
    q.params.logprobs = 3;
    if (r % 2 == 0) {
      q.params.temperature = 0.0f;
    } else {
      q.params.temperature = 0.9f;
      q.params.top_p = r % 3 == 0 ? 0.9f : 1.0f;
      q.params.top_k = r % 5 == 0 ? 40 : 0;
      q.params.min_p = r % 7 == 0 ? 0.05f : 0.0f;
      q.params.seed = seed_base + uint64_t(r);
    }
    reqs.push_back(std::move(q));
  }
  return reqs;
}

void expect_same(const std::vector<Outcome>& want, const std::vector<Outcome>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i] == got[i]) << what << ": request " << i << " differs (tokens " << want[i].tokens.size()
                                   << " vs " << got[i].tokens.size() << ")";
    EXPECT_EQ(got[i].reason, FinishReason::Length) << what << ": request " << i << " " << got[i].error;
  }
}

class EngineInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  int vocab() { return make_cpu_backend(model_dir(GetParam()), DType::BF16)->config().vocab_size; }
};

TEST_P(EngineInvariance, AloneEqualsTogetherAcrossBudgetsCacheAndBlockSizes) {
  const std::string model = GetParam();
  const auto reqs = shared_prefix_requests(vocab());
  const auto alone = run_alone(model, reqs);
  for (size_t i = 0; i < alone.size(); ++i) ASSERT_EQ(int(alone[i].tokens.size()), reqs[i].params.max_tokens);

  for (int block_size : {16, 32}) {
    for (int mnbt : {16, 64, 2048}) {
      for (bool cache : {false, true}) {
        EngineOptions o;
        o.block_size = block_size;
        o.max_num_batched_tokens = mnbt;
        o.enable_prefix_caching = cache;
        auto e = make_engine(model, o);
        const std::string what = "bs " + std::to_string(block_size) + " mnbt " + std::to_string(mnbt) +
                                 (cache ? " cache on" : " cache off");
        expect_same(alone, run_together(*e, reqs), what);
        if (!cache) continue;
        // Warm: the same requests again hit what the first pass cached, and still match.
        const uint64_t hits_before = e->stats().prefix_hits;
        const auto warm = run_together(*e, reqs);
        expect_same(alone, warm, what + " warm");
        EXPECT_GT(e->stats().prefix_hits, hits_before) << what;
        int served = 0;
        for (const Outcome& w : warm) served += w.num_cached_tokens;
        EXPECT_GT(served, 18 * 32) << what << ": warm requests were served from the cache";
      }
    }
  }
}

TEST_P(EngineInvariance, ForcedPreemptionRecomputesTheSameBits) {
  const std::string model = GetParam();
  const auto reqs = shared_prefix_requests(vocab());
  const auto alone = run_alone(model, reqs);
  for (bool cache : {false, true}) {
    EngineOptions o;
    o.num_kv_blocks = 12;  // 192 slots: about three requests' worth, so running ones get preempted
    o.max_num_batched_tokens = 64;
    o.enable_prefix_caching = cache;
    auto e = make_engine(model, o);
    expect_same(alone, run_together(*e, reqs), cache ? "preemption, cache on" : "preemption, cache off");
    EXPECT_GT(e->stats().preemptions, 0u);
    EXPECT_EQ(e->stats().kv_blocks_used, 0);
  }
}

TEST_P(EngineInvariance, ADifferentSeedChangesSampledOutputs) {
  const std::string model = GetParam();
  const auto a = shared_prefix_requests(vocab(), 100);
  const auto b = shared_prefix_requests(vocab(), 900);
  EngineOptions o;
  auto e = make_engine(model, o);
  const auto ra = run_together(*e, a), rb = run_together(*e, b);
  int sampled_differ = 0, greedy_differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].params.temperature > 0) sampled_differ += ra[i].tokens != rb[i].tokens;
    else greedy_differ += ra[i].tokens != rb[i].tokens;
  }
  EXPECT_GE(sampled_differ, 7);  // of 9 sampled requests
  EXPECT_EQ(greedy_differ, 0);
  // And the engine's seed is used when a request has none.
  std::vector<Request> unseeded = {a[1]};
  unseeded[0].params.seed.reset();
  EngineOptions s1, s2;
  s1.seed = 1;
  s2.seed = 2;
  auto e1 = make_engine(model, s1), e2 = make_engine(model, s2), e1b = make_engine(model, s1);
  const auto u1 = run_together(*e1, unseeded), u2 = run_together(*e2, unseeded), u1b = run_together(*e1b, unseeded);
  EXPECT_TRUE(u1[0] == u1b[0]);
  EXPECT_NE(u1[0].tokens, u2[0].tokens);
}

TEST_P(EngineInvariance, PromptLogprobsMatchAloneAndTheDecodeLogprob) {
  const std::string model = GetParam();
  auto reqs = shared_prefix_requests(vocab());
  reqs.resize(6);
  for (Request& r : reqs) {
    r.params.prompt_logprobs = true;
    r.params.max_tokens = 4;
  }
  const auto alone = run_alone(model, reqs);
  for (size_t i = 0; i < reqs.size(); ++i)  // token, logprob, 3 x (id, logprob) per prompt token
    EXPECT_EQ(alone[i].prompt_lp_bits.size(), (reqs[i].prompt.size() - 1) * 8);
  EngineOptions o;
  o.max_num_batched_tokens = 16;
  auto e = make_engine(model, o);
  run_together(*e, reqs);  // fills the cache
  expect_same(alone, run_together(*e, reqs), "echo, warm cache, mnbt 16");

  // Scoring prompt + [first generated token] reports, for that token, the bits decode reported.
  Request ext = reqs[0];
  ext.prompt.push_back(alone[0].tokens[0]);
  const auto scored = run_alone(model, {ext});
  const size_t n = scored[0].prompt_lp_bits.size();
  std::vector<uint32_t> last(scored[0].prompt_lp_bits.begin() + long(n - 8), scored[0].prompt_lp_bits.end());
  std::vector<uint32_t> first_decode(alone[0].logprob_bits.begin(), alone[0].logprob_bits.begin() + 8);
  EXPECT_EQ(last, first_decode);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineInvariance, ::testing::Values("qwen3-tiny-tied", "qwen3-tiny-untied"));

// ---------------------------------------------------------------------------------------------

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  return p;
}

TEST(Engine, StopTokensEndWithStopAndMinTokensHoldsThemBack) {
  auto e = make_engine("qwen3-tiny-tied", {});
  const std::vector<int32_t> prompt = {5, 17, 99, 3, 250, 7};
  const auto base = run_together(*e, {{prompt, greedy(12)}})[0];
  ASSERT_EQ(base.tokens.size(), 12u);
  EXPECT_EQ(base.reason, FinishReason::Length);
  const int32_t stop = base.tokens[3];
  size_t first = 0;
  while (base.tokens[first] != stop) ++first;

  SamplingParams p = greedy(12);
  p.stop_token_ids = {stop};
  const auto stopped = run_together(*e, {{prompt, p}})[0];
  EXPECT_EQ(stopped.reason, FinishReason::Stop);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(base.tokens.begin(), base.tokens.begin() + long(first) + 1));

  p.min_tokens = int(first) + 1;  // the stop id is banned up to and including its first position
  const auto held = run_together(*e, {{prompt, p}})[0];
  ASSERT_GT(held.tokens.size(), first);
  EXPECT_EQ(std::vector<int32_t>(held.tokens.begin(), held.tokens.begin() + long(first)),
            std::vector<int32_t>(base.tokens.begin(), base.tokens.begin() + long(first)));
  EXPECT_NE(held.tokens[first], stop);
  for (size_t i = 0; i + 1 < held.tokens.size(); ++i) EXPECT_TRUE(i < first || held.tokens[i] != stop);
}

// A copy of the tied fixture whose config.json names `eos` as its end-of-sequence token.
std::string fixture_with_eos(int32_t eos) {
  namespace fs = std::filesystem;
  const std::string dir = test::temp_dir("engine-eos");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::copy_file(model_dir("qwen3-tiny-tied") + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
  std::ifstream in(dir + "/config.json");
  std::stringstream text;
  text << in.rdbuf();
  in.close();
  const std::string patched =
      std::regex_replace(text.str(), std::regex("\"eos_token_id\": null"), "\"eos_token_id\": " + std::to_string(eos));
  EXPECT_NE(patched, text.str());
  std::ofstream(dir + "/config.json") << patched;
  return dir;
}

TEST(Engine, EosEndsWithStopUnlessIgnored) {
  const std::vector<int32_t> prompt = {5, 17, 99, 3, 250, 7};
  auto plain = make_engine("qwen3-tiny-tied", {});
  const auto base = run_together(*plain, {{prompt, greedy(12)}})[0];
  const int32_t eos = base.tokens[4];
  size_t first = 0;
  while (base.tokens[first] != eos) ++first;

  EngineOptions o;
  o.num_kv_blocks = 64;
  Engine e(make_cpu_backend(fixture_with_eos(eos), DType::BF16), o);
  ASSERT_EQ(e.backend().config().eos_token_ids, std::vector<int32_t>{eos});
  const auto stopped = run_together(e, {{prompt, greedy(12)}})[0];
  EXPECT_EQ(stopped.reason, FinishReason::Stop);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(base.tokens.begin(), base.tokens.begin() + long(first) + 1));

  SamplingParams ignore = greedy(12);
  ignore.ignore_eos = true;
  const auto ignored = run_together(e, {{prompt, ignore}})[0];
  EXPECT_EQ(ignored.reason, FinishReason::Length);
  EXPECT_EQ(ignored.tokens, base.tokens);

  SamplingParams held = greedy(12);
  held.min_tokens = int(first) + 1;
  const auto out = run_together(e, {{prompt, held}})[0];
  ASSERT_GT(out.tokens.size(), first);
  EXPECT_NE(out.tokens[first], eos);  // banned until min_tokens
}

TEST(Engine, AbortFreesBlocksAndReportsAbort) {
  EngineOptions o;
  o.max_num_seqs = 1;
  auto e = make_engine("qwen3-tiny-tied", o);
  const uint64_t running = e->add({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, greedy(50));
  const uint64_t waiting = e->add({4, 5, 6}, greedy(50));
  e->step();
  e->step();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().waiting, 1);
  e->abort(running);
  e->abort(waiting);
  e->abort(12345);  // unknown: ignored
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  std::map<uint64_t, Outcome> out;
  drain(*e, out);
  EXPECT_EQ(out[running].reason, FinishReason::Abort);
  EXPECT_EQ(out[waiting].reason, FinishReason::Abort);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_FALSE(e->has_work());
}

// prompt_tokens (/metrics' prompt_tokens_total, the status line's prompt tok/s) counts prefills
// done, as vLLM's does: a request aborted while it waits was never processed and is not counted,
// nor is a prompt counted before its prefill has run.
TEST(Engine, PromptTokensCountPrefillsDoneNotArrivals) {
  EngineOptions o;
  o.max_num_seqs = 1;
  auto e = make_engine("qwen3-tiny-tied", o);
  const uint64_t running = e->add({1, 2, 3}, greedy(50));
  const uint64_t waiting = e->add({4, 5, 6, 7, 8}, greedy(50));
  EXPECT_EQ(e->stats().prompt_tokens, 0u);  // nothing has run yet
  e->step();
  e->step();
  EXPECT_EQ(e->stats().waiting, 1);
  EXPECT_EQ(e->stats().prompt_tokens, 3u);  // the running one's prefill, not the waiting one's
  e->abort(waiting);
  e->abort(running);
  std::map<uint64_t, Outcome> out;
  drain(*e, out);
  EXPECT_EQ(e->stats().prompt_tokens, 3u);
}

TEST(Engine, ReportsLengthCountsAndStats) {
  auto e = make_engine("qwen3-tiny-untied", {});
  const auto out = run_together(*e, {{{1, 2, 3}, greedy(7)}, {{9, 8}, greedy(1)}});
  EXPECT_EQ(out[0].tokens.size(), 7u);
  EXPECT_EQ(out[1].tokens.size(), 1u);
  EXPECT_EQ(out[0].reason, FinishReason::Length);
  EngineStats s = e->stats();
  EXPECT_EQ(s.prompt_tokens, 5u);
  EXPECT_EQ(s.generation_tokens, 8u);
  EXPECT_EQ(s.kv_blocks_total, 256);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running + s.waiting, 0);
  EXPECT_GT(s.steps, 0u);
  EXPECT_STREQ(finish_reason_name(FinishReason::Length), "length");
  EXPECT_EQ(finish_reason_name(FinishReason::None), nullptr);
}

TEST(Engine, ResetPrefixCacheEmptiesIt) {
  auto e = make_engine("qwen3-tiny-tied", {});
  std::vector<int32_t> prompt(40, 7);
  run_together(*e, {{prompt, greedy(2)}});
  run_together(*e, {{prompt, greedy(2)}});
  const uint64_t hits = e->stats().prefix_hits;
  EXPECT_GT(hits, 0u);
  e->reset_prefix_cache();
  const auto out = run_together(*e, {{prompt, greedy(2)}});
  EXPECT_EQ(e->stats().prefix_hits, hits);
  EXPECT_EQ(out[0].num_cached_tokens, 0);
}

TEST(Engine, DefaultKvCapacityIsDocumented) {
  EngineOptions o;
  o.max_num_seqs = 4;
  o.max_model_len = 100;
  Engine e(make_cpu_backend(model_dir("qwen3-tiny-tied"), DType::BF16), o);
  EXPECT_EQ(e.stats().kv_blocks_total, 4 * 7);  // max_num_seqs x ceil(max_model_len / block_size)
  EXPECT_EQ(e.max_model_len(), 100);
}

void expect_invalid(Engine& e, std::vector<int32_t> prompt, const SamplingParams& p, const std::string& param,
                    const std::string& fragment) {
  try {
    e.add(std::move(prompt), p);
    ADD_FAILURE() << "accepted a request with a bad " << param;
  } catch (const InvalidRequest& err) {
    EXPECT_EQ(err.param(), param);
    EXPECT_NE(std::string(err.what()).find(fragment), std::string::npos) << err.what();
  }
}

TEST(Engine, ValidatesRequests) {
  EngineOptions o;
  o.max_model_len = 64;
  o.max_waiting = 2;
  auto e = make_engine("qwen3-tiny-tied", o);
  const SamplingParams ok = greedy(4);
  expect_invalid(*e, {}, ok, "prompt", "empty");
  expect_invalid(*e, {1, 512}, ok, "prompt", "512");
  expect_invalid(*e, {1, -1}, ok, "prompt", "-1");
  expect_invalid(*e, std::vector<int32_t>(60, 1), greedy(10), "max_tokens", "60 tokens and max_tokens is 10: 70");
  SamplingParams p = ok;
  p.temperature = -0.5f;
  expect_invalid(*e, {1}, p, "temperature", "-0.5");
  p = ok;
  p.top_p = 0.0f;
  expect_invalid(*e, {1}, p, "top_p", "(0, 1]");
  p.top_p = 1.5f;
  expect_invalid(*e, {1}, p, "top_p", "1.5");
  p = ok;
  p.min_p = 2.0f;
  expect_invalid(*e, {1}, p, "min_p", "[0, 1]");
  p = ok;
  p.top_k = -3;
  expect_invalid(*e, {1}, p, "top_k", "-3");
  p = ok;
  p.max_tokens = 0;
  expect_invalid(*e, {1}, p, "max_tokens", "at least 1");
  p = ok;
  p.min_tokens = 5;
  expect_invalid(*e, {1}, p, "min_tokens", "max_tokens");
  p = ok;
  p.stop_token_ids = {600};
  expect_invalid(*e, {1}, p, "stop_token_ids", "600");
  EXPECT_FALSE(e->has_work());  // nothing was queued

  e->add({1}, ok);
  e->add({2}, ok);
  EXPECT_THROW(e->add({3}, ok), QueueFull);

  EngineOptions small;
  small.num_kv_blocks = 2;  // 32 slots
  auto tiny = make_engine("qwen3-tiny-tied", small);
  expect_invalid(*tiny, std::vector<int32_t>(30, 1), greedy(4), "max_tokens", "KV cache holds only 32");
  tiny->add(std::vector<int32_t>(30, 1), greedy(3));  // 32 slots exactly: accepted
}

// A device fault ends the engine: the step it hit ends every request, running or still waiting,
// with the fault as its error (no request passes for finished), later steps have nothing to do,
// and add() refuses. Before, only the step's own requests failed: the rest ran on over a cache a
// fault may have corrupted, and new requests kept coming, each failing on a dead device.
TEST(Engine, ADeviceFaultEndsEveryRequestAndRefusesNewOnes) {
  EngineOptions o;
  o.num_kv_blocks = 256;
  o.max_num_seqs = 2;  // the third request waits
  o.enable_prefix_caching = false;  // so a freed block counts as free
  auto run = [&](int64_t fault_after) {
    std::unique_ptr<Backend> be = make_cpu_backend(model_dir("qwen3-tiny-tied"), DType::BF16);
    if (fault_after >= 0) be = std::make_unique<FaultBackend>(std::move(be), fault_after);
    auto e = std::make_unique<Engine>(std::move(be), o);
    for (int r = 0; r < 3; ++r) e->add({1, 2, int32_t(3 + r)}, greedy(6));
    std::map<uint64_t, Outcome> out;
    drain(*e, out);
    return std::make_pair(std::move(e), out);
  };
  auto [healthy, fine] = run(-1);  // the control: the same requests all finish
  ASSERT_EQ(fine.size(), 3u);
  for (auto& [id, o] : fine) {
    EXPECT_EQ(o.reason, FinishReason::Length);
    EXPECT_EQ(o.tokens.size(), 6u);
    EXPECT_EQ(o.error, "");
  }
  EXPECT_EQ(healthy->failure(), "");

  auto [dead, failed] = run(2);  // two steps run, the third faults
  ASSERT_EQ(failed.size(), 3u);
  for (auto& [id, o] : failed) {
    EXPECT_EQ(o.reason, FinishReason::Abort) << id;
    EXPECT_NE(o.error.find("injected device fault"), std::string::npos) << id << ": " << o.error;
    EXPECT_LT(o.tokens.size(), 6u);
  }
  EXPECT_FALSE(failed.begin()->second.tokens.empty()) << "the first requests ran before the fault";
  EXPECT_NE(dead->failure().find("injected device fault"), std::string::npos);
  EXPECT_FALSE(dead->has_work());
  EXPECT_EQ(dead->stats().running + dead->stats().waiting, 0);
  EXPECT_EQ(dead->stats().kv_blocks_used, 0) << "the failed requests' blocks are freed";
  try {
    dead->add({1, 2}, greedy(2));
    FAIL() << "a dead engine must refuse new requests";
  } catch (const EngineFailed& e) {
    EXPECT_NE(std::string(e.what()).find("injected device fault"), std::string::npos) << e.what();
  }
}

// A KV cache the memory cannot hold is refused with a sentence naming its size and the option,
// not "std::bad_alloc" (a serve with a huge --num-kv-blocks under a memory limit printed only that).
TEST(Engine, AKvCacheThatDoesNotFitNamesItsSize) {
  struct NoRoom : ForwardingBackend {
    using ForwardingBackend::ForwardingBackend;
    void allocate_kv(int, int) override { throw std::bad_alloc(); }
  };
  std::unique_ptr<Backend> cpu = make_cpu_backend(model_dir("qwen3-tiny-tied"), DType::BF16);
  EngineOptions o;
  o.num_kv_blocks = 1000;
  try {
    Engine e(std::make_unique<NoRoom>(*cpu), o);
    FAIL() << "the engine was built without its KV cache";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot allocate a KV cache of 1000 blocks of 16 tokens ("), std::string::npos) << m;
    EXPECT_NE(m.find(" GiB on cpu): out of memory"), std::string::npos) << m;
    EXPECT_NE(m.find("--num-kv-blocks"), std::string::npos) << m;
  }
  Engine fine(std::make_unique<ForwardingBackend>(*cpu), o);  // the control: the same cache fits
  EXPECT_EQ(fine.stats().kv_blocks_total, 1000);
}

}  // namespace
