// The N-GPU tensor-parallel driver (cuda_tp_backend.h): N CudaBackend ranks, one thread each.
#include "kernels/cuda/cuda_tp_backend.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/cuda/tp_plan.h"
#include "model/config.h"
#include "model/weights.h"

namespace verbatim {

CudaTpBackend::CudaTpBackend(const std::string& model_dir, DType dtype, CudaOptions options) {
  const int N = options.tensor_parallel_size;
  // Shape checks before NCCL or any upload: the size, heads, KV heads, segments, vocabulary.
  cuda::check_tp_plan(ModelConfig::load(model_dir), N, model_dir + "/config.json");
  const int visible = cuda_device_count();
  if (options.device < 0 || options.device + N > visible)
    throw Error("--tensor-parallel-size " + std::to_string(N) + " from cuda:" + std::to_string(options.device) +
                " needs " + std::to_string(options.device + N) + " GPUs; " + std::to_string(visible) + " visible");
  std::vector<int> devices;
  for (int r = 0; r < N; ++r) devices.push_back(options.device + r);
  nccl_version_ = cuda::nccl_version();
  comms_ = cuda::nccl_init_all(devices);
  try {
    for (int r = 0; r < N; ++r) {
      CudaOptions o = options;
      o.tp_rank = r;
      o.tp_comm = comms_[size_t(r)];
      // Each rank maps the checkpoint itself (the page cache is shared) and uploads only its shard.
      ranks_.push_back(std::make_unique<CudaBackend>(ModelWeights::load(model_dir), dtype, o));
    }
  } catch (...) {
    ranks_.clear();
    for (cuda::NcclComm c : comms_) cuda::nccl_destroy(c);
    throw;
  }
  errors_.resize(size_t(N));
  for (int r = 0; r < N; ++r) threads_.emplace_back([this, r] { worker(r); });
  // Eager collectives first: NCCL connects before any step's CUDA graph captures one.
  try {
    run_all([&](int r) { ranks_[size_t(r)]->tp_warm_up(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    start_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    ranks_.clear();
    if (!aborted_.exchange(true))
      for (cuda::NcclComm c : comms_) cuda::nccl_destroy(c);
    throw;
  }
}

CudaTpBackend::~CudaTpBackend() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  ranks_.clear();  // before the communicators their graphs captured
  if (!aborted_.exchange(true))
    for (cuda::NcclComm c : comms_) cuda::nccl_destroy(c);
}

void CudaTpBackend::worker(int r) {
  uint64_t seen = 0;
  for (;;) {
    std::function<void(int)> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr err;
    try {
      job(r);
    } catch (...) {
      err = std::current_exception();
      // Peers may be blocked in a collective this rank will never join: abort every communicator
      // (once, whichever rank fails first) so their waits end in an error instead of a hang; the
      // backend is unusable afterwards.
      if (!aborted_.exchange(true))
        for (cuda::NcclComm c : comms_) cuda::nccl_abort(c);
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (err) {
      errors_[size_t(r)] = err;
      broken_ = true;
    }
    if (--pending_ == 0) done_cv_.notify_all();
  }
}

void CudaTpBackend::run_all(const std::function<void(int)>& job) {
  std::unique_lock<std::mutex> lk(mu_);
  if (broken_) throw Error("tensor parallel: an earlier step failed on a GPU; restart the server");
  job_ = job;
  std::fill(errors_.begin(), errors_.end(), nullptr);
  pending_ = int(ranks_.size());
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

void CudaTpBackend::allocate_kv(int num_blocks, int block_size) {
  // Every rank holds the same block ids (its own KV heads): the block manager stays shared.
  run_all([&](int r) { ranks_[size_t(r)]->allocate_kv(num_blocks, block_size); });
}

size_t CudaTpBackend::kv_block_bytes(int block_size) const { return ranks_[0]->kv_block_bytes(block_size); }

size_t CudaTpBackend::kv_budget_bytes() const {
  size_t b = ranks_[0]->kv_budget_bytes();
  for (const auto& r : ranks_) b = std::min(b, r->kv_budget_bytes());
  return b;
}

void CudaTpBackend::forward_logits(const ForwardBatch& batch, float* logits) {
  // Every rank validates the same batch and so throws at the same point, before any collective.
  run_all([&](int r) { ranks_[size_t(r)]->forward_logits(batch, r == 0 ? logits : nullptr); });
}

void CudaTpBackend::forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                                   std::vector<SampleResult>& out) {
  std::vector<std::vector<SampleResult>> per(ranks_.size());
  run_all([&](int r) { ranks_[size_t(r)]->forward_sample(batch, specs, per[size_t(r)]); });
  out = std::move(per[0]);
}

const ModelConfig& CudaTpBackend::config() const { return ranks_[0]->config(); }
DType CudaTpBackend::dtype() const { return ranks_[0]->dtype(); }
std::string CudaTpBackend::device_name() const {
  return ranks_[0]->device_name() + " x" + std::to_string(ranks_.size()) + ", tensor parallel (NCCL " + nccl_version_ +
         ")";
}
std::string CudaTpBackend::kernel_config() const { return ranks_[0]->kernel_config(); }

std::unique_ptr<Backend> make_cuda_tp_backend(const std::string& model_dir, DType dtype, CudaOptions options) {
  return std::make_unique<CudaTpBackend>(model_dir, dtype, options);
}

}  // namespace verbatim
