// Hot loops for AVX2 (+F16C): 16 lanes are 2 ymm registers; a 2x2 tile of accumulators
// (14 of 16 registers in the loop).
// Standard headers come before the target pragma so no inline library code is built for it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"

#pragma GCC target("avx2,f16c")
// Vectors never cross a non-inlined call here, so the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 reports the deliberately undefined registers inside the intrinsic headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define VB_ISA_AVX2 1  // simd.h: use this instruction set's intrinsics
#include "kernels/cpu/exp_impl.h"
#include "kernels/cpu/simd.h"

#define VB_ISA_NAMESPACE isa_avx2
#define VB_ISA_NAME "avx2"
#define VB_MR 2
#define VB_NR 2
#include "kernels/cpu/isa_body.inc"
