// The whole model on the GPU: against the CPU reference and HF transformers (tests/fixtures), and
// the invariance matrix on the GPU: a token's logits (and its sampled token and logprob) are the
// same bits alone or in decode batches of 1..64 sequences (graph-bucket edges 15/16/17 included),
// in any prompt chunking, any KV block size, with its prefix computed by another sequence. The
// --mode fast control shows the matrix can fail. Skipped (never faked) without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/hash.h"
#include "engine/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "model/safetensors.h"
#include "support/cuda_helpers.h"
#include "support/model_folders.h"
#include "support/paths.h"

namespace verbatim {
namespace {

// ---- HF parity on the fixtures

struct GoldenPrompt {
  std::vector<int32_t> ids;
  std::vector<float> fp32, bf16;
};
std::vector<GoldenPrompt> load_golden(const std::string& model) {
  SafetensorsFile f(test::fixture(model + "/golden_logits.safetensors"));
  std::vector<GoldenPrompt> out;
  for (int i = 0;; ++i) {
    std::string p = "p";  // built step by step: GCC 12's -Wrestrict misfires on "p" + to_string(i)
    p += std::to_string(i);
    p += ".";
    const TensorInfo* ids = f.find(p + "ids");
    if (!ids) break;
    GoldenPrompt g;
    g.ids.resize(ids->nbytes / 4);
    std::memcpy(g.ids.data(), ids->data, ids->nbytes);
    for (auto [name, dst] : {std::pair{"logits_fp32", &g.fp32}, std::pair{"logits_bf16", &g.bf16}}) {
      const TensorInfo& t = f.get(p + name);
      dst->resize(t.nbytes / 4);
      std::memcpy(dst->data(), t.data, t.nbytes);
    }
    out.push_back(std::move(g));
  }
  return out;
}
std::vector<int32_t> iota_blocks(int len, int bs) {
  std::vector<int32_t> bt(static_cast<size_t>((len + bs - 1) / bs));
  std::iota(bt.begin(), bt.end(), 0);
  return bt;
}
std::vector<float> prefill_all(Backend& be, const std::vector<int32_t>& ids) {
  ForwardBatch b;
  b.tokens = ids;
  b.block_tables = {iota_blocks(int(ids.size()), 16)};
  for (size_t i = 0; i < ids.size(); ++i) {
    b.positions.push_back(int32_t(i));
    b.token_seq.push_back(0);
    b.logit_rows.push_back(int32_t(i));
  }
  std::vector<float> logits(ids.size() * size_t(be.config().vocab_size));
  be.forward_logits(b, logits.data());
  return logits;
}
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

class CudaParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { VB_REQUIRE_GPU(); }
};

TEST_P(CudaParity, LogitsErrorIsWithinHfBf16ErrorAndCloseToTheCpuReference) {
  const std::string model = GetParam();
  const auto golden = load_golden(model);
  ASSERT_GE(golden.size(), 3u);
  double hf_bf16 = 0;
  for (const GoldenPrompt& g : golden) hf_bf16 = std::max(hf_bf16, max_abs_diff(g.bf16, g.fp32));
  for (DType dt : {DType::BF16, DType::F16}) {
    CudaBackend gpu(ModelWeights::load(test::fixture(model)), dt);
    gpu.allocate_kv(64, 16);
    auto cpu = make_cpu_backend(test::fixture(model), dt);
    cpu->allocate_kv(64, 16);
    double vs_fp32 = 0, vs_cpu = 0;
    for (const GoldenPrompt& g : golden) {
      const std::vector<float> ours = prefill_all(gpu, g.ids);
      vs_fp32 = std::max(vs_fp32, max_abs_diff(ours, g.fp32));
      vs_cpu = std::max(vs_cpu, max_abs_diff(ours, prefill_all(*cpu, g.ids)));
    }
    std::printf("[cuda parity] %s %s: max |logit - HF fp32| = %.4g (HF bf16: %.4g), max |GPU - CPU ref| = %.4g\n",
                model.c_str(), dtype_name(dt), vs_fp32, hf_bf16, vs_cpu);
    EXPECT_LE(vs_fp32, 1.5 * hf_bf16) << dtype_name(dt);
    EXPECT_LE(vs_cpu, hf_bf16) << dtype_name(dt);
    EXPECT_GT(vs_fp32, 0.0);
  }
}

TEST_P(CudaParity, GreedyThroughTheKvCacheAgreesWithHf) {
  const std::string model = GetParam();
  std::ifstream in(test::fixture(model + "/golden_greedy.json"));
  const nlohmann::json cases = nlohmann::json::parse(in);
  CudaBackend gpu(ModelWeights::load(test::fixture(model)), DType::BF16);
  gpu.allocate_kv(64, 16);
  SampleSpec greedy;
  size_t agree = 0, total = 0, first_ok = 0;
  for (const auto& c : cases) {
    const std::vector<int32_t> prompt = c["prompt"].get<std::vector<int32_t>>();
    const std::vector<int32_t> want = c["greedy_fp32"].get<std::vector<int32_t>>();
    ForwardBatch b;
    b.tokens = prompt;
    b.block_tables = {iota_blocks(int(prompt.size() + want.size()), 16)};
    for (size_t i = 0; i < prompt.size(); ++i) {
      b.positions.push_back(int32_t(i));
      b.token_seq.push_back(0);
    }
    b.logit_rows = {int32_t(prompt.size() - 1)};
    std::vector<int32_t> got;
    std::vector<SampleResult> out;
    while (got.size() < want.size()) {
      gpu.forward_sample(b, {greedy}, out);
      got.push_back(out[0].token);
      b.tokens = {out[0].token};
      b.positions = {int32_t(prompt.size() + got.size() - 1)};
      b.token_seq = {0};
      b.logit_rows = {0};
    }
    size_t prefix = 0;  // tokens before the first disagreement (bf16 vs HF fp32)
    while (prefix < want.size() && got[prefix] == want[prefix]) ++prefix;
    agree += prefix;
    total += want.size();
    first_ok += prefix > 0;
  }
  std::printf("[cuda parity] %s bf16 greedy: %zu of %zu tokens agree with HF fp32 before the first divergence\n",
              model.c_str(), agree, total);
  EXPECT_EQ(first_ok, cases.size()) << "the first greedy token should agree for every prompt";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaParity, ::testing::Values("qwen3-tiny-tied", "qwen3-tiny-untied"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ---- The invariance matrix on the GPU

struct Seq {
  std::vector<int32_t> tokens;
  int prompt_len = 0;
  std::vector<int32_t> blocks;
};
struct Segment {
  int seq, from, to;
};
using Step = std::vector<Segment>;
using Rows = std::map<std::pair<int, int>, uint64_t>;

// Which rows ask for logits: all of them for small vocabularies; for the 151,936-token vocabulary
// (whose logits dominate the run time) every 8th prompt position and every continuation token.
bool wants(const Seq& s, int pos, int vocab) { return vocab <= 4096 || pos % 8 == 7 || pos >= s.prompt_len; }

Rows run(Backend& be, const std::vector<Seq>& seqs, const std::vector<Step>& steps, size_t* max_rows = nullptr) {
  Rows out;
  const int V = be.config().vocab_size;
  std::vector<float> logits;
  for (const Step& step : steps) {
    ForwardBatch b;
    for (const Seq& s : seqs) b.block_tables.push_back(s.blocks);
    std::vector<std::pair<int, int>> keys;
    for (const Segment& g : step)
      for (int p = g.from; p < g.to; ++p) {
        if (wants(seqs[size_t(g.seq)], p, V)) {
          b.logit_rows.push_back(int32_t(b.tokens.size()));
          keys.emplace_back(g.seq, p);
        }
        b.tokens.push_back(seqs[size_t(g.seq)].tokens[size_t(p)]);
        b.positions.push_back(p);
        b.token_seq.push_back(g.seq);
      }
    if (max_rows) *max_rows = std::max(*max_rows, b.tokens.size());
    logits.resize(b.logit_rows.size() * size_t(V));
    be.forward_logits(b, logits.data());
    for (size_t r = 0; r < keys.size(); ++r) out[keys[r]] = hash_bytes(&logits[r * size_t(V)], size_t(V) * 4);
  }
  return out;
}

std::vector<Step> alone(const std::vector<Seq>& seqs, int chunk, const std::vector<int>& which = {}) {
  std::vector<Step> steps;
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (!which.empty() && std::find(which.begin(), which.end(), int(s)) == which.end()) continue;
    for (int p = 0; p < int(seqs[s].tokens.size()); p += chunk)
      steps.push_back({{int(s), p, std::min(int(seqs[s].tokens.size()), p + chunk)}});
  }
  return steps;
}

// Prompts prefilled in mixed chunks, then decode steps over the first B sequences for
// B = 1, 2, ..., 64 (sequence i decodes in steps B > i): every batch size, bucket edges included.
std::vector<Step> decode_sweep(const std::vector<Seq>& seqs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Step> steps;
  std::vector<int> done(seqs.size(), 0);
  bool prefilling = true;
  while (prefilling) {
    prefilling = false;
    Step step;
    int budget = std::uniform_int_distribution<int>(16, 300)(rng);
    for (size_t s = 0; s < seqs.size() && budget > 0; ++s) {
      if (done[s] >= seqs[s].prompt_len) continue;
      const int c = std::min({std::uniform_int_distribution<int>(1, 97)(rng), seqs[s].prompt_len - done[s], budget});
      step.push_back({int(s), done[s], done[s] + c});
      done[s] += c;
      budget -= c;
      prefilling = true;
    }
    if (!step.empty()) steps.push_back(step);
  }
  for (int B = 1; B <= int(seqs.size()); ++B) {
    Step step;
    for (int s = 0; s < B; ++s) {
      step.push_back({s, done[size_t(s)], done[size_t(s)] + 1});
      ++done[size_t(s)];
    }
    steps.push_back(step);
  }
  return steps;
}

int assign_blocks(std::vector<Seq>& seqs, int block_size, uint32_t seed) {
  int total = 0;
  for (const Seq& s : seqs) total += (int(s.tokens.size()) + block_size - 1) / block_size;
  std::vector<int32_t> pool(size_t(total) + 3);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), std::mt19937(seed));
  size_t next = 0;
  for (Seq& s : seqs) {
    s.blocks.clear();
    for (int i = 0; i < (int(s.tokens.size()) + block_size - 1) / block_size; ++i) s.blocks.push_back(pool[next++]);
  }
  return int(pool.size());
}

// 64 sequences: prompt lengths around tiles (64), blocks (16/32) and split-KV parts (256);
// sequence i gets 64 - i continuation tokens (its decode steps in decode_sweep).
std::vector<Seq> make_seqs(int vocab, uint32_t seed, int max_prompt) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  const int lens[] = {1, 5, 17, 33, 63, 64, 65, 100, 130, 255, 256, 257, 300, 511, 600};
  std::vector<Seq> seqs;
  for (int i = 0; i < 64; ++i) {
    Seq s;
    s.prompt_len = std::min(max_prompt, i < 15 ? lens[i] : 1 + int(rng() % 400));
    for (int k = 0; k < s.prompt_len + 64 - i; ++k) s.tokens.push_back(tok(rng));
    seqs.push_back(std::move(s));
  }
  return seqs;
}

std::string first_difference(const Rows& want, const Rows& got) {
  size_t differ = 0;
  std::string first;
  for (const auto& [key, h] : got) {
    auto it = want.find(key);
    if (it == want.end()) return "missing reference row";
    if (it->second != h) {
      if (first.empty()) first = "seq " + std::to_string(key.first) + " pos " + std::to_string(key.second);
      ++differ;
    }
  }
  return first.empty() ? "" : first + " (" + std::to_string(differ) + " of " + std::to_string(got.size()) + " rows differ)";
}

struct Case {
  std::string model;  // a fixture, or "make:<arch>" (generated by make-model)
  DType dtype;
};

std::string model_dir(const std::string& model) { return test::model_folder(model); }

class CudaInvariance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    VB_REQUIRE_GPU();
    dir_ = model_dir(GetParam().model);
    be_ = std::make_unique<CudaBackend>(ModelWeights::load(dir_), GetParam().dtype);
    const int max_prompt = std::min(600, be_->config().max_position_embeddings - 70);
    seqs_ = make_seqs(be_->config().vocab_size, 1234, max_prompt);
  }
  Rows reference() {
    be_->allocate_kv(assign_blocks(seqs_, 16, 1), 16);
    return run(*be_, seqs_, alone(seqs_, 1 << 20));
  }
  std::string dir_;
  std::unique_ptr<CudaBackend> be_;
  std::vector<Seq> seqs_;
};

TEST_P(CudaInvariance, DecodeBatchesOfOneToSixtyFourChangeNoBit) {
  const Rows ref = reference();
  for (int block_size : {16, 32}) {
    be_->allocate_kv(assign_blocks(seqs_, block_size, 3), block_size);
    size_t max_rows = 0;
    const Rows got = run(*be_, seqs_, decode_sweep(seqs_, uint32_t(block_size)), &max_rows);
    EXPECT_EQ(first_difference(ref, got), "") << "block size " << block_size;
    EXPECT_GE(max_rows, 64u);
  }
}

TEST_P(CudaInvariance, ChunkingAndBlockSizeChangeNoBit) {
  const Rows ref = reference();
  std::vector<Seq> few(seqs_.begin(), seqs_.begin() + 15);
  Rows ref_few;
  for (const auto& [k, h] : ref)
    if (k.first < 15) ref_few[k] = h;
  for (int block_size : {16, 32})
    for (int chunk : {1, 7, 64, 100}) {
      be_->allocate_kv(assign_blocks(few, block_size, uint32_t(chunk)), block_size);
      const Rows got = run(*be_, few, alone(few, chunk));
      EXPECT_EQ(first_difference(ref_few, got), "") << "block " << block_size << " chunk " << chunk;
    }
}

TEST_P(CudaInvariance, PrefixComputedByAnotherSequenceChangesNoBit) {
  for (int block_size : {16, 32}) {
    const int P = block_size == 16 ? 304 : 320;  // cache boundary inside a tile and past a part (256)
    std::vector<Seq> two(2);
    std::mt19937 rng(99);
    std::uniform_int_distribution<int32_t> tok(0, be_->config().vocab_size - 1);
    for (int i = 0; i < 400; ++i) two[0].tokens.push_back(tok(rng));
    two[1].tokens.assign(two[0].tokens.begin(), two[0].tokens.begin() + P);
    for (int i = 0; i < 90; ++i) two[1].tokens.push_back(tok(rng));
    be_->allocate_kv(assign_blocks(two, block_size, 5), block_size);
    const Rows ref = run(*be_, two, alone(two, 1 << 20, {1}));
    assign_blocks(two, block_size, 6);
    for (int i = 0; i < P / block_size; ++i) two[1].blocks[size_t(i)] = two[0].blocks[size_t(i)];
    std::vector<Step> steps = alone(two, 53, {0});
    for (int p = P, d = 0; p < int(two[1].tokens.size()); p += 9, ++d) {
      Step s = {{1, p, std::min(int(two[1].tokens.size()), p + 9)}};
      steps.push_back(s);
    }
    const Rows got = run(*be_, two, steps);
    Rows got1, ref1;
    for (const auto& [k, h] : got)
      if (k.first == 1) got1[k] = h;
    for (const auto& [k, h] : ref)
      if (k.second >= P) ref1[k] = h;
    ASSERT_FALSE(ref1.empty());
    EXPECT_EQ(first_difference(ref1, got1), "") << "block " << block_size;
  }
}

TEST_P(CudaInvariance, SampledTokensAndLogprobsAreTheSameAloneAndBatched) {
  be_->allocate_kv(assign_blocks(seqs_, 16, 8), 16);
  const int n = 24;
  auto spec_for = [](int s) {
    SampleSpec sp;
    sp.temperature = s % 3 == 0 ? 0.0f : 0.8f;
    sp.top_p = s % 3 == 2 ? 0.9f : 1.0f;
    sp.top_k = s % 4 == 1 ? 40 : 0;
    sp.seed = 42 + uint64_t(s);
    sp.want_logprob = true;
    sp.num_top_logprobs = 3;
    return sp;
  };
  // Prefill each prompt's last row alone, sampling there.
  std::map<int, SampleResult> alone_res, batch_res;
  std::vector<SampleResult> out;
  for (int s = 0; s < n; ++s) {
    ForwardBatch b;
    for (const Seq& q : seqs_) b.block_tables.push_back(q.blocks);
    for (int p = 0; p < seqs_[size_t(s)].prompt_len; ++p) {
      b.tokens.push_back(seqs_[size_t(s)].tokens[size_t(p)]);
      b.positions.push_back(p);
      b.token_seq.push_back(s);
    }
    b.logit_rows = {int32_t(b.tokens.size() - 1)};
    SampleSpec sp = spec_for(s);
    sp.position = seqs_[size_t(s)].prompt_len;
    be_->forward_sample(b, {sp}, out);
    alone_res[s] = out[0];
  }
  // Same rows, all in one batch (different blocks: the cache is rewritten with the same bits).
  be_->allocate_kv(assign_blocks(seqs_, 32, 9), 32);
  ForwardBatch b;
  std::vector<SampleSpec> specs;
  for (const Seq& q : seqs_) b.block_tables.push_back(q.blocks);
  for (int s = 0; s < n; ++s) {
    for (int p = 0; p < seqs_[size_t(s)].prompt_len; ++p) {
      b.tokens.push_back(seqs_[size_t(s)].tokens[size_t(p)]);
      b.positions.push_back(p);
      b.token_seq.push_back(s);
    }
    b.logit_rows.push_back(int32_t(b.tokens.size() - 1));
    SampleSpec sp = spec_for(s);
    sp.position = seqs_[size_t(s)].prompt_len;
    specs.push_back(sp);
  }
  be_->forward_sample(b, specs, out);
  int drawn_differently_by_seed = 0;
  for (int s = 0; s < n; ++s) {
    EXPECT_EQ(out[size_t(s)].token, alone_res[s].token) << "seq " << s;
    EXPECT_EQ(f32_bits(out[size_t(s)].logprob), f32_bits(alone_res[s].logprob)) << "seq " << s;
    EXPECT_EQ(out[size_t(s)].top, alone_res[s].top) << "seq " << s;
  }
  // Control: other seeds change some sampled tokens.
  for (SampleSpec& sp : specs) sp.seed += 1000;
  std::vector<SampleResult> other;
  be_->forward_sample(b, specs, other);
  for (int s = 0; s < n; ++s) drawn_differently_by_seed += other[size_t(s)].token != out[size_t(s)].token;
  EXPECT_GT(drawn_differently_by_seed, 0);
}

TEST_P(CudaInvariance, FastModeBreaksTheMatrixSoTheMatrixCanFail) {
  CudaOptions o;
  o.fast = true;
  CudaBackend fast(ModelWeights::load(dir_), GetParam().dtype, o);
  fast.allocate_kv(assign_blocks(seqs_, 16, 1), 16);
  const Rows ref = run(fast, seqs_, alone(seqs_, 1 << 20));
  fast.allocate_kv(assign_blocks(seqs_, 16, 3), 16);
  const Rows got = run(fast, seqs_, decode_sweep(seqs_, 16));
  const std::string diff = first_difference(ref, got);
  std::printf("[cuda invariance] %s --mode fast: %s\n", GetParam().model.c_str(),
              diff.empty() ? "no difference" : diff.c_str());
  EXPECT_NE(diff, "") << "fast mode should change some bits between alone and batched";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model + "_" + dtype_name(info.param.dtype);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, CudaInvariance,
                         ::testing::Values(Case{"qwen3-tiny-tied", DType::BF16}, Case{"qwen3-tiny-untied", DType::F16},
                                           Case{"make:qwen3-0.6b", DType::BF16}, Case{"make:qwen3-0.6b", DType::F16}),
                         case_name);

}  // namespace
}  // namespace verbatim
