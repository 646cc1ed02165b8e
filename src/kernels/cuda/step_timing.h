// VERBATIM_STEP_TIMING=1: where the wall time of each forward_sample goes, printed to stderr when
// the backend is destroyed (medians over the steps): the host's work before the step's graph or
// kernels are queued, the queueing calls, the sampler's setup, the wait for the GPU, and the GPU's
// span from the step's first queued operation to its last (CUDA events). wall - GPU span is the
// time the GPU sits idle between one step's result and the next step's work, the part an
// overlapped (asynchronous) scheduler could hide. Speed diagnostics only; off by default.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

class StepTiming {
 public:
  StepTiming() {
    on_ = env_int("VERBATIM_STEP_TIMING", 0) == 1;
    if (on_ && (cudaEventCreate(&gpu_begin_) != cudaSuccess || cudaEventCreate(&gpu_end_) != cudaSuccess)) on_ = false;
  }
  ~StepTiming() {
    if (on_ && !wall_.empty())
      std::fprintf(stderr,
                   "step timing (%zu steps, medians, us): wall %.1f, GPU span %.1f, host before queueing %.1f, "
                   "queueing %.1f, sampler setup %.1f, waiting for the GPU %.1f\n",
                   wall_.size(), median(wall_), median(gpu_), median(prep_), median(queue_), median(sample_),
                   median(wait_));
    if (gpu_begin_) cudaEventDestroy(gpu_begin_);
    if (gpu_end_) cudaEventDestroy(gpu_end_);
  }
  // The marks of one step, in order (each does nothing while the switch is off): begin
  // (forward_sample entered), queue_begin (right before the step's first stream operation: recorded
  // on `s`), queued (the layers are queued), sample_queued (the sampler and the copies back are
  // queued: recorded on `s`), done (the stream synchronized).
  void begin() {
    if (on_) t_[0] = now();
  }
  void queue_begin(cudaStream_t s) {
    if (!on_) return;
    t_[1] = now();
    cudaEventRecord(gpu_begin_, s);
  }
  void queued() {
    if (on_) t_[2] = now();
  }
  void sample_queued(cudaStream_t s) {
    if (!on_) return;
    t_[3] = now();
    cudaEventRecord(gpu_end_, s);
  }
  void done() {
    if (!on_) return;
    t_[4] = now();
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, gpu_begin_, gpu_end_) != cudaSuccess) return;
    wall_.push_back(t_[4] - t_[0]);
    prep_.push_back(t_[1] - t_[0]);
    queue_.push_back(t_[2] - t_[1]);
    sample_.push_back(t_[3] - t_[2]);
    wait_.push_back(t_[4] - t_[3]);
    gpu_.push_back(double(ms) * 1e3);
  }

 private:
  static double now() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  static double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }
  bool on_ = false;
  cudaEvent_t gpu_begin_ = nullptr, gpu_end_ = nullptr;
  double t_[5] = {};
  std::vector<double> wall_, gpu_, prep_, queue_, sample_, wait_;
};

}  // namespace verbatim::cuda
