#pragma once
// Running requests through the Engine and comparing what came out, bit for bit: the shared
// scaffolding of the engine-level invariance tests (tests/cuda_invariance_test.cpp runs it on the
// GPU; the CPU tests can use it too). An Outcome is a request's token ids and the bits of every
// logprob it returned (chosen and top alternatives), so "equal" means equal to the last bit.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/engine.h"

namespace verbatim::test {

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<uint32_t> logprob_bits;  // per token: id, logprob bits, then each top entry's id and bits
  FinishReason reason = FinishReason::None;
  std::string error;
  bool operator==(const Outcome& o) const {
    return tokens == o.tokens && logprob_bits == o.logprob_bits && reason == o.reason;
  }
};

struct EngineRequest {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

// Lends one backend to engine after engine (each Engine owns its backend; the weights load once,
// which matters for the 8B shape on a GPU). Every Engine re-allocates the KV cache it asks for.
using BorrowedBackend = ForwardingBackend;

// Steps the engine until idle, appending every update to out[id]. Fails the test (and returns)
// if it never goes idle.
void drain(Engine& e, std::map<uint64_t, Outcome>& out);

// All requests queued at once, then drained: one outcome per request, in order.
std::vector<Outcome> run_together(Engine& e, const std::vector<EngineRequest>& reqs);

// Each request alone: queued only after the previous one finished (the caller's engine should
// have its prefix cache off, so nothing of an earlier request is reused).
std::vector<Outcome> run_one_by_one(Engine& e, const std::vector<EngineRequest>& reqs);

// "" when equal; else how many outcomes differ, the first one, and where its tokens (or only its
// logprob bits) first differ, plus any request error.
std::string compare_outcomes(const std::vector<Outcome>& want, const std::vector<Outcome>& got);

// Number of outcomes in got that differ from want (the controls count them).
int count_differences(const std::vector<Outcome>& want, const std::vector<Outcome>& got);

// Token ids from a counter-based draw (engine/sampler.h's sample_uniform): a pure function of
// (stream, i), the same on every machine.
std::vector<int32_t> random_ids(int vocab, uint64_t stream, int n);
// A pattern of `period` random ids repeated to `len` tokens: greedy continuations of it tend to
// loop, so n-gram drafts get accepted.
std::vector<int32_t> repeated_ids(int vocab, uint64_t stream, int period, int len);

}  // namespace verbatim::test
