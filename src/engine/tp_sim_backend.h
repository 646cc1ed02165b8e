#pragma once
// Tensor parallelism simulated on the CPU (docs/tensor-parallel.md): the weights are sharded N
// ways (N = 1, 2, 4, 8) exactly as N GPUs would hold them, each rank runs the Qwen3 forward pass
// with only its shard and its part of the KV cache, and the ranks meet only at collectives:
//   * embedding, vocabulary-parallel: each rank looks up the tokens in its vocabulary slice and
//     writes -0.0 elsewhere; the all-reduce adds them in rank order, exact (x + -0 = x);
//   * q/k/v, gate/up (column-parallel): each rank computes its heads / its intermediate slice;
//     KV heads are split by groups, or replicated when N > num_kv_heads (as vLLM does);
//   * o_proj, down_proj (row-parallel): each rank computes its subtree of the kTpChunks K-chunk
//     tree (cpu::matmul_kchunk_partial), the N subtree sums are all-gathered and every rank
//     finishes the same tree (cpu::combine_kchunk_partials): the bits of TP = 1 at every N;
//   * lm_head, vocabulary-parallel: each rank's logit columns, all-gathered.
// RMSNorm, RoPE, attention and sampling are replicated or head-local, hence exact. The ranks run
// one after another, phase by phase, in this process (no GPU); each owns its own buffers.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "model/weights.h"

namespace verbatim {

struct TpSimOptions {
  int tp_size = 1;  // 1, 2, 4 or 8 (a divisor of cpu::kTpChunks)
  // TEST ONLY: the naive row-parallel reduction (what a plain NCCL all-reduce gives): each rank
  // reduces its whole K slice as one dot and the ranks' sums are added in rank order. Its bits
  // depend on tp_size; tests use it to show that they can tell.
  bool naive_reduction_for_test = false;
};

class TpSimBackend : public Backend {
 public:
  // Throws Error when the model cannot be split tp_size ways (heads, KV heads, intermediate).
  TpSimBackend(ModelWeights weights, DType dtype, TpSimOptions opts);
  ~TpSimBackend() override;

  void allocate_kv(int num_blocks, int block_size) override;
  // All ranks' bytes together (with replicated KV heads counted on every rank holding them).
  size_t kv_block_bytes(int block_size) const override;
  void forward_logits(const ForwardBatch& batch, float* logits) override;
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override;
  const ModelConfig& config() const override { return weights_.config; }
  DType dtype() const override { return act_; }
  std::string device_name() const override;
  // The CPU reference's: the TP size changes no bit, so it is not part of the fingerprint.
  std::string kernel_config() const override;
  int tp_size() const { return opts_.tp_size; }

  struct Rank;  // one simulated GPU: its shard, its KV cache, its buffers (tp_sim_backend.cpp)

 private:
  // The collectives, each in a fixed order that does not depend on the batch or message size.
  void all_reduce_embedding(int64_t n);            // rank-order sum of the -0-padded lookups
  void all_gather_combine(int64_t T, int64_t H);   // gathers row-parallel partials, each rank combines

  ModelWeights weights_;
  DType act_;
  TpSimOptions opts_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  int num_blocks_ = 0, block_size_ = 0;
  std::vector<const float*> parts_;  // gather scratch
};

// Loads the checkpoint in `model_dir` and builds a tp_size-way simulated tensor-parallel backend.
std::unique_ptr<Backend> make_tp_sim_backend(const std::string& model_dir, DType dtype, int tp_size);

}  // namespace verbatim
