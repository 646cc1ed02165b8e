// Tensor maps for the GEMM kernels (gemm_tma.cuh).
#include "kernels/cuda/gemm_tma.cuh"

#include <cudaTypedefs.h>

#include <string>

namespace verbatim::cuda::gemm_impl {
namespace {
// The driver's tensor-map encoder, through the runtime (no link to libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    VB_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || p == nullptr) throw Error("cuda gemm: no cuTensorMapEncodeTiled in the driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}
}  // namespace

CUtensorMap tensor_map_2d(const void* base, bool bf16, int cols, int rows, int ld, int box_rows, bool pair) {
  CUtensorMap m{};
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * 2};  // bf16 and fp16: 2 bytes
  const cuuint32_t box[2] = {pair ? 64u : 32u, cuuint32_t(box_rows)}, step[2] = {1, 1};
  const CUtensorMapDataType dt = bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = tensor_map_encoder()(&m, dt, 2, const_cast<void*>(base), dims, strides, box, step,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          pair ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw Error("cuda gemm: cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) + ")");
  return m;
}

bool tma_fits(const GemmArgs& a, size_t esize) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.kseg % 32 == 0 && aligned(a.x) && aligned(a.w) && (size_t(a.ldx) * esize) % 16 == 0 &&
         (size_t(a.K) * esize) % 16 == 0;
}

}  // namespace verbatim::cuda::gemm_impl
