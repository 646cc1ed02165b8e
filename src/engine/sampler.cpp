#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace verbatim {

namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// (logit desc, id asc): a total order on finite logits, so every sort gives the same sequence.
struct Candidate {
  float logit;
  float weight;
  int32_t id;
};
inline bool before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// An unsigned key whose ascending order is the (logit desc) order; -0 and +0 share a key, as
// they compare equal. Finite logits only.
inline uint32_t descending_key(float logit) {
  uint32_t u = logit == 0.0f ? 0u : f32_bits(logit);
  uint32_t ascending = (u & 0x80000000u) ? ~u : (u ^ 0x80000000u);
  return ~ascending;
}

// Sorts by (logit desc, id asc): a stable LSD radix sort on the logit key of candidates that
// arrive in id order, so it gives exactly the order std::sort with before() gives, in O(n).
void sort_candidates(std::vector<Candidate>& cand) {
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  std::vector<Candidate> tmp(cand.size());
  std::vector<uint32_t> keys(cand.size()), tmp_keys(cand.size());
  for (size_t i = 0; i < cand.size(); ++i) keys[i] = descending_key(cand[i].logit);
  for (int shift = 0; shift < 32; shift += kBits) {
    size_t count[kBuckets + 1] = {};
    for (uint32_t k : keys) ++count[((k >> shift) & (kBuckets - 1)) + 1];
    for (int b = 0; b < kBuckets; ++b) count[b + 1] += count[b];
    for (size_t i = 0; i < cand.size(); ++i) {
      size_t dst = count[(keys[i] >> shift) & (kBuckets - 1)]++;
      tmp[dst] = cand[i];
      tmp_keys[dst] = keys[i];
    }
    cand.swap(tmp);
    keys.swap(tmp_keys);
  }
}

std::vector<char> banned_mask(int vocab, const std::vector<int32_t>& banned) {
  std::vector<char> mask;
  if (banned.empty()) return mask;
  mask.assign(size_t(vocab), 0);
  for (int32_t id : banned)
    if (id >= 0 && id < vocab) mask[size_t(id)] = 1;
  return mask;
}

// Argmax over allowed ids, ties to the lowest id; -1 when no id is allowed or all are NaN.
int32_t argmax(const float* x, int vocab, const std::vector<char>& mask) {
  int32_t best = -1;
  float best_v = 0.0f;
  for (int i = 0; i < vocab; ++i) {
    if (!mask.empty() && mask[size_t(i)]) continue;
    if (std::isnan(x[i])) continue;
    if (best < 0 || x[i] > best_v) { best = i; best_v = x[i]; }  // strict >: first max wins
  }
  return best;
}

int32_t draw(const float* logits, int vocab, const SampleSpec& spec, const std::vector<char>& mask) {
  auto allowed = [&](int i) { return mask.empty() || !mask[size_t(i)]; };
  float zmax = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < vocab; ++i)
    if (allowed(i) && !std::isnan(logits[i])) zmax = std::max(zmax, logits[i] / spec.temperature);
  if (std::isinf(zmax)) return argmax(logits, vocab, mask);  // nothing finite to draw from
  // Weights relative to the top (w = 1 there); zeros can never be drawn, so they are dropped.
  std::vector<Candidate> cand;
  cand.reserve(size_t(vocab));
  for (int i = 0; i < vocab; ++i) {
    if (!allowed(i) || std::isnan(logits[i])) continue;
    float w = std::exp(logits[i] / spec.temperature - zmax);
    if (w > 0.0f) cand.push_back({logits[i], w, i});
  }
  size_t n = cand.size();
  if (spec.top_k > 0 && size_t(spec.top_k) < n) {
    std::partial_sort(cand.begin(), cand.begin() + spec.top_k, cand.end(), before);
    n = size_t(spec.top_k);
  } else {
    sort_candidates(cand);  // candidates were pushed in id order: the radix sort's stability needs it
  }
  // Every sum below runs in the sorted order, one fp32 accumulator: a fixed reduction order.
  auto total_of = [&](size_t count) {
    float t = 0.0f;
    for (size_t i = 0; i < count; ++i) t += cand[i].weight;
    return t;
  };
  if (spec.top_p < 1.0f) {
    const float target = spec.top_p * total_of(n);
    float cum = 0.0f;
    size_t keep = 0;
    while (keep < n && cum < target) cum += cand[keep++].weight;
    n = std::max<size_t>(keep, 1);
  }
  if (spec.min_p > 0.0f) {
    size_t keep = 1;  // the top (w = 1) always stays
    while (keep < n && cand[keep].weight >= spec.min_p) ++keep;
    n = keep;
  }
  const float u = sample_uniform(spec.seed, spec.stream, spec.position);
  const float target = u * total_of(n);
  float cum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    cum += cand[i].weight;
    if (target < cum) return cand[i].id;
  }
  return cand[n - 1].id;  // u * total rounded up to the total: the last kept id
}

}  // namespace

Philox4 philox4x32_10(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  uint32_t c[4] = {uint32_t(counter_lo), uint32_t(counter_lo >> 32), uint32_t(counter_hi),
                   uint32_t(counter_hi >> 32)};
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) { k0 += kPhiloxW0; k1 += kPhiloxW1; }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kPhiloxM0, c[0], hi0, lo0);
    mulhilo(kPhiloxM1, c[2], hi1, lo1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
  }
  return Philox4{{c[0], c[1], c[2], c[3]}};
}

float sample_uniform(uint64_t seed, uint64_t stream, int64_t position) {
  Philox4 r = philox4x32_10(seed, stream, uint64_t(position));
  return float(r.v[0] >> 8) * 0x1p-24f;  // 24 bits: exact in fp32, strictly below 1
}

SampleResult sample_row(const float* logits, int vocab, const SampleSpec& spec) {
  if (vocab <= 0) throw Error("sample_row: empty logit row");
  if (spec.score_token >= vocab)
    throw Error("sample_row: score_token " + std::to_string(spec.score_token) + " is outside the vocab of " +
                std::to_string(vocab));
  SampleResult r;
  const std::vector<char> mask = banned_mask(vocab, spec.banned);
  if (spec.score_token >= 0) {
    r.token = spec.score_token;
  } else if (spec.temperature <= 0.0f) {
    r.token = argmax(logits, vocab, mask);
    if (r.token < 0) r.token = argmax(logits, vocab, {});  // everything banned: ignore the ban
    if (r.token < 0) r.token = 0;                          // all NaN: nothing better to say
  } else {
    r.token = draw(logits, vocab, spec, mask);
    if (r.token < 0) r.token = 0;
  }
  if (!spec.want_logprob && spec.num_top_logprobs <= 0 && spec.score_token < 0) return r;

  // log_softmax of the raw logits: max (order-free), then the sum of exp in id order.
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < vocab; ++i) m = std::max(m, logits[i]);
  float s = 0.0f;
  if (!std::isinf(m))
    for (int i = 0; i < vocab; ++i) s += std::exp(logits[i] - m);
  const float lse = std::log(s);
  auto logprob = [&](int32_t i) {
    if (std::isinf(m)) return -std::numeric_limits<float>::infinity();
    return (logits[i] - m) - lse;
  };
  r.logprob = logprob(r.token);
  if (spec.num_top_logprobs > 0) {
    std::vector<std::pair<int32_t, float>> all(static_cast<size_t>(vocab));
    for (int i = 0; i < vocab; ++i) all[size_t(i)] = {i, logprob(i)};
    auto by_logprob = [](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
      // NaN sorts last, so the order stays total.
      bool an = std::isnan(a.second), bn = std::isnan(b.second);
      if (an != bn) return bn;
      return a.second > b.second || (!(a.second < b.second) && a.first < b.first);
    };
    size_t k = std::min<size_t>(size_t(spec.num_top_logprobs), all.size());
    std::partial_sort(all.begin(), all.begin() + long(k), all.end(), by_logprob);
    all.resize(k);
    r.top = std::move(all);
  }
  return r;
}

}  // namespace verbatim
