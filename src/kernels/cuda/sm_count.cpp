// SMs of the current device, read once per device (kernels.h sm_count).
#include <atomic>

#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

namespace {
std::atomic<int> g_sm_count[64];
}  // namespace

int sm_count() {
  int dev = 0;
  VB_CUDA(cudaGetDevice(&dev));
  int n = g_sm_count[dev & 63].load(std::memory_order_relaxed);
  if (n == 0) {
    VB_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    g_sm_count[dev & 63].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace verbatim::cuda
