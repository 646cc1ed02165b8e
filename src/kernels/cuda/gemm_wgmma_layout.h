// Where the wgmma GEMM (gemm_wgmma.cu) puts a chunk of x or W in shared memory, and which bytes
// each wgmma k slot reads there: plain integer maps, shared by the kernel and a CPU test
// (tests/wgmma_layout_test.cpp), so a wrong index map is caught without a GPU.
#pragma once

#include "kernels/cuda/host_device.h"

namespace verbatim::cuda::wgmma_layout {

// A 32-k chunk of R rows (x: the CTA's BM rows, W: its 128 columns) lies as R rows of 64 bytes in
// the 64-byte swizzle: the 16-byte group g (chunk elements 8g .. 8g + 7) of row r sits at group
// g ^ ((r / 2) % 4) of its row (address bits 4-5 XOR bits 7-8, the pattern repeating every 512
// bytes). That is what one tensor copy of a box (32 k x R rows) with CU_TENSOR_MAP_SWIZZLE_64B
// writes, and wgmma's K-major 64-byte-swizzle layout as it stands: 8-row groups 512 bytes apart
// (descriptor SBO), step s's 16 k starting 32 s bytes into the row (the descriptor's start
// address; the hardware applies the swizzle to the address it forms).
constexpr int kRowBytes = 64;
constexpr int kSbo = 8 * kRowBytes;  // descriptor SBO: the 8-row-group stride
VB_HOST_DEVICE constexpr int chunk_bytes(int rows) { return rows * kRowBytes; }
VB_HOST_DEVICE constexpr int swizzle(int off) { return off ^ (((off >> 7) & 3) << 4); }

// Byte offset of chunk element k (0..31) of row r.
VB_HOST_DEVICE constexpr int element_offset(int r, int k) { return swizzle(r * kRowBytes + k * 2); }

// Byte offset wgmma reads for row r, k slot j (0..15) of step s (0, 1): the unswizzled K-major
// address (start 32 s, rows 64 bytes apart inside an 8-row group, groups SBO apart, slot j at 2 j)
// through the swizzle.
VB_HOST_DEVICE constexpr int step_start(int s) { return 32 * s; }
VB_HOST_DEVICE constexpr int slot_read(int r, int s, int j) {
  return swizzle(step_start(s) + (r >> 3) * kSbo + (r & 7) * kRowBytes + j * 2);
}

// Pairs (session 15): a stage's two chunks as one box of 64 k x R rows in the 128-byte swizzle:
// rows of 128 bytes, 16-byte group g (elements 8g .. 8g + 7) of row r at group g ^ (r % 8)
// (address bits 4-6 XOR bits 7-9, repeating every 1,024 bytes: CU_TENSOR_MAP_SWIZZLE_128B and
// wgmma's K-major 128-byte-swizzle layout, 8-row groups 1,024 bytes apart). Step s (0..3: chunk
// s / 2, its step s % 2) starts 32 s bytes into the row: the same k16 steps on the same k sets,
// in the same order, as two 64-byte-swizzle chunks.
constexpr int kPairRowBytes = 128;
constexpr int kPairSbo = 8 * kPairRowBytes;
VB_HOST_DEVICE constexpr int pair_bytes(int rows) { return rows * kPairRowBytes; }
VB_HOST_DEVICE constexpr int swizzle128(int off) { return off ^ (((off >> 7) & 7) << 4); }
// Byte offset of element k (0..63) of row r in a pair.
VB_HOST_DEVICE constexpr int pair_element_offset(int r, int k) { return swizzle128(r * kPairRowBytes + k * 2); }
// The same offset for 16-byte group g (elements 8g .. 8g + 7, g < 8) of row r, as the stream GEMM
// (gemm_stream.cu) addresses its ldmatrix rows: pair_element_offset(r, 8 g) with the XOR on g
// alone (the row's group bits are g; this form is what s21's calls measured).
VB_HOST_DEVICE constexpr int pair_group_offset(int r, int g) { return r * kPairRowBytes + ((g ^ (r & 7)) << 4); }
// Byte offset wgmma reads for row r, k slot j of step s (0..3) of a pair.
VB_HOST_DEVICE constexpr int pair_slot_read(int r, int s, int j) {
  return swizzle128(step_start(s) + (r >> 3) * kPairSbo + (r & 7) * kPairRowBytes + j * 2);
}

// The copy without tensor maps: unit u of a chunk is the 16 bytes of row u / 4 at group u % 4 (a
// quad of lanes reads a row's 64 bytes: one coalesced 16-byte global load each), stored where the
// tensor copy would put them.
VB_HOST_DEVICE constexpr int unit_offset(int u) { return element_offset(u >> 2, 8 * (u & 3)); }

}  // namespace verbatim::cuda::wgmma_layout
