// The wgmma GEMM (gemm_wgmma.cu): prefill rows (M > 64) on Hopper's warpgroup MMA, v1's bits.
#pragma once

#include "kernels/cuda/gemm_common.cuh"

namespace verbatim::cuda::gemm_impl {

// One pass of a.M rows: combine (split > 1) adds the segments in the kernel, in segment order;
// otherwise grid z = segment and each writes its sum to a.partial (or the output when split == 1).
// rows: GemmTuning::wgmma_rows (128 or 256 rows per CTA; 128 when combining). Same bits either way.
template <typename T>
void launch_wgmma(const GemmArgs& a, int split, bool combine, int rows, cudaStream_t stream);

}  // namespace verbatim::cuda::gemm_impl
