#pragma once
// What the benchmark JSON (engine-bench, gemm-bench) records beside its timings: the commit the
// binary was built from, the environment's speed knobs, and on CUDA the GPU with its clocks.
#include <nlohmann/json.hpp>
#include <string>

namespace verbatim::cli {

// "cuda" -> 0, "cuda:N" -> N, "cpu" -> -1; any other name throws server::parse_device's Error.
int cuda_device_index(const std::string& device);

// {"commit": build_commit(), "environment": every VERBATIM_*, CUDA_* and NCCL_* variable set}.
nlohmann::json run_facts();

// `device`'s GPU: name, SMs, nominal SM / memory clocks (MHz), driver and runtime versions; null
// for the CPU or a build without CUDA.
nlohmann::json gpu_facts(const std::string& device);

// The SM clock of `device`'s GPU measured now (MHz), after the queued work: null where there is
// none. Recorded after each timed section, so a throttled run shows in its own JSON.
nlohmann::json sm_clock_now(const std::string& device);

}  // namespace verbatim::cli
