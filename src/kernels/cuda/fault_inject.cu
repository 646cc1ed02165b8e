// Real device faults for the server's failure tests on a GPU (VERBATIM_DEVICE_FAULT_AFTER_FORWARDS,
// VERBATIM_DEVICE_HANG_AFTER_FORWARDS; backend_factory.cpp): a kernel that stores through an
// address nothing maps (a sticky cudaErrorIllegalAddress: every later call on the context fails),
// or one that never returns (the stream's later work and the host's wait on it block for ever).
// Never launched unless a test's environment asks for it.
#include "kernels/cuda/common.cuh"

namespace verbatim::cuda {
namespace {

__device__ int g_never_set = 0;  // nothing writes it: the endless kernel's exit condition

__global__ void illegal_store_kernel(int* p) { *p = 1; }

__global__ void endless_kernel() {
  // A volatile load each round: an observable side effect, so the loop is not assumed to end.
  while (*static_cast<volatile int*>(&g_never_set) == 0) __nanosleep(1000);
}

}  // namespace

void launch_injected_fault(bool hang, cudaStream_t stream) {
  if (hang) {
    endless_kernel<<<1, 1, 0, stream>>>();
  } else {
    // Page 0 is never mapped on the device: the store faults.
    illegal_store_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(uintptr_t{16}));
  }
  VB_CUDA_LAUNCHED();
}

}  // namespace verbatim::cuda
