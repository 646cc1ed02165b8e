// Hot loops for AVX-512: 16 lanes are one zmm register; a 6x4 tile of accumulators (24 of 32
// registers; 6x4 measured 1.3x faster than 4x4 on a Xeon).
// Standard headers come before the target pragma so no inline library code is built for it.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx2")
// Vectors never cross a non-inlined call here, so the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 reports the deliberately undefined registers inside the intrinsic headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define VB_ISA_AVX512 1  // simd.h: use this instruction set's intrinsics
#include "kernels/cpu/exp_impl.h"
#include "kernels/cpu/simd.h"

#define VB_ISA_NAMESPACE isa_avx512
#define VB_ISA_NAME "avx512"
#define VB_MR 6
#define VB_NR 4
#include "kernels/cpu/isa_body.inc"
