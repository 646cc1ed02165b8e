// Hot loops for AVX-512: 16 lanes are one zmm register; 4x4 tile of accumulators.
// Standard headers come before the target pragma so no inline library code is built for it.
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/isa.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx2")
// Vectors never cross a non-inlined call here, so the ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include "kernels/cpu/exp_impl.h"
#include "kernels/cpu/simd.h"

#define VB_ISA_NAMESPACE isa_avx512
#define VB_ISA_NAME "avx512"
#define VB_MR 4
#define VB_NR 4
#include "kernels/cpu/isa_body.inc"
