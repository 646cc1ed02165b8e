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
  // --tensor-parallel-size: GPUs device .. device + N - 1, one thread each (docs/tensor-parallel.md).
  // make_cuda_backend builds the N-rank driver (cuda_tp_backend.h) when N > 1.
  int tensor_parallel_size = 1;
  // Row-parallel combine (o_proj, down_proj) at N > 1. "allgather": the contract: every rank's fp32
  // K-segment partials are all-gathered (a copy) and summed in segment order, the bits of N = 1.
  // "allreduce": NCCL's sum of per-rank sums (bits change with N): only to measure the contract's
  // cost and as the tests' control; it changes the kernel config (fingerprint).
  std::string tp_reduce = "allgather";
  // Set by the tensor-parallel driver on each rank's backend (never by users): this rank's index and
  // its ncclComm_t. A CudaBackend with tensor_parallel_size > 1 is one rank of N.
  int tp_rank = 0;
  void* tp_comm = nullptr;
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
  size_t kv_bytes() const;          // the KV cache allocate_kv made (its blocks + the scratch block)
  void synchronize();
  // Tensor-parallel ranks (the driver calls it on every rank's thread at once, after construction):
  // eager all-gathers on the gather buffers, so NCCL's connections exist before any CUDA graph
  // captures a collective (session 2's failing TP runs were the ones whose first collective was a
  // captured one).
  void tp_warm_up();
  // Tests only (VERBATIM_DEVICE_FAULT_AFTER_FORWARDS / _HANG_): queues a kernel on this backend's
  // stream that faults for real (hang = false: an illegal address, sticky for the context) or never
  // returns, so the work queued after it fails or waits for ever as a real fault would make it.
  void inject_device_fault(bool hang);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Loads the checkpoint in `model_dir` and builds a CUDA backend computing in `dtype` (BF16 or F16);
// with options.tensor_parallel_size > 1, the tensor-parallel driver over that many GPUs.
std::unique_ptr<Backend> make_cuda_backend(const std::string& model_dir, DType dtype, CudaOptions options = {});

// True when the CUDA runtime sees at least one device (tests skip themselves otherwise).
bool cuda_device_available();
// CUDA devices the runtime sees (0 when none or no driver).
int cuda_device_count();

}  // namespace verbatim
