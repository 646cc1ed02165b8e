#pragma once
// What the engine asks of a device: run one mixed batch (prefill chunks and decodes) through the
// model, writing K/V into the paged cache, and sample (or score) the rows that need a token.
// Implementations: cpu_backend.h (the reference) and kernels/cuda (the CUDA backend).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "model/weights.h"

namespace verbatim {

struct ForwardBatch {
  std::vector<int32_t> tokens;       // [T] token ids, sequence after sequence
  std::vector<int32_t> positions;    // [T] absolute position of each token in its sequence
  std::vector<int32_t> token_seq;    // [T] index into block_tables
  std::vector<std::vector<int32_t>> block_tables;  // per sequence: its KV block ids, in order
  std::vector<int32_t> logit_rows;   // indices into tokens whose next-token distribution is needed
};

// What to do with one logit row. Randomness comes from (seed, stream, position) alone, so a row
// samples the same token whatever batch or step it lands in (design.md, contract 5).
struct SampleSpec {
  float temperature = 0.0f;  // 0: greedy (argmax, ties to the lowest id)
  int top_k = 0;             // 0 or < 0: off
  float top_p = 1.0f;
  float min_p = 0.0f;
  uint64_t seed = 0;
  uint64_t stream = 0;       // choice index for n > 1
  int64_t position = 0;      // absolute position of the token being chosen
  int32_t score_token = -1;  // >= 0: do not sample, report this token's logprob (prompt logprobs)
  int num_top_logprobs = 0;  // how many top alternatives to report (0: none)
  bool want_logprob = false; // report the chosen token's logprob
  std::vector<int32_t> banned;  // never sampled (min_tokens masks eos/stop ids); logprobs unaffected
};

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;      // log_softmax of the raw logits (before temperature / filters)
  std::vector<std::pair<int32_t, float>> top;  // by logprob descending, ties by lower id
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Allocates the paged KV cache: num_blocks blocks of block_size tokens for every layer.
  virtual void allocate_kv(int num_blocks, int block_size) = 0;
  // Bytes one KV block takes across all layers (for capacity planning).
  virtual size_t kv_block_bytes(int block_size) const = 0;
  // Runs the batch; writes fp32 logits of each logit row: [logit_rows.size(), vocab].
  virtual void forward_logits(const ForwardBatch& batch, float* logits) = 0;
  // Runs the batch and samples/scores each logit row (specs[i] for logit_rows[i]).
  virtual void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                              std::vector<SampleResult>& out) = 0;
  virtual const ModelConfig& config() const = 0;
  virtual DType dtype() const = 0;              // activation / KV dtype
  virtual std::string device_name() const = 0;  // "cpu", "NVIDIA H200 (sm_90)"
  virtual std::string kernel_config() const = 0;  // everything in the kernels that changes bits
  // Memory the engine may give the KV cache when EngineOptions::num_kv_blocks is 0. The default
  // (2 GiB) suits the CPU reference; a GPU backend may report what its device has free.
  virtual size_t kv_budget_bytes() const { return size_t(2) << 30; }
};

// A Backend that forwards every call to one it borrows (and does not own): several engines, one
// after another, over one loaded model (tests, benchmarks). Override a call to change it.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& b) : b_(b) {}
  void allocate_kv(int num_blocks, int block_size) override { b_.allocate_kv(num_blocks, block_size); }
  size_t kv_block_bytes(int block_size) const override { return b_.kv_block_bytes(block_size); }
  void forward_logits(const ForwardBatch& batch, float* logits) override { b_.forward_logits(batch, logits); }
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override {
    b_.forward_sample(batch, specs, out);
  }
  const ModelConfig& config() const override { return b_.config(); }
  DType dtype() const override { return b_.dtype(); }
  std::string device_name() const override { return b_.device_name(); }
  std::string kernel_config() const override { return b_.kernel_config(); }
  size_t kv_budget_bytes() const override { return b_.kv_budget_bytes(); }

 protected:
  Backend& borrowed() { return b_; }

 private:
  Backend& b_;
};

}  // namespace verbatim
