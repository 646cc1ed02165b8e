// Tensor-memory-access (TMA) pieces the GEMM kernels share (gemm_wgmma.cu, gemm_stream.cu): the
// tensor maps of x and W (host, gemm_tma.cu) and the one copy instruction (device).
#pragma once

#include <cuda.h>  // CUtensorMap (types only: the encoder comes through the runtime's entry point)
#include <cuda_bf16.h>

#include <type_traits>

#include "kernels/cuda/gemm_common.cuh"

namespace verbatim::cuda::gemm_impl {

// A row-major [rows, cols] matrix (row stride ld elements; bf16 or fp16) read in boxes of 32 x
// box_rows (a chunk: rows of 64 bytes in shared memory, 64-byte swizzle), zeros outside it.
// pair: boxes of 64 x box_rows in the 128-byte swizzle (two chunks, rows of 128 bytes).
CUtensorMap tensor_map_2d(const void* base, bool bf16, int cols, int rows, int ld, int box_rows, bool pair);
template <typename T>
CUtensorMap tensor_map(const void* base, int cols, int rows, int ld, int box_rows, bool pair) {
  return tensor_map_2d(base, std::is_same_v<T, __nv_bfloat16>, cols, rows, ld, box_rows, pair);
}
// Where TMA can bring what cp.async would: segments of whole chunks (no zero-fill inside K), and
// the 16-byte alignment of addresses and row strides that tensor maps need.
bool tma_fits(const GemmArgs& a, size_t esize);

// Box (k0 .., rows row0 ..) of the tensor map to shared memory at dst, completing on the mbarrier
// bar. Rows past M or N and k past K come back as zeros, as cp.async's zero-fill.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int k0, int row0, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k0), "r"(row0), "r"(bar)
      : "memory");
}

// Box (k0 .., rows row0 ..) of the tensor map into L2 only (no shared memory, no completion).
__device__ __forceinline__ void tma_prefetch_2d(const CUtensorMap* map, int k0, int row0) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(reinterpret_cast<uint64_t>(map)),
               "r"(k0), "r"(row0)
               : "memory");
}

}  // namespace verbatim::cuda::gemm_impl
