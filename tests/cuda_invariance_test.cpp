// The serving invariance matrix on the GPU, through the Engine (scheduler, paged KV cache, prefix
// cache, preemption, CUDA graphs per decode bucket, GPU sampler, speculative verification): every
// request gives the same token ids and the same logprob bits, to the last bit, whether it runs
// alone or among 2..64 others (graph-bucket edges 15/16/17, 31/32/33), whatever the prompt
// chunking (token budget) and KV block size, with its prefix fresh, warm or reset in the prefix
// cache or the cache off, when it is preempted and recomputed, and with n-gram speculation on.
// Greedy and seeded requests, logprobs with top alternatives. Not vacuous: outputs differ from
// each other, other seeds change seeded outputs, drafts are accepted (with speculation on), and
// --mode fast (contract off) changes some outputs, so the comparison can fail.
//
// Skipped (never faked) without a CUDA device. Environment:
//   VERBATIM_TEST_MODEL_DIR  checkpoint folder (default: `make-model --arch qwen3-0.6b --seed 1
//                            --init-std 0.02` made in a temp dir; tiny on the CPU)
//   VERBATIM_TEST_DTYPE      bfloat16 | float16 | both (default both: suites BF16 and F16)
//   VERBATIM_TEST_MAX_TOKENS tokens per request, base (default 14; request r asks base + r % 7)
//   VERBATIM_TEST_EXPECT_DIGEST  the reference outputs digest of record (with one dtype): the
//                            run fails when its outputs differ from it
//   VERBATIM_TEST_DEVICE     cuda (default) | cpu: the same matrix on the CPU reference, a
//                            development run of this file's logic (the control then uses the
//                            CPU's test-only batch-dependent matmul instead of --mode fast)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hash.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "kernels/ops.h"
#include "model/make_model.h"
#include "support/engine_runs.h"
#include "support/paths.h"
#ifdef VERBATIM_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace verbatim::test {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

bool on_cpu() { return env_or("VERBATIM_TEST_DEVICE", "cuda") == "cpu"; }

bool gpu_visible() {
#ifdef VERBATIM_HAVE_CUDA
  return cuda_device_available();
#else
  return false;
#endif
}

std::string model_dir() {
  static const std::string dir = [] {
    std::string d = env_or("VERBATIM_TEST_MODEL_DIR", "");
    if (!d.empty()) return d;
    MakeModelOptions o;
    // 0.6B: the real shape. init std 0.02 (HF's default initializer): greedy continuations of a
    // repeated pattern loop, so speculation has drafts to accept. Tiny on the CPU, std 0.05.
    o.arch = on_cpu() ? "tiny" : "qwen3-0.6b";
    o.seed = on_cpu() ? 11 : 1;
    o.init_std = on_cpu() ? 0.05 : 0.02;
    o.dtype = DType::BF16;
    o.out_dir = temp_dir("cuda-invariance-model");
    o.copy_tokenizer = false;
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

std::unique_ptr<Backend> make_test_backend(DType dt, bool fast = false) {
  if (on_cpu()) return make_cpu_backend(model_dir(), dt);
#ifdef VERBATIM_HAVE_CUDA
  CudaOptions o;
  o.fast = fast;
  // VERBATIM_TEST_TP=N: the whole matrix on a tensor-parallel backend over N GPUs (issue 7).
  o.tensor_parallel_size = std::max(1, std::atoi(env_or("VERBATIM_TEST_TP", "1").c_str()));
  return make_cuda_backend(model_dir(), dt, o);
#else
  (void)dt;
  (void)fast;
  return nullptr;
#endif
}

// 64 requests (the largest decode batch the CUDA graphs cover). Kinds cycle: a shared 80-token
// prefix (5 blocks of 16: prefix-cache hits) + a random tail; the shared prefix + a repeated
// pattern; a random prompt of a length around tiles (64), blocks (16/32) and split-KV parts
// (256); a repeated pattern alone. Even requests greedy, odd ones seeded at temperatures
// 0.3..1.2 with top-p / top-k / min-p; logprobs with top 3, the chosen one, or none; some with
// min_tokens; most ignore EOS (full lengths), some may stop on it.
std::vector<EngineRequest> make_requests(int vocab, int max_tokens_base) {
  static const int kLens[] = {1, 5, 17, 33, 63, 64, 65, 100, 130, 255, 256, 257, 300};
  static const float kTemps[] = {0.3f, 0.6f, 0.9f, 1.2f};
  const std::vector<int32_t> prefix = random_ids(vocab, 900, 80);
  std::vector<EngineRequest> reqs;
  for (int r = 0; r < 64; ++r) {
    EngineRequest q;
    const uint64_t st = uint64_t(r);
    switch (r % 4) {
      case 0:
        q.prompt = prefix;
        for (int32_t t : random_ids(vocab, 1000 + st, 3 + (r * 7) % 60)) q.prompt.push_back(t);
        break;
      case 1:
        q.prompt = prefix;
        for (int32_t t : repeated_ids(vocab, 2000 + st, 2 + r % 5, 24 + r % 9)) q.prompt.push_back(t);
        break;
      case 2: q.prompt = random_ids(vocab, 3000 + st, kLens[(r / 4) % 13]); break;
      default: q.prompt = repeated_ids(vocab, 4000 + st, 1 + r % 6, 20 + (r * 5) % 41); break;
    }
    SamplingParams& p = q.params;
    p.max_tokens = max_tokens_base + r % 7;
    p.logprobs = r % 3 == 0 ? 3 : (r % 3 == 1 ? 0 : -1);
    p.min_tokens = r % 9 == 0 ? 4 : 0;
    p.ignore_eos = r % 5 != 4;
    if (r % 2 == 0) {
      p.temperature = 0.0f;
    } else {
      p.temperature = kTemps[(r / 2) % 4];
      p.top_p = r % 3 == 1 ? 0.9f : 1.0f;
      p.top_k = r % 5 == 1 ? 40 : 0;
      p.min_p = r % 7 == 3 ? 0.05f : 0.0f;
      p.seed = 7000 + st;
    }
    reqs.push_back(std::move(q));
  }
  return reqs;
}

// What every test of one dtype shares: the backend (weights load once), the requests, and the
// reference outcomes (each request alone, prefix cache off, whole prompt in one step).
struct Shared {
  DType dtype = DType::BF16;
  std::unique_ptr<Backend> backend;
  std::vector<EngineRequest> reqs;
  std::vector<Outcome> reference;
  int max_len = 0;
  int blocks_for_all = 0;  // KV blocks (of 16) that hold every request at once, with room to spare
};
Shared& shared() {
  static Shared s;
  return s;
}

int blocks_needed(const EngineRequest& r, int block_size) {
  return (int(r.prompt.size()) + r.params.max_tokens + block_size - 1) / block_size;
}

class EngineInvariance : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    const std::string want = env_or("VERBATIM_TEST_DTYPE", "both");
    const DType dt = GetParam();
    if (want != "both" && parse_dtype(want) != dt) GTEST_SKIP() << "VERBATIM_TEST_DTYPE=" << want;
    if (!on_cpu() && !gpu_visible())
      GTEST_SKIP() << "no CUDA device visible: the GPU tests run on a machine with one";
    Shared& s = shared();
    if (!s.backend || s.dtype != dt) {
      s = Shared{};  // frees the other dtype's backend (and its device memory) first
      s.dtype = dt;
      s.backend = make_test_backend(dt);
      ASSERT_TRUE(s.backend);
      const int base = std::max(2, std::atoi(env_or("VERBATIM_TEST_MAX_TOKENS", "14").c_str()));
      s.reqs = make_requests(s.backend->config().vocab_size, base);
      for (const EngineRequest& r : s.reqs) {
        s.max_len = std::max(s.max_len, int(r.prompt.size()) + r.params.max_tokens + 8);
        s.blocks_for_all += blocks_needed(r, 16) + 1;
      }
      std::printf("[engine invariance] %s %s on %s, %zu requests\n", model_dir().c_str(), dtype_name(dt),
                  s.backend->device_name().c_str(), s.reqs.size());
      EngineOptions o = options(false);
      Engine e(std::make_unique<BorrowedBackend>(*s.backend), o);
      s.reference = run_one_by_one(e, s.reqs);
      for (const Outcome& out : s.reference) ASSERT_TRUE(out.error.empty()) << out.error;
      // One digest of every request's tokens and logprob bits: runs at different tensor-parallel
      // sizes (or on other machines) compare by this line.
      uint64_t h = 0;
      for (const Outcome& out : s.reference) {
        h = hash_combine(h, hash_bytes(out.tokens.data(), out.tokens.size() * sizeof(int32_t)));
        h = hash_combine(h, hash_bytes(out.logprob_bits.data(), out.logprob_bits.size() * sizeof(uint32_t)));
      }
      std::printf("[engine invariance] reference outputs digest %s (tensor parallel %s)\n", hex64(h).c_str(),
                  env_or("VERBATIM_TEST_TP", "1").c_str());
      // A digest of record (same folder, dtype and requests on another run, build or machine):
      // the outputs must not have moved.
      const std::string want = env_or("VERBATIM_TEST_EXPECT_DIGEST", "");
      if (!want.empty()) {
        EXPECT_EQ(hex64(h), want) << "the reference outputs differ from the digest of record";
      }
    }
    ASSERT_EQ(s.reference.size(), s.reqs.size()) << "the reference run failed earlier";
  }

  // Room for every request at once (no preemption), the whole prompt in one step unless a test
  // cuts the budget.
  EngineOptions options(bool prefix_cache) const {
    const Shared& s = shared();
    EngineOptions o;
    o.block_size = 16;
    o.num_kv_blocks = s.blocks_for_all * 2;  // block size 32 fits in it too
    o.max_num_batched_tokens = 2048;
    o.max_model_len = s.max_len;
    o.enable_prefix_caching = prefix_cache;
    return o;
  }
  std::unique_ptr<Engine> engine(const EngineOptions& o) const {
    return std::make_unique<Engine>(std::make_unique<BorrowedBackend>(*shared().backend), o);
  }
  const std::vector<EngineRequest>& reqs() const { return shared().reqs; }
  const std::vector<Outcome>& reference() const { return shared().reference; }
  static std::vector<Outcome> first(const std::vector<Outcome>& v, size_t n) { return {v.begin(), v.begin() + long(n)}; }
  static std::vector<EngineRequest> first(const std::vector<EngineRequest>& v, size_t n) {
    return {v.begin(), v.begin() + long(n)};
  }
};

TEST_P(EngineInvariance, AloneEqualsBatchesOfTwoToSixtyFour) {
  // Outputs are not all alike (different prompts and seeds give different tokens).
  std::set<std::vector<int32_t>> distinct;
  for (const Outcome& o : reference()) distinct.insert(o.tokens);
  EXPECT_GE(distinct.size(), reqs().size() / 2);
  for (int B : {2, 3, 8, 15, 16, 17, 31, 32, 33, 64}) {
    auto e = engine(options(false));
    const auto got = run_together(*e, first(reqs(), size_t(B)));
    EXPECT_EQ(compare_outcomes(first(reference(), size_t(B)), got), "") << "batch of " << B;
    const EngineStats st = e->stats();
    // The requests really shared steps: far fewer steps than tokens.
    if (B >= 8) {
      EXPECT_LT(st.steps * 4, st.generation_tokens) << "batch of " << B;
    }
    EXPECT_EQ(st.kv_blocks_used, 0);
  }
}

TEST_P(EngineInvariance, ChunkedPrefillAndBlockSizeChangeNoBit) {
  struct Cut {
    int budget, block_size;
  };
  for (Cut c : {Cut{16, 16}, Cut{61, 16}, Cut{256, 32}}) {
    EngineOptions o = options(false);
    o.max_num_batched_tokens = c.budget;
    o.block_size = c.block_size;
    auto e = engine(o);
    EXPECT_EQ(compare_outcomes(reference(), run_together(*e, reqs())), "")
        << "token budget " << c.budget << ", block size " << c.block_size;
  }
}

TEST_P(EngineInvariance, PrefixCacheFreshWarmResetAndOffChangeNoBit) {
  EngineOptions o = options(true);
  o.max_num_batched_tokens = 128;  // prompts arrive in chunks, some after their prefix was cached
  auto e = engine(o);
  EXPECT_EQ(compare_outcomes(reference(), run_together(*e, reqs())), "") << "cache on, fresh";
  const uint64_t hits_fresh = e->stats().prefix_hits;
  EXPECT_GT(hits_fresh, 0u) << "the shared 80-token prefix was never served from the cache";
  EXPECT_EQ(compare_outcomes(reference(), run_together(*e, reqs())), "") << "cache on, warm";
  const uint64_t hits_warm = e->stats().prefix_hits - hits_fresh;
  EXPECT_GT(hits_warm, hits_fresh) << "the warm run found more of its prompts in the cache";
  e->reset_prefix_cache();
  EXPECT_EQ(compare_outcomes(reference(), run_together(*e, reqs())), "") << "cache on, after reset";
  // Warm, one by one: each request alone, its prompt (and the outputs' full blocks) cached.
  EXPECT_EQ(compare_outcomes(first(reference(), 16), run_one_by_one(*e, first(reqs(), 16))), "")
      << "cache on, warm, alone";
  std::printf("[engine invariance] prefix-cache hits: fresh %llu, warm %llu prompt tokens\n",
              static_cast<unsigned long long>(hits_fresh), static_cast<unsigned long long>(hits_warm));
}

TEST_P(EngineInvariance, ForcedPreemptionRecomputesTheSameBits) {
  int largest = 0;
  for (const EngineRequest& r : reqs()) largest = std::max(largest, blocks_needed(r, 16));
  struct Variant {
    bool cache;
    bool speculate;
  };
  for (Variant v : {Variant{false, false}, Variant{true, false}, Variant{true, true}}) {
    EngineOptions o = options(v.cache);
    o.num_kv_blocks = largest * 2;  // room for about two of the longest requests: most get preempted
    o.max_num_batched_tokens = 256;
    if (v.speculate) o.speculative = "ngram";
    auto e = engine(o);
    const std::string what = std::string(v.cache ? "cache on" : "cache off") + (v.speculate ? ", speculation" : "");
    EXPECT_EQ(compare_outcomes(reference(), run_together(*e, reqs())), "") << what;
    EXPECT_GT(e->stats().preemptions, 0u) << what;
    EXPECT_EQ(e->stats().kv_blocks_used, 0) << what;
    std::printf("[engine invariance] %s: %d KV blocks, %llu preemptions\n", what.c_str(), o.num_kv_blocks,
                static_cast<unsigned long long>(e->stats().preemptions));
  }
}

TEST_P(EngineInvariance, SpeculationOnEqualsOffAndAcceptsDrafts) {
  struct Variant {
    int k, ngram_min;
    bool cache, alone;
  };
  for (Variant v : {Variant{3, 2, true, false}, Variant{5, 1, false, false}, Variant{3, 2, false, true}}) {
    EngineOptions o = options(v.cache);
    o.speculative = "ngram";
    o.num_speculative_tokens = v.k;
    o.ngram_min = v.ngram_min;
    auto e = engine(o);
    const size_t n = v.alone ? 24 : reqs().size();
    const auto got = v.alone ? run_one_by_one(*e, first(reqs(), n)) : run_together(*e, reqs());
    const std::string what = "K " + std::to_string(v.k) + ", n-gram min " + std::to_string(v.ngram_min) +
                             (v.cache ? ", cache on" : ", cache off") + (v.alone ? ", alone" : ", together");
    EXPECT_EQ(compare_outcomes(first(reference(), n), got), "") << what;
    const EngineStats st = e->stats();
    // Not vacuous: verification steps ran (several rows of one sequence in a step) and drafts
    // were accepted, so accepted rows' logits came from a multi-token step.
    EXPECT_GT(st.spec_draft_tokens, 0u) << what;
    EXPECT_GT(st.spec_accepted_tokens, 0u) << what;
    std::printf("[engine invariance] speculation %s: %llu of %llu drafts accepted (%.1f%%), %llu steps for %llu tokens\n",
                what.c_str(), static_cast<unsigned long long>(st.spec_accepted_tokens),
                static_cast<unsigned long long>(st.spec_draft_tokens),
                st.spec_draft_tokens ? 100.0 * double(st.spec_accepted_tokens) / double(st.spec_draft_tokens) : 0.0,
                static_cast<unsigned long long>(st.steps), static_cast<unsigned long long>(st.generation_tokens));
  }
}

// The controls: other seeds change seeded outputs; and a backend that breaks the contract on
// purpose (--mode fast on the GPU: cuBLAS heuristics and split-KV parts chosen by the batch; on
// the CPU the test-only batch-dependent matmul) makes batched outputs differ from alone ones.
TEST_P(EngineInvariance, ControlsShowTheMatrixCanFail) {
  std::vector<EngineRequest> reseeded = reqs();
  for (EngineRequest& r : reseeded)
    if (r.params.seed) r.params.seed = *r.params.seed + 1;
  auto e = engine(options(false));
  const auto other_seeds = run_together(*e, reseeded);
  int seeded_changed = 0;
  for (size_t i = 0; i < reqs().size(); ++i)
    if (reqs()[i].params.temperature > 0) seeded_changed += other_seeds[i].tokens != reference()[i].tokens;
  EXPECT_GT(seeded_changed, 0) << "other seeds should change some sampled outputs";

  std::vector<Outcome> alone, together;
  if (on_cpu()) {
    cpu::testing::set_batch_dependent_matmul(true);
    auto a = engine(options(false));
    alone = run_one_by_one(*a, reqs());
    auto t = engine(options(false));
    together = run_together(*t, reqs());
    cpu::testing::set_batch_dependent_matmul(false);
  } else {
    std::unique_ptr<Backend> fast = make_test_backend(GetParam(), /*fast=*/true);
    ASSERT_TRUE(fast);
    EXPECT_NE(fast->kernel_config(), shared().backend->kernel_config());
    {
      Engine a(std::make_unique<BorrowedBackend>(*fast), options(false));
      alone = run_one_by_one(a, reqs());
    }
    Engine t(std::make_unique<BorrowedBackend>(*fast), options(false));
    together = run_together(t, reqs());
  }
  const int differ = count_differences(alone, together);
  std::printf("[engine invariance] contract broken on purpose (%s): %d of %zu requests differ alone vs together (%s)\n",
              on_cpu() ? "batch-dependent matmul" : "--mode fast", differ, reqs().size(),
              compare_outcomes(alone, together).c_str());
  EXPECT_GT(differ, 0) << "breaking the contract should change some output, or the matrix could never fail";
}

std::string dtype_case(const ::testing::TestParamInfo<DType>& info) { return dtype_name(info.param); }

INSTANTIATE_TEST_SUITE_P(BF16, EngineInvariance, ::testing::Values(DType::BF16), dtype_case);
INSTANTIATE_TEST_SUITE_P(F16, EngineInvariance, ::testing::Values(DType::F16), dtype_case);

}  // namespace
}  // namespace verbatim::test
