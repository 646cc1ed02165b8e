// The heart of the product, on the CPU reference: a token's logits are the same bits whatever else
// is in the batch, however its prompt is chunked, whatever the KV block size, and whether its
// prefix K/V was computed by this sequence or by an earlier one (prefix cache). Every comparison
// is bit for bit (a hash of the fp32 logit row). Controls prove the test can fail: a deliberately
// batch-dependent matmul is caught, and different prompts give different logits.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "engine/cpu_backend.h"
#include "kernels/ops.h"
#include "model/make_model.h"
#include "support/paths.h"

namespace verbatim {
namespace {

struct Seq {
  std::vector<int32_t> tokens;  // prompt then continuation ("decode") tokens
  int prompt_len = 0;
  std::vector<int32_t> blocks;  // its block table
};

struct Segment {
  int seq, from, to;  // positions [from, to) of seqs[seq], in one forward call
};
using Step = std::vector<Segment>;
using Rows = std::map<std::pair<int, int>, uint64_t>;  // (seq, position) -> hash of its logits

struct Model {
  std::string name;
  std::string dir;
  // Which positions ask for logits (all for small vocabularies; a subset for the 151,936-token
  // vocabulary, whose lm_head dominates the run time). Every schedule asks for the same ones.
  bool every_position = true;
  bool wants(int pos, int len) const { return every_position || pos % 16 == 15 || pos >= len - 2; }
};

std::string made_model_dir() {
  static std::string dir = [] {
    MakeModelOptions o;
    o.arch = "tiny";
    o.seed = 7;
    o.dtype = DType::BF16;
    o.out_dir = test::temp_dir("invariance-make-model");
    o.copy_tokenizer = false;
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

// Runs every step as one forward call; returns the hash of each requested logit row.
Rows run(Backend& be, const Model& m, const std::vector<Seq>& seqs, const std::vector<Step>& steps,
         size_t* max_rows = nullptr) {
  Rows out;
  const int V = be.config().vocab_size;
  std::vector<float> logits;
  for (const Step& step : steps) {
    ForwardBatch b;
    for (const Seq& s : seqs) b.block_tables.push_back(s.blocks);
    std::vector<std::pair<int, int>> keys;
    for (const Segment& g : step)
      for (int p = g.from; p < g.to; ++p) {
        const Seq& s = seqs[size_t(g.seq)];
        if (m.wants(p, int(s.tokens.size()))) {
          b.logit_rows.push_back(int32_t(b.tokens.size()));
          keys.emplace_back(g.seq, p);
        }
        b.tokens.push_back(s.tokens[size_t(p)]);
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

// Each sequence alone, in chunks of `chunk` positions starting at `from`.
std::vector<Step> alone(const std::vector<Seq>& seqs, int chunk, const std::vector<int>& which = {}, int from = 0) {
  std::vector<Step> steps;
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (!which.empty() && std::find(which.begin(), which.end(), int(s)) == which.end()) continue;
    for (int p = from; p < int(seqs[s].tokens.size()); p += chunk)
      steps.push_back({{int(s), p, std::min(int(seqs[s].tokens.size()), p + chunk)}});
  }
  return steps;
}

// All sequences at once, as a continuous-batching server would run them: every step takes a
// prompt chunk of random length (prefill) or one token (decode) from each sequence in turn until
// a random row budget of 1..33 is spent.
std::vector<Step> mixed(const std::vector<Seq>& seqs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> done(seqs.size(), 0);
  std::vector<Step> steps;
  size_t first = 0;
  auto unfinished = [&] {
    for (size_t s = 0; s < seqs.size(); ++s)
      if (done[s] < int(seqs[s].tokens.size())) return true;
    return false;
  };
  while (unfinished()) {
    int budget = std::uniform_int_distribution<int>(1, 33)(rng);
    Step step;
    for (size_t i = 0; i < seqs.size() && budget > 0; ++i) {
      const size_t s = (first + i) % seqs.size();
      const int len = int(seqs[s].tokens.size());
      if (done[s] >= len) continue;
      int c = 1;
      if (done[s] < seqs[s].prompt_len)
        c = std::min({std::uniform_int_distribution<int>(1, 24)(rng), seqs[s].prompt_len - done[s], budget});
      step.push_back({int(s), done[s], done[s] + c});
      done[s] += c;
      budget -= c;
    }
    first = (first + 1) % seqs.size();
    steps.push_back(std::move(step));
  }
  return steps;
}

// Gives each sequence its own blocks, scattered over the cache (shuffled), for `block_size`.
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

std::vector<Seq> make_prompts(int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  std::vector<Seq> seqs;
  for (int len : {1, 5, 17, 33, 64, 65, 100, 130}) {  // around the attention tile (64) and blocks
    Seq s;
    s.prompt_len = len;
    for (int i = 0; i < len + 3; ++i) s.tokens.push_back(tok(rng));  // + 3 decode tokens
    seqs.push_back(std::move(s));
  }
  return seqs;
}

// Reports the first (seq, position) whose logits differ; empty when all equal.
std::string first_difference(const Rows& want, const Rows& got) {
  if (want.size() != got.size()) return "row count " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (const auto& [key, h] : want) {
    auto it = got.find(key);
    if (it == got.end()) return "missing seq " + std::to_string(key.first) + " pos " + std::to_string(key.second);
    if (it->second != h) return "seq " + std::to_string(key.first) + " pos " + std::to_string(key.second);
  }
  return "";
}

struct Case {
  std::string model;  // "qwen3-tiny-tied" fixture or "make-model-tiny"
  DType dtype;
};

class InvarianceCpu : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    if (c.model == "make-model-tiny") {
      model_ = {c.model, made_model_dir(), false};
    } else {
      model_ = {c.model, test::fixture(c.model), true};
    }
    be_ = make_cpu_backend(model_.dir, c.dtype);
    seqs_ = make_prompts(be_->config().vocab_size, 1234);
  }

  // The reference: each sequence alone, whole, in one call, block size 16.
  Rows reference() {
    be_->allocate_kv(assign_blocks(seqs_, 16, 1), 16);
    return run(*be_, model_, seqs_, alone(seqs_, 1 << 20));
  }

  Model model_;
  std::unique_ptr<Backend> be_;
  std::vector<Seq> seqs_;
};

TEST_P(InvarianceCpu, ChunkingAndBlockSizeChangeNoBit) {
  const Rows ref = reference();
  ASSERT_GT(ref.size(), 40u);
  for (int block_size : {16, 32})
    for (int chunk : {1, 7, 16, 64}) {
      be_->allocate_kv(assign_blocks(seqs_, block_size, uint32_t(chunk)), block_size);
      const Rows got = run(*be_, model_, seqs_, alone(seqs_, chunk));
      EXPECT_EQ(first_difference(ref, got), "") << "block " << block_size << " chunk " << chunk;
    }
}

TEST_P(InvarianceCpu, MixedBatchesOfOneToThirtyThreeRowsChangeNoBit) {
  const Rows ref = reference();
  for (uint32_t seed : {1u, 2u, 3u}) {
    be_->allocate_kv(assign_blocks(seqs_, seed == 2 ? 32 : 16, seed + 10), seed == 2 ? 32 : 16);
    size_t max_rows = 0;
    const std::vector<Step> steps = mixed(seqs_, seed);
    const Rows got = run(*be_, model_, seqs_, steps, &max_rows);
    EXPECT_EQ(first_difference(ref, got), "") << "schedule seed " << seed;
    EXPECT_GE(max_rows, 20u);  // the schedule really batched rows together
    size_t mixed_steps = 0;    // steps holding both a prefill chunk and a decode row
    for (const Step& s : steps) {
      bool pre = false, dec = false;
      for (const Segment& g : s) (g.from >= seqs_[size_t(g.seq)].prompt_len ? dec : pre) = true;
      mixed_steps += pre && dec;
    }
    EXPECT_GT(mixed_steps, 0u);
  }
}

TEST_P(InvarianceCpu, PrefixComputedByAnEarlierSequenceChangesNoBit) {
  for (int block_size : {16, 32}) {
    // Sequence 1 = sequence 0's first P tokens + its own suffix. P = 48 with blocks of 16 puts the
    // cache boundary inside an attention tile (64), the case the contract warns about.
    const int P = block_size == 16 ? 48 : 64;
    std::vector<Seq> two(2);
    std::mt19937 rng(99);
    std::uniform_int_distribution<int32_t> tok(0, be_->config().vocab_size - 1);
    for (int i = 0; i < 110; ++i) two[0].tokens.push_back(tok(rng));
    two[1].tokens.assign(two[0].tokens.begin(), two[0].tokens.begin() + P);
    for (int i = 0; i < 60; ++i) two[1].tokens.push_back(tok(rng));
    two[0].prompt_len = 107;
    two[1].prompt_len = int(two[1].tokens.size()) - 3;
    // Reference for sequence 1: computed from scratch, alone, in its own blocks.
    be_->allocate_kv(assign_blocks(two, block_size, 5), block_size);
    const Rows ref = run(*be_, model_, two, alone(two, 1 << 20, {1}));
    // Cached: sequence 0 runs first; sequence 1's table starts with sequence 0's first P / bs
    // blocks and only its suffix is computed, in chunks of 7 batched with sequence 0's tail.
    assign_blocks(two, block_size, 6);
    for (int i = 0; i < P / block_size; ++i) two[1].blocks[size_t(i)] = two[0].blocks[size_t(i)];
    std::vector<Step> steps = alone(two, 37, {0});
    steps.pop_back();
    const int tail = steps.back()[0].to;
    for (int p = P, d = tail; p < int(two[1].tokens.size()); p += 7, ++d) {
      Step s = {{1, p, std::min(int(two[1].tokens.size()), p + 7)}};
      if (d < int(two[0].tokens.size())) s.push_back({0, d, d + 1});
      steps.push_back(s);
    }
    Rows got = run(*be_, model_, two, steps);
    Rows got1;
    for (const auto& [k, h] : got)
      if (k.first == 1) got1[k] = h;
    Rows ref_suffix;
    for (const auto& [k, h] : ref)
      if (k.second >= P) ref_suffix[k] = h;
    ASSERT_FALSE(ref_suffix.empty());
    EXPECT_EQ(first_difference(ref_suffix, got1), "") << "block " << block_size;
  }
}

TEST_P(InvarianceCpu, ControlsShowTheTestCanFail) {
  const Rows ref = reference();
  // Different prompts give different logits (each sequence's last row, all distinct).
  std::vector<uint64_t> last_rows;
  for (const Seq& s : seqs_) last_rows.push_back(ref.at({int(&s - seqs_.data()), int(s.tokens.size()) - 1}));
  std::sort(last_rows.begin(), last_rows.end());
  EXPECT_EQ(std::unique(last_rows.begin(), last_rows.end()) - last_rows.begin(), ptrdiff_t(seqs_.size()));
  // A batch-dependent matmul (K summed backwards when M > 1) is caught: token-by-token rows
  // (M = 1) no longer match whole-prompt rows (M > 1).
  cpu::testing::set_batch_dependent_matmul(true);
  const Rows whole = run(*be_, model_, seqs_, alone(seqs_, 1 << 20));
  const Rows single = run(*be_, model_, seqs_, alone(seqs_, 1));
  cpu::testing::set_batch_dependent_matmul(false);
  EXPECT_NE(first_difference(whole, single), "");
  EXPECT_EQ(first_difference(ref, single), "");  // M = 1 never takes the test-only path
}

TEST_P(InvarianceCpu, ThreadCountChangesNoBit) {
  const Rows ref = reference();
  const int before = omp_get_max_threads();
  const int64_t min_work = cpu::testing::set_min_parallel_work(0);  // split every op, however small
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    const Rows got = run(*be_, model_, seqs_, mixed(seqs_, 4 + uint32_t(threads)));
    EXPECT_EQ(first_difference(ref, got), "") << threads << " threads";
  }
  cpu::testing::set_min_parallel_work(min_work);
  omp_set_num_threads(before);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model + "_" + dtype_name(info.param.dtype);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, InvarianceCpu,
                         ::testing::Values(Case{"qwen3-tiny-tied", DType::F32}, Case{"qwen3-tiny-tied", DType::BF16},
                                           Case{"make-model-tiny", DType::F32}, Case{"make-model-tiny", DType::BF16}),
                         case_name);

}  // namespace
}  // namespace verbatim
