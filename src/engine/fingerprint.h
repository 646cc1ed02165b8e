#pragma once
// system_fingerprint: what decides the bits of a response. Two servers with equal fingerprints
// give the same tokens and logprobs for the same request (design.md).
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "model/weights.h"

namespace verbatim {

struct Fingerprint {
  std::vector<std::pair<std::string, std::string>> parts;  // (name, value), in a fixed order
  std::string short_hash;                                  // "fp_" + 12 hex digits over the parts
};

// Parts: weights (digest, hex), dtype, engine (VERBATIM_VERSION), device, kernels.
// NOT parts: batch size, chunk size (max_num_batched_tokens), max_num_seqs, KV block count and
// size, prefix caching, preemption: under the numeric contract none of them changes a bit, and the
// invariance tests (tests/engine_test.cpp) hold the engine to that.
Fingerprint make_fingerprint(const std::string& weights_digest_hex, const Backend& backend);
// Same, computing the digest (reads every weight once).
Fingerprint make_fingerprint(const ModelWeights& weights, const Backend& backend);

}  // namespace verbatim
