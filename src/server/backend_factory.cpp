#include "server/backend_factory.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/error.h"
#include "engine/cpu_backend.h"
#include "engine/fault_backend.h"
#include "model/config.h"
#ifdef VERBATIM_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace verbatim::server {

DeviceSpec parse_device(const std::string& device) {
  DeviceSpec d;
  if (device == "cpu") {
    d.kind = "cpu";
    return d;
  }
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
#ifndef VERBATIM_HAVE_CUDA
    throw Error("--device " + device + ": this verbatim was built without CUDA (nvcc was not found at build time)");
#endif
    d.kind = "cuda";
    if (device != "cuda") {  // "cuda:N": the number is required
      std::string idx = device.substr(5);
      if (idx.empty() || idx.size() > 3 || idx.find_first_not_of("0123456789") != std::string::npos)
        throw Error("--device " + device + ": expected cuda or cuda:N");
      d.index = std::stoi(idx);
    }
    return d;
  }
  throw Error("--device " + device + ": expected cpu, cuda or cuda:N");
}

DType resolve_dtype(const std::string& dtype, const std::string& model_dir) {
  if (dtype == "auto") return ModelConfig::load(model_dir).dtype;
  return parse_dtype(dtype);
}

void validate_backend_options(const DeviceSpec& d, const BackendOptions& options) {
  if (options.kernels != "contract" && options.kernels != "fast")
    throw Error("--mode " + options.kernels + ": expected contract or fast");
  // Written as a negated range test so NaN is refused too.
  if (!(options.gpu_memory_utilization > 0.0 && options.gpu_memory_utilization <= 1.0)) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", options.gpu_memory_utilization);
    throw Error(std::string("--gpu-memory-utilization ") + v + ": expected a share of the device's memory in (0, 1]");
  }
  // The CPU reference has only the contract kernels; silently running them for --mode fast would
  // report the contract's cost as zero.
  if (d.kind == "cpu" && options.kernels == "fast")
    throw Error("--mode fast: only --device cuda has fast kernels (the CPU backend always obeys the contract)");
  if (options.tp_reduce != "allgather" && options.tp_reduce != "allreduce")
    throw Error("--tp-reduce " + options.tp_reduce + ": expected allgather or allreduce");
  if (options.tensor_parallel_size < 1)
    throw Error("--tensor-parallel-size " + std::to_string(options.tensor_parallel_size) + ": expected 1, 2, 4 or 8");
  if (options.tensor_parallel_size != 1 && d.kind != "cuda")
    throw Error("--tensor-parallel-size " + std::to_string(options.tensor_parallel_size) +
                ": needs --device cuda (the CPU backend runs on one device)");
}

namespace {

// VERBATIM_FAULT_AFTER_FORWARDS / VERBATIM_HANG_AFTER_FORWARDS (tests only): N: the backend's
// forward calls fail (or never return) after N good ones; file:PATH: from the first call made once
// PATH exists. Read before anything loads.
struct InjectedFault {
  bool on = false;
  int64_t after = 0;
  std::string file;
};

InjectedFault injected(const char* name, const char* what) {
  InjectedFault f;
  const char* env = std::getenv(name);
  if (!env || !*env) return f;
  const std::string v = env;
  f.on = true;
  if (v.rfind("file:", 0) == 0 && v.size() > 5) {
    f.file = v.substr(5);
    std::fprintf(stderr, "verbatim: %s=%s: forward calls %s once that file exists (a test's fault)\n", name,
                 v.c_str(), what);
    return f;
  }
  if (v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
    throw Error(std::string(name) + "=" + v + ": expected a count of forward calls (0 to 999999999) or file:PATH");
  f.after = std::stoll(v);
  std::fprintf(stderr, "verbatim: %s=%s: forward calls %s after %s (a test's fault)\n", name, v.c_str(), what,
               v.c_str());
  return f;
}

std::unique_ptr<Backend> make_device_backend(const std::string& device, const std::string& model_dir, DType dtype,
                                             BackendOptions options) {
  DeviceSpec d = parse_device(device);
  validate_backend_options(d, options);
  if (d.kind == "cpu") return make_cpu_backend(model_dir, dtype);
#ifdef VERBATIM_HAVE_CUDA
  if (d.kind == "cuda") {
    CudaOptions co;
    co.device = d.index;
    co.fast = options.kernels == "fast";
    co.gpu_memory_utilization = options.gpu_memory_utilization;
    co.tensor_parallel_size = options.tensor_parallel_size;  // > visible GPUs or heads: CudaTpBackend says so
    co.tp_reduce = options.tp_reduce;
    return make_cuda_backend(model_dir, dtype, co);
  }
#endif
  throw Error("--device " + device + ": no backend for this device in this build");
}

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& device, const std::string& model_dir, DType dtype,
                                      BackendOptions options) {
  const InjectedFault fault = injected("VERBATIM_FAULT_AFTER_FORWARDS", "fail");
  const InjectedFault hang = injected("VERBATIM_HANG_AFTER_FORWARDS", "never return");
  // The same on the GPU itself: a kernel that faults for real (or never returns) is queued before
  // the forward call's work, which then meets the sticky error (or waits behind it).
  const InjectedFault device_fault = injected("VERBATIM_DEVICE_FAULT_AFTER_FORWARDS", "meet a real device fault");
  const InjectedFault device_hang = injected("VERBATIM_DEVICE_HANG_AFTER_FORWARDS", "wait on a kernel that never ends");
  if ((device_fault.on || device_hang.on) && (parse_device(device).kind != "cuda" || options.tensor_parallel_size != 1))
    throw Error(std::string(device_fault.on ? "VERBATIM_DEVICE_FAULT_AFTER_FORWARDS" : "VERBATIM_DEVICE_HANG_AFTER_FORWARDS") +
                ": needs --device cuda with --tensor-parallel-size 1 (the CPU backend has no device to fault)");
  std::unique_ptr<Backend> b = make_device_backend(device, model_dir, dtype, options);
#ifdef VERBATIM_HAVE_CUDA
  // The GPU backend itself, before any wrapper: both hooks may be set, each wrapping the last.
  auto* cuda = dynamic_cast<CudaBackend*>(b.get());
  for (const auto& [f, hangs] : {std::pair{device_fault, false}, std::pair{device_hang, true}}) {
    if (!f.on) continue;
    if (!cuda) throw Error("VERBATIM_DEVICE_*_AFTER_FORWARDS: the backend is not a single-GPU CUDA backend");
    b = std::make_unique<FaultBackend>(std::move(b), f.after, FaultBackend::Kind::Device, f.file,
                                       [cuda, hangs = hangs] { cuda->inject_device_fault(hangs); });
  }
#endif
  if (fault.on) b = std::make_unique<FaultBackend>(std::move(b), fault.after, FaultBackend::Kind::Throw, fault.file);
  if (hang.on) b = std::make_unique<FaultBackend>(std::move(b), hang.after, FaultBackend::Kind::Hang, hang.file);
  return b;
}

}  // namespace verbatim::server
