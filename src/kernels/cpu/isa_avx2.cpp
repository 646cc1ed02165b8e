// Hot loops for AVX2: 16 lanes are 2 ymm registers; 2x3 tile of accumulators fits 16 registers.
// Standard headers come before the target pragma so no inline library code is built for it.
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"

#pragma GCC target("avx2")
// Vectors never cross a non-inlined call here, so the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "kernels/cpu/exp_impl.h"
#include "kernels/cpu/simd.h"

#define VB_ISA_NAMESPACE isa_avx2
#define VB_ISA_NAME "avx2"
#define VB_MR 2
#define VB_NR 3
#include "kernels/cpu/isa_body.inc"
