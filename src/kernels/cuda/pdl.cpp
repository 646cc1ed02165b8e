// The switch of the programmatic dependent launches (common.cuh pdl_launch), read once.
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("VERBATIM_PDL");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

}  // namespace verbatim::cuda
