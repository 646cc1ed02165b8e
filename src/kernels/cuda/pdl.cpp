// The switch of the programmatic dependent launches (common.cuh pdl_launch): the environment
// (read once) and the scope a backend step or an op sets on its thread.
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

int env_int(const char* name, int dflt) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoi(e) : dflt;
}

namespace {

thread_local bool t_scope_on = true;  // per thread: tensor-parallel ranks run one thread each

}  // namespace

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("VERBATIM_PDL");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on && t_scope_on;
}

PdlScope::PdlScope(bool on) : saved_(t_scope_on) { t_scope_on = saved_ && on; }
PdlScope::~PdlScope() { t_scope_on = saved_; }

bool pdl_for_rows(int rows) {
  static const int max_rows = env_int("VERBATIM_PDL_MAX_ROWS", kPdlMaxRowsDefault);
  return max_rows <= 0 || rows <= max_rows;
}

bool pdl_for_attention() {
  static const bool on = env_int("VERBATIM_PDL_ATTN", 1) != 0;
  return on;
}

}  // namespace verbatim::cuda
