// v1's slot map (gemm.cu) and where its x-through-shared-memory mode (load mode 4) puts a chunk's
// words: plain integer maps, shared by the kernel and a CPU test (tests/v1_layout_test.cpp), so a
// wrong index map is caught without a GPU.
#pragma once

#include "kernels/cuda/host_device.h"

namespace verbatim::cuda::v1_layout {

// Chunk offset of lane tig's 4 k in MMA 1 (+16: in MMA 2), in MMA slots 2·tig, +1 (the first two)
// and 2·tig + 8, +9: lanes 0, 1 hold the first halves of their 16-byte W loads (offsets 0, 8),
// lanes 2, 3 the second halves of lanes 0, 1's (4, 12).
VB_HOST_DEVICE constexpr int step_k(int tig) { return 8 * (tig & 1) + 4 * (tig >> 1); }

// Load mode 4: a row's 32-k chunk is 16 4-byte words (word w: elements 2w, 2w + 1) in 64 bytes.
// Step s's 8 words are stored as [0 4 2 6 | 1 5 3 7] (+ 8s), so that ldmatrix, which gives lane
// tig word tig of each 16 bytes, gives it the pairs at step_k(tig) (a step's first 16 bytes) and
// step_k(tig) + 2 (its second). The 16-byte units are swizzled by (row / 2) % 4, so the 8 rows of
// one ldmatrix matrix (64 bytes apart) fall in 8 different groups of banks.
VB_HOST_DEVICE constexpr int xs_unit_word(int row, int unit) { return 4 * (unit ^ ((row >> 1) & 3)); }
VB_HOST_DEVICE constexpr int xs_word_slot(int row, int w) {
  const int p = w & 7, pos = (p & 1) * 4 + ((p >> 1) & 1) * 2 + (p >> 2);  // word 0 4 2 6 1 5 3 7 at 0..7
  const int slot = (w & 8) + pos;
  return xs_unit_word(row, slot >> 2) + (slot & 3);
}

}  // namespace verbatim::cuda::v1_layout
