// The wgmma GEMM's shared-memory layout of a chunk (src/kernels/cuda/gemm_wgmma_layout.h), checked
// on the CPU: every k slot wgmma reads holds the chunk element of that slot (k = 16 s + j: the
// natural order, whose per-step sets are v1's), the copy without tensor maps fills each byte once,
// and a warp's 16-byte stores of it hit distinct banks. The GPU test of the kernel itself is
// cuda_ops_test GemmKernelsAreV1BitForBit; this one needs no GPU and catches a wrong index map.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda {
namespace {

using namespace wgmma_layout;

// Over `steps` k16 steps of `rows` rows in `bytes(rows)` bytes: every slot wgmma reads (read(r,
// s, j)) holds the element of its natural k (element(r, 16 s + j)), and each element is read once.
template <typename Read, typename Element, typename Bytes>
void expect_natural_reads(int steps, Read read, Element element, Bytes bytes) {
  for (int rows : {64, 128, 256}) {
    std::vector<int> seen(size_t(bytes(rows)), 0);
    for (int r = 0; r < rows; ++r)
      for (int s = 0; s < steps; ++s)
        for (int j = 0; j < 16; ++j) {
          const int off = read(r, s, j);
          ASSERT_GE(off, 0);
          ASSERT_LT(off, bytes(rows));
          EXPECT_EQ(off, element(r, 16 * s + j)) << rows << " rows, row " << r << " step " << s << " slot " << j;
          ++seen[size_t(off)];
        }
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < 16 * steps; ++k) EXPECT_EQ(seen[size_t(element(r, k))], 1) << "row " << r << " k " << k;
  }
}

TEST(WgmmaLayout, EverySlotReadsItsNaturalElement) { expect_natural_reads(2, slot_read, element_offset, chunk_bytes); }

// A pair (two chunks as one 128-byte-swizzle box): step s's slot j reads element 16 s + j, so the
// four steps take the two chunks' sets in the chunks' order.
TEST(WgmmaLayout, EveryPairSlotReadsItsNaturalElement) {
  expect_natural_reads(4, pair_slot_read, pair_element_offset, pair_bytes);
  // Control: without the swizzle, reads land elsewhere.
  int wrong = 0;
  for (int r = 0; r < 64; ++r)
    for (int j = 0; j < 16; ++j)
      if (step_start(3) + (r >> 3) * kPairSbo + (r & 7) * kPairRowBytes + j * 2 != pair_element_offset(r, 48 + j)) ++wrong;
  EXPECT_GT(wrong, 0);
}

// The stream GEMM's group offsets are the pair layout's (rows of a 64-row W box and beyond).
TEST(WgmmaLayout, PairGroupOffsetIsThePairLayout) {
  for (int r = 0; r < 256; ++r)
    for (int g = 0; g < 8; ++g) EXPECT_EQ(pair_group_offset(r, g), pair_element_offset(r, 8 * g)) << "row " << r << " group " << g;
  // Control: the unswizzled offset differs from it somewhere.
  int wrong = 0;
  for (int r = 0; r < 64; ++r)
    for (int g = 0; g < 8; ++g) wrong += pair_group_offset(r, g) != r * kPairRowBytes + 16 * g;
  EXPECT_GT(wrong, 0);
}

TEST(WgmmaLayout, TheCopyFillsEachByteOnce) {
  for (int rows : {64, 128, 256}) {
    std::vector<int> owner(size_t(chunk_bytes(rows)), -1);
    for (int u = 0; u < rows * 4; ++u) {
      const int off = unit_offset(u);
      EXPECT_EQ(off % 16, 0);
      for (int b = 0; b < 16; ++b) {
        int& o = owner[size_t(off + b)];
        EXPECT_EQ(o, -1) << "byte " << off + b << " written twice";
        o = u;
      }
    }
    for (size_t b = 0; b < owner.size(); ++b) EXPECT_NE(owner[b], -1) << "byte " << b << " never written";
  }
}

// A quarter warp's 16-byte stores (8 lanes: two rows' 4 groups) cover 32 distinct banks.
TEST(WgmmaLayout, StoresOfEightUnitsHitDistinctBanks) {
  for (int u0 = 0; u0 < 256 * 4; u0 += 8) {
    std::vector<int> use(32, 0);
    for (int i = 0; i < 8; ++i)
      for (int w = 0; w < 4; ++w) ++use[size_t((unit_offset(u0 + i) / 4 + w) % 32)];
    for (int b = 0; b < 32; ++b) EXPECT_EQ(use[size_t(b)], 1) << "units from " << u0 << ", bank " << b;
  }
}

// Control: the same check sees a wrong reading (the swizzle left out).
TEST(WgmmaLayout, TheCheckSeesAnUnswizzledReadingAsWrong) {
  int wrong = 0;
  for (int r = 0; r < 128; ++r)
    for (int j = 0; j < 16; ++j)
      if (step_start(1) + (r >> 3) * kSbo + (r & 7) * kRowBytes + j * 2 != element_offset(r, 16 + j)) ++wrong;
  EXPECT_GT(wrong, 0);
}

}  // namespace
}  // namespace verbatim::cuda
