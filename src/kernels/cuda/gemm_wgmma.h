// The wgmma GEMM (gemm_wgmma.cu): prefill rows (M > 64) on Hopper's warpgroup MMA, v1's bits.
#pragma once

#include "kernels/cuda/gemm_common.cuh"

namespace verbatim::cuda::gemm_impl {

// One pass of a.M rows: combine (split > 1) adds the segments in the kernel, in segment order;
// otherwise grid z = segment and each writes its sum to a.partial (or the output when split == 1).
// t.wgmma_rows: 128 or 256 rows per CTA where the segments are not added here; when they are, 256
// with a.tot (wgmma_tot_bytes(M, N) of scratch for the sums), else 128. t.wgmma_tma: x and W by
// tensor maps where they fit, else cp.async. Same bits every way.
template <typename T>
void launch_wgmma(const GemmArgs& a, int split, bool combine, const GemmTuning& t, cudaStream_t stream);
size_t wgmma_tot_bytes(int M, int N);

}  // namespace verbatim::cuda::gemm_impl
