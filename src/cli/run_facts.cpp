#include "cli/run_facts.h"

#include <unistd.h>

#include <string_view>

#include "cli/build_info.h"
#include "server/backend_factory.h"
#ifdef VERBATIM_HAVE_CUDA
#include "kernels/cuda/device_facts.h"
#endif

extern char** environ;

namespace verbatim::cli {

int cuda_device_index(const std::string& device) {
  const server::DeviceSpec d = server::parse_device(device);
  return d.kind == "cuda" ? d.index : -1;
}

nlohmann::json run_facts() {
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = kv.substr(0, eq);
    for (std::string_view prefix : {"VERBATIM_", "CUDA_", "NCCL_"})
      if (name.substr(0, prefix.size()) == prefix) env[std::string(name)] = std::string(kv.substr(eq + 1));
  }
  return {{"commit", build_commit()}, {"environment", env}};
}

nlohmann::json gpu_facts(const std::string& device) {
#ifdef VERBATIM_HAVE_CUDA
  const int index = cuda_device_index(device);
  if (index < 0) return nullptr;
  const cuda::DeviceFacts f = cuda::device_facts(index);
  return {{"name", f.name},
          {"index", index},
          {"sm_count", f.sm_count},
          {"sm_clock_max_mhz", f.sm_clock_max_mhz},
          {"mem_clock_max_mhz", f.mem_clock_max_mhz},
          {"driver_version", f.driver_version},
          {"runtime_version", f.runtime_version}};
#else
  (void)device;
  return nullptr;
#endif
}

nlohmann::json sm_clock_now(const std::string& device) {
#ifdef VERBATIM_HAVE_CUDA
  const int index = cuda_device_index(device);
  if (index < 0) return nullptr;
  const double mhz = cuda::measure_sm_clock_mhz(index);
  return mhz > 0 ? nlohmann::json(mhz) : nlohmann::json(nullptr);
#else
  (void)device;
  return nullptr;
#endif
}

}  // namespace verbatim::cli
