#pragma once
// The CPU reference backend: the Qwen3 forward pass on the kernels of kernels/ops.h, in fp32,
// bf16 or fp16 activations. Every other backend is compared against it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "model/weights.h"

namespace verbatim {

class CpuBackend : public Backend {
 public:
  // `dtype` is the compute (activation and KV cache) dtype. F32: weights upcast to fp32 once;
  // BF16/F16: weights converted to that dtype once if the checkpoint has another one.
  CpuBackend(ModelWeights weights, DType dtype);

  void allocate_kv(int num_blocks, int block_size) override;
  size_t kv_block_bytes(int block_size) const override;
  void forward_logits(const ForwardBatch& batch, float* logits) override;
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override;
  const ModelConfig& config() const override { return weights_.config; }
  DType dtype() const override { return act_; }
  std::string device_name() const override { return "cpu"; }
  std::string kernel_config() const override;

 private:
  // Checks the batch against the model and the cache; throws Error naming the offending field.
  void validate(const ForwardBatch& batch) const;
  WeightRef in_compute_dtype(const WeightRef& w);

  ModelWeights weights_;  // the mapped checkpoint (keeps the original tensors alive)
  DType act_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_;  // weights converted to act_, when needed
  WeightRef embed_, final_norm_, lm_head_;
  std::vector<LayerWeights> layers_;

  int num_blocks_ = 0, block_size_ = 0;
  std::vector<std::unique_ptr<uint8_t[]>> k_cache_, v_cache_;  // per layer

  // Scratch, reused across calls (the engine drives one backend from one thread).
  std::vector<float> x_, h_, q_, k_, v_, attn_, o_, gate_, up_, last_;
  std::vector<int32_t> slots_;
  std::vector<const int32_t*> tables_;
};

// Shared with the other CPU backends (tp_sim_backend.h):
// Converts n values of one dtype to another (exact when widening, round-to-nearest-even otherwise).
void convert_values(const void* src, DType from, void* dst, DType to, int64_t n);
// Checks a batch against the vocabulary and an allocated cache of num_blocks blocks of block_size;
// throws Error naming the offending field.
void validate_forward_batch(const ForwardBatch& b, int vocab_size, int num_blocks, int block_size);

// Loads the checkpoint in `model_dir` and builds a CPU backend computing in `dtype`.
std::unique_ptr<Backend> make_cpu_backend(const std::string& model_dir, DType dtype);

}  // namespace verbatim
