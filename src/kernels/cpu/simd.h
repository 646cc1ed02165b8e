#pragma once
// The 16 fp32 lanes of the CPU kernels' dot products (ops.h), built from the widest native
// vectors of the instruction set a translation unit is compiled for: one zmm (AVX-512), two ymm
// (AVX2) or four xmm (SSE2). Every lane operation is an ordinary IEEE fp32 add or multiply (the
// build uses -ffp-contract=off: no FMA fusion), so the instruction set changes speed, never bits.
// (A plain 64-byte GCC vector is not used for the narrower sets: GCC keeps those in memory.)
// Everything here is `static inline`: each per-ISA translation unit (isa_*.cpp sets
// VB_ISA_AVX512 / VB_ISA_AVX2) gets its own copy, built for its own target, so no AVX code leaks
// into a generic caller through the linker.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace verbatim::cpu::simd {

inline constexpr int kLanes = 16;  // the dot-product lane count of the contract (ops.h)

#define VB_INLINE static inline __attribute__((always_inline))

#if defined(VB_ISA_AVX512)
inline constexpr int kNative = 16;
#elif defined(VB_ISA_AVX2)
inline constexpr int kNative = 8;
#else
inline constexpr int kNative = 4;
#endif
inline constexpr int kParts = kLanes / kNative;

typedef float nat_f32 __attribute__((vector_size(kNative * 4)));
typedef uint32_t nat_u32 __attribute__((vector_size(kNative * 4)));
typedef uint16_t nat_u16 __attribute__((vector_size(kNative * 2)));

// Lanes l = part * kNative + i, in order: the memory layout of 16 consecutive floats.
struct vec16 {
  nat_f32 p[kParts];
};

VB_INLINE vec16 zero16() {
  vec16 v;
  for (int i = 0; i < kParts; ++i) v.p[i] = nat_f32{};  // +0 in every lane
  return v;
}
VB_INLINE vec16 operator+(vec16 a, const vec16& b) {
  for (int i = 0; i < kParts; ++i) a.p[i] = a.p[i] + b.p[i];
  return a;
}
VB_INLINE vec16 operator*(vec16 a, const vec16& b) {
  for (int i = 0; i < kParts; ++i) a.p[i] = a.p[i] * b.p[i];
  return a;
}
VB_INLINE vec16 operator*(float s, vec16 b) {
  for (int i = 0; i < kParts; ++i) b.p[i] = s * b.p[i];
  return b;
}

VB_INLINE vec16 load_f32(const float* p) {
  vec16 v;
  for (int i = 0; i < kParts; ++i) std::memcpy(&v.p[i], p + i * kNative, sizeof(nat_f32));
  return v;
}
VB_INLINE void store_f32(float* p, const vec16& v) {
  for (int i = 0; i < kParts; ++i) std::memcpy(p + i * kNative, &v.p[i], sizeof(nat_f32));
}

// bf16 is the top half of an fp32: widening is a zero-extend and a shift (exact). The AVX sets
// spell it with intrinsics because GCC turns the generic conversion into many shuffles.
VB_INLINE nat_f32 bf16_part(const uint16_t* p) {
#if defined(VB_ISA_AVX512)
  return (nat_f32)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
#elif defined(VB_ISA_AVX2)
  return (nat_f32)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
#else
  nat_u16 h;
  std::memcpy(&h, p, sizeof h);
  return (nat_f32)(__builtin_convertvector(h, nat_u32) << 16);
#endif
}

// fp16 to fp32 (exact): the hardware conversion where there is one, else the bits rearranged.
VB_INLINE nat_f32 f16_part(const uint16_t* p) {
#if defined(VB_ISA_AVX512)
  return (nat_f32)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(VB_ISA_AVX2)
  return (nat_f32)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));  // F16C
#else
  nat_u16 h16;
  std::memcpy(&h16, p, sizeof h16);
  const nat_u32 h = __builtin_convertvector(h16, nat_u32);
  const nat_u32 sign = (h & 0x8000u) << 16;
  const nat_u32 em = (h & 0x7fffu) << 13;
  // Exponent and mantissa in fp32 position, rescaled by 2^112: exact for normals and subnormals.
  const nat_u32 finite = (nat_u32)((nat_f32)em * 0x1p112f);
  const nat_u32 infnan = (nat_u32)((h & 0x7c00u) == 0x7c00u);  // all ones where the exponent is 31
  const nat_u32 bits = (finite & ~infnan) | ((em | 0x7f800000u) & infnan);
  return (nat_f32)(bits | sign);
#endif
}

// 16 weights of storage type `wt` starting at element k of row `w`, as fp32 (exact).
VB_INLINE vec16 load_w(DType wt, const void* w, int64_t k) {
  if (wt == DType::F32) return load_f32(static_cast<const float*>(w) + k);
  const uint16_t* h = static_cast<const uint16_t*>(w) + k;
  vec16 v;
  for (int i = 0; i < kParts; ++i) v.p[i] = wt == DType::BF16 ? bf16_part(h + i * kNative) : f16_part(h + i * kNative);
  return v;
}

typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x4 __attribute__((vector_size(16)));

// The contract's fixed lane-combining tree: t[l] += t[l+8] (l < 8), then +4, +2, +1. Spelled as
// adds of vector halves (the same IEEE adds on the same operands as the scalar loop, so the same
// bits; the row-parallel matmul runs this 8 times per output, so it must be cheap).
VB_INLINE float reduce_tree(const vec16& a) {
  f32x4 s4;  // t[l] + t[l+4] after the first level, l < 4
#if defined(VB_ISA_AVX512)
  const f32x8 s8 = __builtin_shufflevector(a.p[0], a.p[0], 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(a.p[0], a.p[0], 8, 9, 10, 11, 12, 13, 14, 15);
  s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
#elif defined(VB_ISA_AVX2)
  const f32x8 s8 = a.p[0] + a.p[1];  // lanes 0..7 + lanes 8..15
  s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
#else
  s4 = (a.p[0] + a.p[2]) + (a.p[1] + a.p[3]);  // parts: lanes 0..3, 4..7, 8..11, 12..15
#endif
  const f32x4 s2 = s4 + __builtin_shufflevector(s4, s4, 2, 3, 2, 3);
  return s2[0] + s2[1];
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
