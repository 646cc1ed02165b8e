// The streaming decode GEMM (gemm_stream.cu): up to 64 rows, W and x brought by TMA into a ring of
// shared-memory stages by one producer warp, v1's bits.
#pragma once

#include "kernels/cuda/gemm_common.cuh"

namespace verbatim::cuda::gemm_impl {

constexpr int kStreamMaxM = 64;
// Whether the kernel takes these arguments (a.M <= kStreamMaxM and tensor maps fit; with the SiLU
// epilogue, a.silu_cols > 0: up to 32 rows, silu_cols % 32 == 0; split segments added in the kernel).
bool stream_fits(const GemmArgs& a, size_t esize);
// stages16: ring depth at <= 16 rows (3, 4 or 5); stages32: at 17-32 rows (3 or 4); preload: the
// ring's first stages whose W copies are issued before the PDL wait (0 none; past the ring's depth:
// all of them; GemmTuning::stream_preload, _preload_stages), and with them l2_stages more stages of
// W into L2 (GemmTuning::stream_preload_l2).
struct StreamTuning {
  int stages16 = 3;
  int stages32 = 4;
  int preload = 0;
  int l2_stages = 0;
};
// One pass of a.M rows: segment s of W's K (split segments) into a.partial, or the output when
// split == 1 (with a.silu_cols: every segment, added in order, then v1's SiLU epilogue into a.y);
// the grid is one CTA per SM looping over (column tile, segment) items.
template <typename T>
void launch_stream(const GemmArgs& a, int split, const StreamTuning& t, cudaStream_t stream);

}  // namespace verbatim::cuda::gemm_impl
