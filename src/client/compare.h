#pragma once
// Compares two answers to the same prompt the strict way: token ids (else the logprobs' token
// strings, else the text's bytes) and then every logprob bit for bit.
#include <string>
#include <vector>

#include "client/generation.h"

namespace verbatim::client {

enum class CompareBasis { TokenIds, TokenStrings, TextBytes };
const char* basis_name(CompareBasis b);  // "token ids", "token strings", "text bytes"
CompareBasis common_basis(const Output& a, const Output& b);

struct OutputDiff {
  bool tokens_differ = false;
  int first_diff = -1;            // first differing position (token index, or byte for TextBytes)
  bool logprobs_differ = false;   // same tokens, but a logprob's bits differ
  int first_logprob_diff = -1;
  CompareBasis basis = CompareBasis::TokenIds;
  bool differs() const { return tokens_differ || logprobs_differ; }
};

OutputDiff compare_outputs(const Output& a, const Output& b);

// One row of the seed page's table: `candidate` against `reference`, prompt by prompt.
struct RowDiff {
  int total = 0;
  std::vector<int> token_diffs;    // prompt indices whose tokens differ
  std::vector<int> positions;      // their first differing positions, same order
  std::vector<int> logprob_only;   // prompt indices with equal tokens but different logprob bits
  CompareBasis basis = CompareBasis::TokenIds;  // the weakest basis any pair had to use
  double median_position() const;  // NaN when nothing differs
  std::vector<int> all_differing() const;  // token_diffs and logprob_only, sorted
};

RowDiff compare_runs(const std::vector<Output>& reference, const std::vector<Output>& candidate);

}  // namespace verbatim::client
