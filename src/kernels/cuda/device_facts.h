#pragma once
// What a benchmark records about the GPU beside its timings (engine-bench, gemm-bench): the
// nominal clocks, and the SM clock measured at a moment, which shows a throttled GPU where the
// nominal clock would not. Host-only header: no CUDA types.
#include <string>

namespace verbatim::cuda {

struct DeviceFacts {
  std::string name;
  int sm_count = 0;
  int sm_clock_max_mhz = 0;   // the peak SM clock the driver reports
  int mem_clock_max_mhz = 0;  // the peak memory clock
  int driver_version = 0;     // e.g. 13000 for CUDA 13.0
  int runtime_version = 0;
};

// Facts of device `index`; throws Error when it cannot be read.
DeviceFacts device_facts(int index);

// The SM clock of device `index` right after everything queued on it has finished, in MHz: one
// thread spins 20 M clock64() cycles, timed from the host. It sees a clock held low after the work
// (heat, a locked or slower card), not a power cap that lifts as soon as the work stops. Negative
// when it cannot run.
double measure_sm_clock_mhz(int index);

}  // namespace verbatim::cuda
