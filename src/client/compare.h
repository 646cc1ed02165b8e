#pragma once
// Compares two answers to the same prompt the strict way: token ids (else the logprobs' token
// strings, else the text's bytes), then every logprob bit for bit, then what a client reads
// besides the tokens (the text, the finish reason).
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
  // Same tokens and logprobs, but the text or finish_reason differs (a server that detokenizes,
  // stops or reports differently for the same tokens): a client reads those too.
  bool text_differs = false;
  CompareBasis basis = CompareBasis::TokenIds;
  bool differs() const { return tokens_differ || logprobs_differ || text_differs; }
};

OutputDiff compare_outputs(const Output& a, const Output& b);

// One row of the seed page's table: `candidate` against `reference`, prompt by prompt.
struct RowDiff {
  int total = 0;
  std::vector<int> token_diffs;    // prompt indices whose tokens differ
  std::vector<int> positions;      // their first differing positions, same order
  std::vector<int> logprob_only;   // prompt indices with equal tokens but different logprob bits
  std::vector<int> text_only;      // equal tokens and logprobs, different text or finish_reason
  CompareBasis basis = CompareBasis::TokenIds;  // the weakest basis any pair had to use
  double median_position() const;  // NaN when nothing differs
  std::vector<int> all_differing() const;  // token_diffs, logprob_only and text_only, sorted
};

RowDiff compare_runs(const std::vector<Output>& reference, const std::vector<Output>& candidate);

}  // namespace verbatim::client
