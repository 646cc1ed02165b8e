// Where the wgmma GEMM (gemm_wgmma.cu) stages each word of W in shared memory, and which bytes
// each wgmma k slot reads there: plain integer maps, shared by the kernel and a CPU test
// (tests/wgmma_layout_test.cpp), so the staging that gives wgmma v1's k sets is checked without a GPU.
#pragma once

#ifdef __CUDACC__
#define VB_HOST_DEVICE __host__ __device__
#else
#define VB_HOST_DEVICE
#endif

namespace verbatim::cuda::wgmma_layout {

// No-swizzle K-major operand: core matrices of 8 rows x 16 bytes (8 k slots); per 32-k chunk, a
// group of 8 rows holds 4 of them: (step s, k group g) at s * kStepBytes + g * kLbo.
constexpr int kLbo = 128;        // descriptor LBO: the k-group stride (slots 0..7 -> 8..15)
constexpr int kStepBytes = 256;  // the second k16 step of a chunk
constexpr int kSbo = 512;        // descriptor SBO: the 8-row-group stride
constexpr int kRows = 128;       // W rows (columns of y) per CTA tile
constexpr int kChunkBytes = kRows * 64;  // one 32-k chunk of those rows

// Byte offset of word q (elements 8t + 2q, +1 of the chunk) of row r's 16-byte group t: v1 gives
// that word to step q >> 1, slots 8 (q & 1) + 2t, +1 (gemm.cu), so it goes to core matrix
// (s = q >> 1, g = q & 1), position t of row r.
VB_HOST_DEVICE constexpr int staged_word(int r, int t, int q) {
  return (q >> 1) * kStepBytes + (q & 1) * kLbo + (r >> 3) * kSbo + (r & 7) * 16 + t * 4;
}

// Byte offset wgmma reads for row r, k slot j (0..15) of step s, with the descriptor's start at
// s * kStepBytes and the LBO / SBO above (PTX's no-swizzle K-major reading; bench/mma_probe.cu
// found this reading right on the H200 and the swapped one wrong).
VB_HOST_DEVICE constexpr int slot_read(int r, int s, int j) {
  return s * kStepBytes + (j >> 3) * kLbo + (r >> 3) * kSbo + (r & 7) * 16 + (j & 7) * 2;
}

// The copy: unit u (0..511) of a chunk's kRows-row tile is the 16 bytes of row r = u / 4 at group
// t = u % 4 (one coalesced 16-byte global load: a quad of lanes reads a row's 64 bytes); its four
// words q = 0..3 are stored one by one to staged_word(r, t, q). For one q, the 32 lanes of a warp
// (32 consecutive units: 8 rows x 4 t) write 128 contiguous bytes: 32 distinct banks.
struct CopyUnit {
  int r, t;
};
VB_HOST_DEVICE constexpr CopyUnit copy_unit(int u) { return {(u >> 2) & (kRows - 1), u & 3}; }
constexpr int kUnits = kRows * 4;
static_assert(kRows == 128, "copy_unit splits 512 units as 128 rows x 4 t");

}  // namespace verbatim::cuda::wgmma_layout
