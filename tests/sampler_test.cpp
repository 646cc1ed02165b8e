// Sampling (contract 5): Philox known answers, determinism by (seed, stream, position), greedy
// ties, the filters' kept sets, and the draw's frequencies.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "engine/sampler.h"

using namespace verbatim;

namespace {

std::vector<float> logits_of_probs(const std::vector<double>& p) {
  std::vector<float> x;
  for (double v : p) x.push_back(float(std::log(v)));
  return x;
}

SampleSpec sampling(uint64_t seed, int64_t position, float temperature = 1.0f) {
  SampleSpec s;
  s.temperature = temperature;
  s.seed = seed;
  s.position = position;
  return s;
}

std::vector<float> random_logits(int vocab, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) x[size_t(i)] = 4.0f * sample_uniform(seed, 99, i) - 2.0f;
  return x;
}

}  // namespace

// Random123 known-answer vectors (kat_vectors: philox4x32_10).
TEST(Philox, KnownAnswers) {
  Philox4 zero = philox4x32_10(0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  Philox4 ones = philox4x32_10(~0ull, ~0ull, ~0ull);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  // counter (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), key (0xa4093822, 0x299f31d0)
  Philox4 pi = philox4x32_10(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Philox, UniformIsAFunctionOfSeedStreamPosition) {
  std::set<float> seen;
  for (int64_t pos = 0; pos < 1000; ++pos) {
    float u = sample_uniform(7, 0, pos);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    EXPECT_EQ(u, sample_uniform(7, 0, pos));
    seen.insert(u);
  }
  EXPECT_GT(seen.size(), 990u);  // not constant in the position
  EXPECT_NE(sample_uniform(7, 0, 5), sample_uniform(8, 0, 5));
  EXPECT_NE(sample_uniform(7, 0, 5), sample_uniform(7, 1, 5));
}

TEST(Sampler, SameSeedAndPositionSameToken_DifferentSeedDifferentTokens) {
  const std::vector<float> x = random_logits(512, 1);
  int differ = 0;
  for (int64_t pos = 0; pos < 64; ++pos) {
    SampleResult a = sample_row(x.data(), 512, sampling(1234, pos));
    SampleResult b = sample_row(x.data(), 512, sampling(1234, pos));
    SampleResult c = sample_row(x.data(), 512, sampling(4321, pos));
    EXPECT_EQ(a.token, b.token);
    differ += a.token != c.token;
  }
  EXPECT_GT(differ, 48);  // 512 near-flat choices: a different seed almost always differs
}

TEST(Sampler, GreedyTiesGoToTheLowestId) {
  std::vector<float> x = {0.5f, 1.0f, 3.0f, -1.0f, 3.0f, 3.0f};
  SampleSpec s;  // temperature 0
  EXPECT_EQ(sample_row(x.data(), 6, s).token, 2);
  x[2] = 2.0f;
  EXPECT_EQ(sample_row(x.data(), 6, s).token, 4);
}

TEST(Sampler, TopK1IsGreedyIncludingTies) {
  std::vector<float> x = random_logits(300, 3);
  x[200] = x[17] = 5.0f;  // a tie at the top: both must pick 17
  SampleSpec greedy;
  const int32_t g = sample_row(x.data(), 300, greedy).token;
  EXPECT_EQ(g, 17);
  for (int64_t pos = 0; pos < 200; ++pos) {
    SampleSpec s = sampling(pos * 31 + 1, pos, 1.5f);
    s.top_k = 1;
    ASSERT_EQ(sample_row(x.data(), 300, s).token, g);
  }
}

TEST(Sampler, TopKKeepsTheKLargest) {
  std::vector<float> x = random_logits(100, 5);
  std::vector<int> order(100);
  for (int i = 0; i < 100; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return x[size_t(a)] > x[size_t(b)]; });
  const std::set<int32_t> top5(order.begin(), order.begin() + 5);
  std::set<int32_t> drawn;
  for (int64_t pos = 0; pos < 2000; ++pos) {
    SampleSpec s = sampling(11, pos, 2.0f);
    s.top_k = 5;
    drawn.insert(sample_row(x.data(), 100, s).token);
  }
  EXPECT_EQ(drawn, top5);
}

// Probabilities 0.5, 0.3, 0.15, 0.05: the kept sets of top-p and min-p, far from the boundaries.
TEST(Sampler, TopPAndMinPKeepTheRightSets) {
  const std::vector<float> x = logits_of_probs({0.05, 0.5, 0.15, 0.3});  // ids out of order on purpose
  auto drawn_with = [&](float top_p, float min_p) {
    std::set<int32_t> drawn;
    for (int64_t pos = 0; pos < 3000; ++pos) {
      SampleSpec s = sampling(5, pos);
      s.top_p = top_p;
      s.min_p = min_p;
      drawn.insert(sample_row(x.data(), 4, s).token);
    }
    return drawn;
  };
  EXPECT_EQ(drawn_with(0.45f, 0.0f), (std::set<int32_t>{1}));
  EXPECT_EQ(drawn_with(0.7f, 0.0f), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn_with(0.9f, 0.0f), (std::set<int32_t>{1, 3, 2}));
  EXPECT_EQ(drawn_with(1.0f, 0.0f), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(drawn_with(1.0f, 0.5f), (std::set<int32_t>{1, 3}));        // keeps p >= 0.25
  EXPECT_EQ(drawn_with(1.0f, 0.2f), (std::set<int32_t>{1, 3, 2}));     // keeps p >= 0.1
  EXPECT_EQ(drawn_with(0.7f, 0.2f), (std::set<int32_t>{1, 3}));        // both: the smaller set
}

TEST(Sampler, FrequenciesOf10kDrawsMatchTheProbabilities) {
  const std::vector<double> p = {0.05, 0.5, 0.15, 0.3};
  const std::vector<float> x = logits_of_probs(p);
  std::vector<int> count(4);
  const int n = 10000;
  for (int64_t pos = 0; pos < n; ++pos) ++count[size_t(sample_row(x.data(), 4, sampling(77, pos)).token)];
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(double(count[i]) / n, p[i], 0.02) << "token " << i;

  // Temperature 2 flattens: p_i^(1/2), renormalized.
  double z = 0;
  for (double v : p) z += std::sqrt(v);
  std::fill(count.begin(), count.end(), 0);
  for (int64_t pos = 0; pos < n; ++pos) ++count[size_t(sample_row(x.data(), 4, sampling(78, pos, 2.0f)).token)];
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(double(count[i]) / n, std::sqrt(p[i]) / z, 0.02) << "token " << i;
}

TEST(Sampler, StreamsDrawIndependently) {
  const std::vector<float> x = random_logits(512, 9);
  int differ = 0;
  for (int64_t pos = 0; pos < 64; ++pos) {
    SampleSpec a = sampling(3, pos), b = sampling(3, pos);
    b.stream = 1;
    differ += sample_row(x.data(), 512, a).token != sample_row(x.data(), 512, b).token;
  }
  EXPECT_GT(differ, 48);
}

TEST(Sampler, LogprobsAreTheRawLogSoftmax) {
  const std::vector<float> x = random_logits(257, 13);
  double m = -1e30, s = 0;
  for (float v : x) m = std::max(m, double(v));
  for (float v : x) s += std::exp(double(v) - m);
  for (float temperature : {0.0f, 0.7f, 3.0f}) {
    SampleSpec spec = sampling(1, 4, temperature);
    spec.want_logprob = true;
    spec.top_k = 3;  // filters do not change the reported logprob either
    SampleResult r = sample_row(x.data(), 257, spec);
    EXPECT_NEAR(r.logprob, double(x[size_t(r.token)]) - m - std::log(s), 1e-5);
  }
  SampleSpec score;
  score.score_token = 42;
  SampleResult r = sample_row(x.data(), 257, score);
  EXPECT_EQ(r.token, 42);
  EXPECT_NEAR(r.logprob, double(x[42]) - m - std::log(s), 1e-5);
}

TEST(Sampler, TopLogprobsSortedWithTiesToTheLowerId) {
  std::vector<float> x = {0.0f, 2.0f, 1.0f, 2.0f, -3.0f, 1.0f};
  SampleSpec s;
  s.num_top_logprobs = 4;
  SampleResult r = sample_row(x.data(), 6, s);
  ASSERT_EQ(r.top.size(), 4u);
  EXPECT_EQ(r.top[0].first, 1);
  EXPECT_EQ(r.top[1].first, 3);
  EXPECT_EQ(r.top[2].first, 2);
  EXPECT_EQ(r.top[3].first, 5);
  EXPECT_EQ(r.top[0].second, r.top[1].second);
  EXPECT_GT(r.top[1].second, r.top[2].second);
  s.num_top_logprobs = 100;  // more than the vocab: all of it
  EXPECT_EQ(sample_row(x.data(), 6, s).top.size(), 6u);
}

TEST(Sampler, BannedIdsAreNeverChosen) {
  std::vector<float> x = {1.0f, 5.0f, 4.9f, 0.0f};
  SampleSpec g;
  g.banned = {1};
  EXPECT_EQ(sample_row(x.data(), 4, g).token, 2);
  for (int64_t pos = 0; pos < 500; ++pos) {
    SampleSpec s = sampling(2, pos, 5.0f);
    s.banned = {1, 3, 9999};  // an id outside the vocab is ignored
    int32_t t = sample_row(x.data(), 4, s).token;
    ASSERT_TRUE(t == 0 || t == 2) << t;
  }
}

TEST(Sampler, RejectsAScoreTokenOutsideTheVocab) {
  std::vector<float> x = {1.0f, 2.0f};
  SampleSpec s;
  s.score_token = 2;
  EXPECT_THROW(sample_row(x.data(), 2, s), std::exception);
}

TEST(Sampler, NonFiniteLogitsDoNotCrash) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, -inf, std::nanf(""), 0.5f};
  EXPECT_EQ(sample_row(x.data(), 4, sampling(1, 1)).token, 3);
  std::vector<float> all_neg_inf = {-inf, -inf};
  SampleSpec s = sampling(1, 1);
  s.want_logprob = true;
  EXPECT_GE(sample_row(all_neg_inf.data(), 2, s).token, 0);
}

// The draw's full ordering (no top-k) must be exactly (logit desc, id asc), ties and signed zeros
// included: top_p just above each prefix's mass keeps exactly that prefix.
TEST(Sampler, OrderIsLogitDescThenIdWithTiesAndSignedZeros) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f, 0.0f, -0.0f, 2.0f, -1.0f, 0.5f};
  std::vector<int32_t> order = {7, 2, 4, 9, 0, 1, 5, 6, 3, 8};
  std::vector<double> w;
  double total = 0;
  for (int32_t id : order) {
    w.push_back(std::exp(double(x[size_t(id)]) - 2.0));
    total += w.back();
  }
  double cum = 0;
  for (size_t k = 1; k < order.size(); ++k) {
    cum += w[k - 1];
    // top_p slightly above the mass of the first k ids keeps the first k + 1 of them.
    const float top_p = float((cum + 0.25 * w[k]) / total);
    std::set<int32_t> drawn;
    for (int64_t pos = 0; pos < 4000; ++pos) {
      SampleSpec s = sampling(17, pos);
      s.top_p = top_p;
      drawn.insert(sample_row(x.data(), 10, s).token);
    }
    EXPECT_EQ(drawn, std::set<int32_t>(order.begin(), order.begin() + long(k) + 1)) << "prefix " << k;
  }
}
