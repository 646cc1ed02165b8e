#include "client/compare.h"

#include <algorithm>
#include <cstring>

#include "client/stats.h"
#include "core/error.h"

namespace verbatim::client {

const char* basis_name(CompareBasis b) {
  switch (b) {
    case CompareBasis::TokenIds: return "token ids";
    case CompareBasis::TokenStrings: return "token strings";
    case CompareBasis::TextBytes: return "text bytes";
  }
  return "?";
}

CompareBasis common_basis(const Output& a, const Output& b) {
  if (a.has_token_ids && b.has_token_ids) return CompareBasis::TokenIds;
  if (a.has_logprobs && b.has_logprobs && a.tokens.size() == a.logprobs.size() &&
      b.tokens.size() == b.logprobs.size())
    return CompareBasis::TokenStrings;
  return CompareBasis::TextBytes;
}

namespace {

template <typename Seq>
int first_mismatch(const Seq& a, const Seq& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (!(a[i] == b[i])) return static_cast<int>(i);
  return a.size() == b.size() ? -1 : static_cast<int>(n);
}

// Bit-for-bit: NaN (a null logprob) equals NaN, and -0.0 differs from 0.0.
bool same_bits(double x, double y) {
  uint64_t bx, by;
  std::memcpy(&bx, &x, sizeof bx);
  std::memcpy(&by, &y, sizeof by);
  return bx == by;
}

}  // namespace

OutputDiff compare_outputs(const Output& a, const Output& b) {
  OutputDiff d;
  d.basis = common_basis(a, b);
  switch (d.basis) {
    case CompareBasis::TokenIds: d.first_diff = first_mismatch(a.token_ids, b.token_ids); break;
    case CompareBasis::TokenStrings: d.first_diff = first_mismatch(a.tokens, b.tokens); break;
    case CompareBasis::TextBytes: d.first_diff = first_mismatch(a.text, b.text); break;
  }
  d.tokens_differ = d.first_diff >= 0;
  if (!d.tokens_differ && a.has_logprobs && b.has_logprobs) {
    if (a.logprobs.size() != b.logprobs.size()) {
      d.logprobs_differ = true;
      d.first_logprob_diff = static_cast<int>(std::min(a.logprobs.size(), b.logprobs.size()));
    } else {
      for (size_t i = 0; i < a.logprobs.size(); ++i)
        if (!same_bits(a.logprobs[i], b.logprobs[i])) {
          d.logprobs_differ = true;
          d.first_logprob_diff = static_cast<int>(i);
          break;
        }
    }
  }
  if (!d.tokens_differ && !d.logprobs_differ) d.text_differs = a.text != b.text || a.finish_reason != b.finish_reason;
  return d;
}

double RowDiff::median_position() const {
  std::vector<double> p(positions.begin(), positions.end());
  return median(std::move(p));
}

std::vector<int> RowDiff::all_differing() const {
  std::vector<int> all = token_diffs;
  all.insert(all.end(), logprob_only.begin(), logprob_only.end());
  all.insert(all.end(), text_only.begin(), text_only.end());
  std::sort(all.begin(), all.end());
  return all;
}

RowDiff compare_runs(const std::vector<Output>& reference, const std::vector<Output>& candidate) {
  if (reference.size() != candidate.size())
    throw Error("cannot compare runs of " + std::to_string(reference.size()) + " and " +
                std::to_string(candidate.size()) + " outputs");
  RowDiff r;
  r.total = static_cast<int>(reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    OutputDiff d = compare_outputs(reference[i], candidate[i]);
    if (static_cast<int>(d.basis) > static_cast<int>(r.basis)) r.basis = d.basis;
    if (d.tokens_differ) {
      r.token_diffs.push_back(static_cast<int>(i));
      r.positions.push_back(d.first_diff);
    } else if (d.logprobs_differ) {
      r.logprob_only.push_back(static_cast<int>(i));
    } else if (d.text_differs) {
      r.text_only.push_back(static_cast<int>(i));
    }
  }
  return r;
}

}  // namespace verbatim::client
