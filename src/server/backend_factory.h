#pragma once
// The one place that picks a Backend by device name: "cpu" always, "cuda" / "cuda:N" when built
// with VERBATIM_HAVE_CUDA (the CUDA backend's branch lives in backend_factory.cpp).
#include <memory>
#include <string>

#include "core/dtype.h"
#include "engine/backend.h"

namespace verbatim::server {

struct BackendOptions {
  int device_index = 0;           // N of "cuda:N"
  std::string kernels = "contract";  // "contract" (bit-identical) or "fast" (breaks it, to measure its cost)
  double gpu_memory_utilization = 0.9;  // cuda: share of device memory for weights + KV + scratch
};

struct DeviceSpec {
  std::string kind;  // "cpu" or "cuda"
  int index = 0;
};
// "cpu", "cuda", "cuda:1"; throws Error on anything else or on cuda in a build without CUDA.
DeviceSpec parse_device(const std::string& device);

// "auto": the checkpoint's dtype (config.json), as vLLM's --dtype auto; else parse_dtype.
DType resolve_dtype(const std::string& dtype, const std::string& model_dir);

std::unique_ptr<Backend> make_backend(const std::string& device, const std::string& model_dir, DType dtype,
                                      BackendOptions options = {});

}  // namespace verbatim::server
