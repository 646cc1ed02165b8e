#pragma once
// Device helpers shared by the CUDA kernels: the two activation types, exact conversions, the
// fp32 arithmetic of the contract without FMA contraction, and the mma.sync wrapper.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;

// Plain IEEE fp32 operations: explicit intrinsics so nvcc never fuses a multiply and an add into
// an FMA (which would round once instead of twice and differ from the CPU reference).
__device__ __forceinline__ float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fsub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float fdiv(float a, float b) { return __fdiv_rn(a, b); }

__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(f16 x) { return __half2float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ f16 from_f<f16>(float x) { return __float2half_rn(x); }
// The value x takes once stored as T (round to nearest even), kept in fp32.
template <typename T> __device__ __forceinline__ float round_as(float x) { return to_f(from_f<T>(x)); }

// Two values of T packed in 32 bits (low half = first), each rounded to nearest even as from_f:
// one paired conversion (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32) instead of two and a merge.
template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t pack2<bf16>(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<f16>(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <typename T> __device__ __forceinline__ float lo_f(uint32_t v) {
  uint16_t b = uint16_t(v & 0xffffu);
  return to_f(*reinterpret_cast<T*>(&b));
}
template <typename T> __device__ __forceinline__ float hi_f(uint32_t v) {
  uint16_t b = uint16_t(v >> 16);
  return to_f(*reinterpret_cast<T*>(&b));
}

// cpu::exp_f32 (kernels/cpu/exp_impl.h) operation for operation: same constants, same order, no
// FMA, so it returns the CPU reference's bits. Branch-free as the CPU recipe (out-of-range inputs
// run the polynomial on 0, then the special value is selected): early returns made each call its
// own basic block, so a thread's 16 or 32 exps of a tile ran one after another (ptxas cannot
// interleave across the branches); straight-line, their chains overlap.
// Its reduction and polynomial: kf = the integer nearest xc / ln2, and the return value y = e^r
// for r = xc - kf ln2 (ln2 in two parts, Cody-Waite), so e^xc = y · 2^kf.
__device__ __forceinline__ float exp_reduced(float xc, float& kf) {
  kf = floorf(fadd(fmul(xc, 1.44269504088896341f), 0.5f));
  const float r = fsub(fsub(xc, fmul(kf, 0.693359375f)), fmul(kf, -2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = fadd(fmul(p, r), 1.3981999507e-3f);
  p = fadd(fmul(p, r), 8.3334519073e-3f);
  p = fadd(fmul(p, r), 4.1665795894e-2f);
  p = fadd(fmul(p, r), 1.6666665459e-1f);
  p = fadd(fmul(p, r), 5.0000001201e-1f);
  return fadd(fadd(fmul(p, fmul(r, r)), r), 1.0f);
}
__device__ __forceinline__ float exp_f32(float x) {
  const bool is_nan = x != x;
  const bool over = x > 88.72283935546875f;
  const bool under = x < -103.97208404541015625f;
  const float xc = (is_nan || over || under) ? 0.0f : x;
  float kf;
  const float y = exp_reduced(xc, kf);
  const int k = int(kf);
  const int k1 = k / 2, k2 = k - k1;
  const float e = fmul(fmul(y, __int_as_float((k1 + 127) << 23)), __int_as_float((k2 + 127) << 23));  // exact 2^k1, 2^k2
  return is_nan ? x : over ? __int_as_float(0x7f800000) : under ? 0.0f : e;
}
__device__ __forceinline__ float silu_f32(float x) { return fdiv(x, fadd(1.0f, exp_f32(-x))); }
// exp_f32's bits for every x that is not above 0 (x <= 0, -inf, NaN): the softmax and merge exps,
// whose argument is a value minus a maximum over it. Fewer instructions (the attention's fold and
// ring consumers spend most of their issue slots on ~32 exps a tile): no overflow case, and y · 2^k
// for k in [-150, 0] as one exact exponent add (y in [0.7, 1.42], so y · 2^(k + 64) is normal)
// then one rounding multiply by 2^-64, where exp_f32 takes y · 2^k1 (exact) · 2^k2 (the one
// rounding): the same value. Held to cpu::exp_f32 on every such float (cuda_ops_test CudaExp).
__device__ __forceinline__ float exp_nonpos_f32(float x) {
  const bool under = x < -103.97208404541015625f;
  const float xc = under ? 0.0f : x;  // a NaN runs through and is selected away at the end
  float kf;
  const float y = exp_reduced(xc, kf);
  const int k = int(kf);
  const float e = fmul(__uint_as_float(__float_as_uint(y) + ((uint32_t(k) + 64u) << 23)), 5.42101086242752217e-20f);  // 2^-64
  return x != x ? x : under ? 0.0f : e;
}

// The softmax's probability round_as<T>(exp_nonpos_f32(x)) mostly without the recipe: a
// candidate g = 2^k · ex2.approx((x - k ln2) · log2 e) (FMA reduction, the hardware's ex2) lies
// within a factor 1 ± 2^-20 of exp_f32(x) for x in [-86, 0] (cuda_ops_test measures the largest
// distance on every such float). Rounding to T is monotone, so where g (1 - 2^-20) and
// g (1 + 2^-20) round to the same T value, that value is exp_f32(x)'s rounding and `sure` is set;
// elsewhere (a rounding boundary inside the bracket, x below -86, NaN) the caller must take
// round_as<T>(exp_nonpos_f32(x)) instead. cuda_ops_test holds every sure answer to the recipe's.
__device__ __forceinline__ float exp_candidate(float x) {
  const float kf = rintf(fmul(x, 1.44269504088896341f));
  float r = __fmaf_rn(kf, -0.693145751953125f, x);  // ln2 in two parts
  r = __fmaf_rn(kf, -1.42860682030941723e-6f, r);
  float g;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(g) : "f"(fmul(r, 1.44269504088896341f)));
  return __uint_as_float(__float_as_uint(g) + (uint32_t(int(kf)) << 23));  // x >= -86: k >= -124, normal
}
template <typename T>
__device__ __forceinline__ float round_exp_candidate(float x, bool& sure) {
  const float g = exp_candidate(x);
  const uint32_t b = pack2<T>(fmul(g, 1.0f - 0x1p-20f), fmul(g, 1.0f + 0x1p-20f));
  sure = x >= -86.0f && (b & 0xffffu) == (b >> 16);
  return lo_f<T>(b);
}

// D = A·B + C for one m16n8k16 tile, fp32 accumulation (PTX ISA fragment layouts).
template <typename T> __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816<bf16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<f16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Orders this thread's shared-memory accesses (generic proxy) with the async proxy's: stores before
// wgmma's operand reads, reads before the bulk / tensor copies that refill the buffer.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// mbarriers (sm_90) at shared-memory address `bar`, for copies that complete on them (bulk and
// tensor copies): init with an arrival count, arm with the bytes to expect, wait for a phase.
__device__ __forceinline__ void mbar_init_at(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy
}
__device__ __forceinline__ void mbar_arrive_expect_tx_at(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One plain arrival (a consumer releasing a stage it has read).
__device__ __forceinline__ void mbar_arrive_at(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Until the phase of this parity has completed (a barrier's use n completes phase n: parity n & 1).
__device__ __forceinline__ void mbar_wait_at(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

inline int ceil_div(int64_t a, int64_t b) { return int((a + b - 1) / b); }

// Programmatic dependent launch (sm_90): a kernel started by pdl_launch may be scheduled while the
// kernel before it in the stream finishes its last wave, so its launch cost hides behind that
// tail. Every such kernel calls pdl_begin() in every CTA before any global memory access or early
// return (shared-memory setup may come first: the stream GEMM's barriers): griddepcontrol.wait
// returns only once the previous grid has completed and its writes are visible, so the kernel
// sees exactly what a plain launch would (scheduling only: no arithmetic or order changes).
// launch_dependents then lets the next kernel's CTAs be scheduled once every CTA of this one has
// started. Both are no-ops without a programmatic dependency (VERBATIM_PDL=0, or the legacy
// default stream the op tests use: plain launches; the backend's own stream gets them).
// read_step_inputs_before_pdl: the one exception. A step's inputs (token ids, positions, slots,
// block tables, attention items and merge lists) reach the device by a host copy ordered before
// the step's first kernel, and the weights and the RoPE table at load; no kernel writes either.
// So a kernel may read those (and return on them) before pdl_begin(): the attention, merge and
// qkv_post kernels do, so their address setup overlaps the kernel before, and the stream GEMM
// issues W's first copies there (GemmTuning::stream_preload). Nothing else may.
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
template <typename... KArgs, typename... Args>
void pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() && stream != nullptr ? 1 : 0;  // the legacy default stream: plain
  VB_CUDA(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace verbatim::cuda
