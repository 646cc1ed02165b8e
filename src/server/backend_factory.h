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
  int tensor_parallel_size = 1;   // cuda: --tensor-parallel-size (1, 2, 4, 8 GPUs from cuda:N on)
  std::string tp_reduce = "allgather";  // cuda, TP > 1: allgather (contract) | allreduce (cost measurement only)
};

struct DeviceSpec {
  std::string kind;  // "cpu" or "cuda"
  int index = 0;
};
// "cpu", "cuda", "cuda:1"; throws Error on anything else or on cuda in a build without CUDA.
DeviceSpec parse_device(const std::string& device);

// "auto": the checkpoint's dtype (config.json), as vLLM's --dtype auto; else parse_dtype.
DType resolve_dtype(const std::string& dtype, const std::string& model_dir);

// Throws Error for --mode other than contract|fast, --mode fast on the CPU, or a
// gpu_memory_utilization outside (0, 1]. make_backend calls it before loading anything.
void validate_backend_options(const DeviceSpec& device, const BackendOptions& options);

std::unique_ptr<Backend> make_backend(const std::string& device, const std::string& model_dir, DType dtype,
                                      BackendOptions options = {});

}  // namespace verbatim::server
