#pragma once
// Host-side sampling of one logit row (the CPU reference of contract 5).
#include <cstdint>

#include "engine/backend.h"

namespace verbatim {

// Philox4x32-10: four 32-bit random words for (key, counter). Stateless.
struct Philox4 { uint32_t v[4]; };
Philox4 philox4x32_10(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);
// A float in [0, 1) drawn from (seed, stream, position): the one draw that picks a sampled token.
float sample_uniform(uint64_t seed, uint64_t stream, int64_t position);

// Samples (or scores, if spec.score_token >= 0) one row of `vocab` fp32 logits.
SampleResult sample_row(const float* logits, int vocab, const SampleSpec& spec);

}  // namespace verbatim
