// device_facts.h: nominal clocks from the driver, the running SM clock measured by a kernel.
#include <cuda_runtime.h>

#include <chrono>

#include "core/error.h"
#include "kernels/cuda/device_facts.h"

namespace verbatim::cuda {

namespace {

// Spins one thread for `cycles` SM clock cycles: timed from the host, cycles / microseconds is the
// clock in MHz, on the host's steady clock rather than the GPU's own %globaltimer. (On an H100 both
// gave ~2,020-2,050 MHz after decode steps, above the 1,980 the driver calls its maximum, and ~1,978
// after a prefill: read it against other rows of the same card, not against the nominal figure.)
__global__ void spin_cycles_kernel(long long cycles) {
  const long long c0 = clock64();
  while (clock64() - c0 < cycles) {
  }
}

// Microseconds from launching a spin of `cycles` to its end, seen from the host.
double timed_spin_us(long long cycles) {
  const auto t0 = std::chrono::steady_clock::now();
  spin_cycles_kernel<<<1, 1>>>(cycles);
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
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
  double mhz = -1;
  // Synchronize first: the probe measures the clock the work before it left, not its own queue
  // wait; an empty spin timed just before gives the launch and synchronize overhead to subtract.
  constexpr long long kCycles = 20000000;  // ~10 ms at 2 GHz: the overhead is ~0.1% of it
  if (cudaDeviceSynchronize() == cudaSuccess && timed_spin_us(0) >= 0) {
    const double empty = timed_spin_us(0), spin = timed_spin_us(kCycles);
    if (empty >= 0 && spin > empty) mhz = double(kCycles) / (spin - empty);
  }
  cudaGetLastError();  // a failed probe leaves no sticky error for the caller's next call
  cudaSetDevice(prev);
  return mhz;
}

}  // namespace verbatim::cuda
