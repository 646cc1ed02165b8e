#pragma once
// The CUDA backend: the Qwen3 forward pass of engine/cpu_backend.cpp (same ops, same order, same
// rounding points) on the kernels of kernels/cuda/, with the weights and the paged KV cache in
// device memory (plain cudaMalloc). Default mode obeys the numeric contract (design.md); `fast`
// breaks it on purpose (cuBLAS with its own heuristics, split-KV parts chosen from the batch) so
// the contract's cost can be measured in the same binary.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "model/weights.h"

namespace verbatim {

struct CudaOptions {
  int device = 0;                       // cuda:N
  bool fast = false;                    // --mode fast: contract off, to measure its cost
  double gpu_memory_utilization = 0.9;  // share of the device's memory this process may hold
  int max_tokens = 2048;                // activation capacity in tokens (grows on demand)
  bool cuda_graphs = true;              // replay captured decode steps (per batch-size bucket)
};

class CudaBackend : public Backend {
 public:
  CudaBackend(ModelWeights weights, DType dtype, CudaOptions options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  void allocate_kv(int num_blocks, int block_size) override;
  size_t kv_block_bytes(int block_size) const override;
  void forward_logits(const ForwardBatch& batch, float* logits) override;
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override;
  const ModelConfig& config() const override;
  DType dtype() const override;
  std::string device_name() const override;  // "NVIDIA H200 (sm_90)"
  std::string kernel_config() const override;
  // gpu_memory_utilization x device memory, minus what this process already holds.
  size_t kv_budget_bytes() const override;

  const CudaOptions& options() const;
  size_t weight_bytes() const;      // bytes of weights on the device
  size_t device_bytes_held() const; // everything this backend allocated (weights, KV, scratch)
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Loads the checkpoint in `model_dir` and builds a CUDA backend computing in `dtype` (BF16 or F16).
std::unique_ptr<Backend> make_cuda_backend(const std::string& model_dir, DType dtype, CudaOptions options = {});

// True when the CUDA runtime sees at least one device (tests skip themselves otherwise).
bool cuda_device_available();

}  // namespace verbatim
