#pragma once
// Fixed-width vectors (GCC vector extensions) for the CPU kernels. Every lane operation is an
// ordinary IEEE fp32 add or multiply (the build uses -ffp-contract=off: no FMA fusion), so the
// instruction set the compiler picks (SSE2, AVX2, AVX-512) changes speed, never bits.
// Everything here is `static inline`: each per-ISA translation unit gets its own copy, compiled
// for its own target, so no AVX code leaks into a generic caller through the linker.
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace verbatim::cpu::simd {

inline constexpr int kLanes = 16;  // the dot-product lane count of the contract (ops.h)

typedef float f32x16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint32_t u32x16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t i32x16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint16_t u16x16 __attribute__((vector_size(32), aligned(2), may_alias));

#define VB_INLINE static inline __attribute__((always_inline))

VB_INLINE f32x16 load_f32(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
VB_INLINE f32x16 bf16x16_to_f32(const uint16_t* p) {
  u16x16 h;
  std::memcpy(&h, p, sizeof h);
  u32x16 w = __builtin_convertvector(h, u32x16) << 16;  // exact: bf16 is the top half of fp32
  return (f32x16)w;
}
VB_INLINE f32x16 f16x16_to_f32(const uint16_t* p) {
  u16x16 h16;
  std::memcpy(&h16, p, sizeof h16);
  u32x16 h = __builtin_convertvector(h16, u32x16);
  u32x16 sign = (h & 0x8000u) << 16;
  u32x16 em = (h & 0x7fffu) << 13;
  // Exponent/mantissa placed in fp32 position and rescaled by 2^112: exact for normals and
  // subnormals (a power-of-two multiply of a representable value).
  u32x16 finite = (u32x16)((f32x16)em * 0x1p112f);
  u32x16 infnan = (u32x16)((h & 0x7c00u) == 0x7c00u);  // all-ones where exponent is 31
  u32x16 bits = (finite & ~infnan) | ((em | 0x7f800000u) & infnan);
  return (f32x16)(bits | sign);
}

// Loads 16 weights of storage type `wt` starting at element k of row `w`, as fp32 (exact).
VB_INLINE f32x16 load_w(DType wt, const void* w, int64_t k) {
  switch (wt) {
    case DType::BF16: return bf16x16_to_f32(static_cast<const uint16_t*>(w) + k);
    case DType::F16: return f16x16_to_f32(static_cast<const uint16_t*>(w) + k);
    default: return load_f32(static_cast<const float*>(w) + k);
  }
}

// The contract's fixed lane-combining tree: halves added pairwise (lane l + lane l+8, then +4,
// +2, +1), i.e. ((a0+a8)+(a4+a12)) + ((a2+a10)+(a6+a14)) + ... in a fixed pattern.
VB_INLINE float reduce_tree(f32x16 a) {
  float t[16];
  std::memcpy(t, &a, sizeof t);
  for (int w = 8; w >= 1; w >>= 1)
    for (int l = 0; l < w; ++l) t[l] = t[l] + t[l + w];
  return t[0];
}

// One element of storage type `wt` as fp32 (exact).
VB_INLINE float load_w1(DType wt, const void* w, int64_t k) {
  switch (wt) {
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(w)[k]);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(w)[k]);
    default: return static_cast<const float*>(w)[k];
  }
}

}  // namespace verbatim::cpu::simd

#pragma GCC diagnostic pop
