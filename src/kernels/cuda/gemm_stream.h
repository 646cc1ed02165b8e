// The streaming decode GEMM (gemm_stream.cu): up to 64 rows, W and x brought by TMA into a ring of
// shared-memory stages by one producer warp, v1's bits.
#pragma once

#include "kernels/cuda/gemm_common.cuh"

namespace verbatim::cuda::gemm_impl {

constexpr int kStreamMaxM = 64;
// Whether the kernel takes these arguments (a.M <= kStreamMaxM, tensor maps fit, no SiLU epilogue).
bool stream_fits(const GemmArgs& a, size_t esize);
// One pass of a.M rows: segment s of W's K (split segments) into a.partial, or the output when
// split == 1; the launcher's grid is one CTA per SM looping over (64-column tile, segment) items.
template <typename T>
void launch_stream(const GemmArgs& a, int split, cudaStream_t stream);

}  // namespace verbatim::cuda::gemm_impl
