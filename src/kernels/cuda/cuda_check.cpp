#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"
#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  std::string f = file;
  const size_t slash = f.rfind('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  throw Error(std::string("CUDA error in ") + what + " (" + f + ":" + std::to_string(line) +
              "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace verbatim::cuda
