// Hot loops for baseline x86-64 (SSE2): 16 lanes are 4 xmm registers; a 2x1 tile of
// accumulators (16 registers in the loop).
// Standard headers come before the target pragma so no inline library code is built for it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"


// Vectors never cross a non-inlined call here, so the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "kernels/cpu/exp_impl.h"
#include "kernels/cpu/simd.h"

#define VB_ISA_NAMESPACE isa_generic
#define VB_ISA_NAME "generic"
#define VB_MR 2
#define VB_NR 1
#include "kernels/cpu/isa_body.inc"
