// exp_f32 and silu_f32: a fixed recipe (exp_impl.h) instead of libm, whose result can differ
// between library versions and between the FMA / non-FMA code paths it picks at run time.
#include "kernels/cpu/exp_impl.h"
#include "kernels/ops.h"

namespace verbatim::cpu {

float exp_f32(float x) { return detail::exp_inline(x); }

float silu_f32(float x) { return x / (1.0f + detail::exp_inline(-x)); }

}  // namespace verbatim::cpu
