#pragma once
// Host-side sampling of one logit row (the CPU reference of contract 5).
//
// sample_row, step by step (every backend that samples must follow it to the bit):
//  1. logprobs: m = max of the raw fp32 logits; s = sum of expf(x - m) in id order (fp32, one
//     accumulator); logprob(i) = (x_i - m) - logf(s). Reported for the chosen / scored token and
//     the top-n (by logprob desc, ties to the lower id). Temperature and filters do not change them.
//  2. score_token >= 0: that token is the result (prompt logprobs); nothing is drawn.
//  3. temperature == 0: greedy, the argmax of the raw logits over ids not banned, ties to the
//     lowest id.
//  4. otherwise, over the ids not banned: z_i = x_i / T, w_i = expf(z_i - max z) (the top has w = 1);
//     ids with w == 0 can never be drawn and are dropped (exact: they add 0 to every sum below);
//     order by (raw logit desc, id asc); top-k keeps the first k; top-p keeps the shortest prefix
//     whose fp32 running sum of w (in that order) reaches top_p * total; min-p keeps w_i >= min_p;
//     then ONE uniform u = sample_uniform(seed, stream, position) and the first kept id whose
//     running sum of w exceeds u * total (sum over the kept set, same order) is the token.
#include <cstdint>

#include "engine/backend.h"

namespace verbatim {

// Philox4x32-10 (Salmon et al., SC'11, as in Random123): four 32-bit words for (key, counter).
// key = (low 32 bits, high 32 bits) of `key`; counter words = (lo.low, lo.high, hi.low, hi.high).
struct Philox4 { uint32_t v[4]; };
Philox4 philox4x32_10(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);
// A float in [0, 1) drawn from (seed, stream, position): the one draw that picks a sampled token.
// Philox(key = seed, counter = (stream, position)), word 0, top 24 bits, times 2^-24 (exact in fp32).
float sample_uniform(uint64_t seed, uint64_t stream, int64_t position);

// Samples (or scores, if spec.score_token >= 0) one row of `vocab` fp32 logits.
// Throws Error if score_token is outside [0, vocab); banned ids outside it are ignored.
SampleResult sample_row(const float* logits, int vocab, const SampleSpec& spec);

}  // namespace verbatim
