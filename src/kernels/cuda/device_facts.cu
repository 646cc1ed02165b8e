// device_facts.h: nominal clocks from the driver, the running SM clock measured by a kernel.
#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/device_facts.h"

namespace verbatim::cuda {

namespace {

// Cycles per nanosecond of %globaltimer, x 1000 = MHz. One thread: the clock, not the SMs' work,
// is measured; the window is long against the timer's ~1 us resolution.
__global__ void clock_probe_kernel(unsigned long long window_ns, double* mhz) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < window_ns);
  const long long c1 = clock64();
  *mhz = double(c1 - c0) / double(t1 - t0) * 1e3;
}

int attribute(cudaDeviceAttr a, int index) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, index) != cudaSuccess) throw Error("cannot read an attribute of GPU " + std::to_string(index));
  return v;
}

}  // namespace

DeviceFacts device_facts(int index) {
  DeviceFacts f;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) throw Error("cannot read the properties of GPU " + std::to_string(index));
  f.name = p.name;
  f.sm_count = p.multiProcessorCount;
  f.sm_clock_max_mhz = attribute(cudaDevAttrClockRate, index) / 1000;
  f.mem_clock_max_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000;
  cudaDriverGetVersion(&f.driver_version);
  cudaRuntimeGetVersion(&f.runtime_version);
  return f;
}

double measure_sm_clock_mhz(int index) {
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(index) != cudaSuccess) return -1;
  double* d = nullptr;
  double mhz = -1;
  // Synchronize first: the probe measures the clock the work before it left, not its own queue wait.
  if (cudaDeviceSynchronize() == cudaSuccess && cudaMalloc(&d, sizeof(double)) == cudaSuccess) {
    clock_probe_kernel<<<1, 1>>>(1000000ull, d);
    if (cudaMemcpy(&mhz, d, sizeof(double), cudaMemcpyDeviceToHost) != cudaSuccess) mhz = -1;
    cudaFree(d);
  }
  cudaGetLastError();  // a failed probe leaves no sticky error for the caller's next call
  cudaSetDevice(prev);
  return mhz;
}

}  // namespace verbatim::cuda
