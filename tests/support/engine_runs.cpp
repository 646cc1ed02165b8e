#include "support/engine_runs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/dtype.h"
#include "engine/sampler.h"

namespace verbatim::test {

void drain(Engine& e, std::map<uint64_t, Outcome>& out) {
  for (int guard = 0; e.has_work(); ++guard) {
    if (guard >= 1000000) {
      ADD_FAILURE() << "engine never went idle";
      return;
    }
    for (const RequestUpdate& u : e.step()) {
      Outcome& o = out[u.id];
      for (const TokenLogprob& t : u.tokens) {
        o.tokens.push_back(t.token);
        o.logprob_bits.push_back(uint32_t(t.token));
        o.logprob_bits.push_back(f32_bits(t.logprob));
        for (const auto& [id, lp] : t.top) {
          o.logprob_bits.push_back(uint32_t(id));
          o.logprob_bits.push_back(f32_bits(lp));
        }
      }
      if (u.finished) {
        EXPECT_EQ(o.reason, FinishReason::None) << "two final updates for request " << u.id;
        o.reason = u.reason;
        o.error = u.error;
      }
    }
  }
}

std::vector<Outcome> run_together(Engine& e, const std::vector<EngineRequest>& reqs) {
  std::vector<uint64_t> ids;
  for (const EngineRequest& r : reqs) ids.push_back(e.add(r.prompt, r.params));
  std::map<uint64_t, Outcome> out;
  drain(e, out);
  std::vector<Outcome> res;
  for (uint64_t id : ids) res.push_back(out[id]);
  return res;
}

std::vector<Outcome> run_one_by_one(Engine& e, const std::vector<EngineRequest>& reqs) {
  std::vector<Outcome> res;
  for (const EngineRequest& r : reqs) res.push_back(run_together(e, {r})[0]);
  return res;
}

std::string compare_outcomes(const std::vector<Outcome>& want, const std::vector<Outcome>& got) {
  if (want.size() != got.size())
    return "outcome count " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  int differ = 0, first = -1;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(want[i] == got[i]) || !got[i].error.empty()) {
      ++differ;
      if (first < 0) first = int(i);
    }
  if (differ == 0) return "";
  const Outcome& w = want[size_t(first)];
  const Outcome& g = got[size_t(first)];
  std::string where;
  if (!g.error.empty()) {
    where = "error: " + g.error;
  } else if (w.tokens != g.tokens) {
    size_t p = 0;
    while (p < w.tokens.size() && p < g.tokens.size() && w.tokens[p] == g.tokens[p]) ++p;
    where = "tokens differ from position " + std::to_string(p) + " (lengths " + std::to_string(w.tokens.size()) +
            " vs " + std::to_string(g.tokens.size()) + ")";
  } else if (w.logprob_bits != g.logprob_bits) {
    where = "same tokens, logprob bits differ";
  } else {
    where = std::string("finish reason ") + (finish_reason_name(w.reason) ? finish_reason_name(w.reason) : "none") +
            " vs " + (finish_reason_name(g.reason) ? finish_reason_name(g.reason) : "none");
  }
  return std::to_string(differ) + " of " + std::to_string(want.size()) + " requests differ; first: request " +
         std::to_string(first) + ", " + where;
}

int count_differences(const std::vector<Outcome>& want, const std::vector<Outcome>& got) {
  int n = 0;
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) n += !(want[i] == got[i]);
  return n + int(std::max(want.size(), got.size()) - std::min(want.size(), got.size()));
}

std::vector<int32_t> random_ids(int vocab, uint64_t stream, int n) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(std::min(vocab - 1, int32_t(sample_uniform(5, stream, i) * float(vocab))));
  return v;
}

std::vector<int32_t> repeated_ids(int vocab, uint64_t stream, int period, int len) {
  const std::vector<int32_t> pat = random_ids(vocab, stream, period);
  std::vector<int32_t> v;
  for (int i = 0; i < len; ++i) v.push_back(pat[size_t(i % period)]);
  return v;
}

}  // namespace verbatim::test
