#pragma once
// Tensor parallelism on N GPUs of one process: N CudaBackend ranks (each holding its Megatron
// shard, its KV heads and an ncclComm_t from ncclCommInitAll) and one worker thread per GPU. Each
// engine step is handed to all N threads at once; each runs its rank's forward (graph or eager)
// with the collectives in the same order, rank 0 samples and its results are returned, and the
// step ends when every thread is done (a barrier). One thread per GPU rather than one thread
// driving all GPUs: each rank's step is the one-GPU code path, and NCCL needs no group calls.
// Numerics (docs/tensor-parallel.md): the bits of one GPU at every N (tests/cuda_tp_test).
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/nccl_comm.h"

namespace verbatim {

class CudaTpBackend : public Backend {
 public:
  // options.tensor_parallel_size GPUs from options.device on. Throws Error when the model cannot
  // be split that way, fewer GPUs are visible, or NCCL cannot be loaded.
  CudaTpBackend(const std::string& model_dir, DType dtype, CudaOptions options);
  ~CudaTpBackend() override;
  CudaTpBackend(const CudaTpBackend&) = delete;
  CudaTpBackend& operator=(const CudaTpBackend&) = delete;

  void allocate_kv(int num_blocks, int block_size) override;
  size_t kv_block_bytes(int block_size) const override;  // per rank: every rank holds that many blocks
  void forward_logits(const ForwardBatch& batch, float* logits) override;
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override;
  const ModelConfig& config() const override;
  DType dtype() const override;
  std::string device_name() const override;    // "NVIDIA H200 (sm_90) x2, tensor parallel (NCCL 2.28.3)"
  std::string kernel_config() const override;  // rank 0's: the same string as one GPU (same bits)
  size_t kv_budget_bytes() const override;     // the smallest rank's

  int tp_size() const { return int(ranks_.size()); }
  CudaBackend& rank(int r) { return *ranks_[size_t(r)]; }

 private:
  // Runs job(r) on every rank's thread at once; returns when all are done; rethrows the first
  // failure (after aborting the communicators, so no rank waits forever on a failed peer).
  void run_all(const std::function<void(int)>& job);
  void worker(int r);

  std::vector<cuda::NcclComm> comms_;
  std::vector<std::unique_ptr<CudaBackend>> ranks_;
  std::string nccl_version_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  std::function<void(int)> job_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false, broken_ = false;
  std::atomic<bool> aborted_{false};  // the communicators were aborted (after a failure) or destroyed
  std::vector<std::exception_ptr> errors_;
};

std::unique_ptr<Backend> make_cuda_tp_backend(const std::string& model_dir, DType dtype, CudaOptions options);

}  // namespace verbatim
