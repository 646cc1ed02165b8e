// The wgmma GEMM's staging of W (src/kernels/cuda/gemm_wgmma_layout.h), checked on the CPU:
// every k slot wgmma reads holds the element v1 puts in that slot, the copy fills each byte once,
// a warp's global load reads whole 64-byte rows and each of its shared stores hits 32 distinct banks. The GPU test of the kernel itself is
// cuda_ops_test GemmKernelsAreV1BitForBit; this one needs no GPU and catches a wrong index map.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/gemm_wgmma_layout.h"

namespace verbatim::cuda {
namespace {

using namespace wgmma_layout;

// v1 (gemm.cu): in a 32-k chunk, thread tig's 16-byte load (offsets 8 tig .. +7) feeds MMA s with
// offsets 8 tig + 4 s + {0,1} in slots 2 tig, +1 and 8 tig + 4 s + {2,3} in slots 8 + 2 tig, +1.
int v1_element(int s, int j) {
  const int tig = (j & 7) >> 1, reg = j >> 3;
  return 8 * tig + 4 * s + 2 * reg + (j & 1);
}

// Per 2-byte element slot of the staged tile (byte offset / 2): row * 32 + the chunk element the
// staging puts there, from copy_unit and staged_word (so a read of the wrong row shows too).
std::vector<int> staged_elements() {
  constexpr int kElems = kChunkBytes / 2;
  std::vector<int> code(kElems, -1);
  for (int u = 0; u < kUnits; ++u) {
    const CopyUnit c = copy_unit(u);
    for (int q = 0; q < 4; ++q) {
      const int off = staged_word(c.r, c.t, q);
      EXPECT_EQ(off % 4, 0);
      for (int half = 0; half < 2; ++half) {
        int& slot = code[off / 2 + half];
        EXPECT_EQ(slot, -1) << "element slot " << off / 2 + half << " written twice";
        slot = c.r * 32 + 8 * c.t + 2 * q + half;  // word q of the unit: elements 8t + 2q, +1
      }
    }
  }
  for (int e = 0; e < kElems; ++e) EXPECT_NE(code[e], -1) << "element slot " << e << " never written";
  return code;
}

TEST(WgmmaLayout, EverySlotReadsV1sElement) {
  const std::vector<int> code = staged_elements();
  int checked = 0;
  for (int r = 0; r < kRows; ++r)
    for (int s = 0; s < 2; ++s)
      for (int j = 0; j < 16; ++j) {
        const int off = slot_read(r, s, j);
        ASSERT_GE(off, 0);
        ASSERT_LT(off, kChunkBytes);
        ASSERT_EQ(off % 2, 0);
        EXPECT_EQ(code[off / 2], r * 32 + v1_element(s, j)) << "row " << r << " step " << s << " slot " << j;
        ++checked;
      }
  EXPECT_EQ(checked, kRows * 32);
}

TEST(WgmmaLayout, AStoreInstructionHitsDistinctBanks) {
  for (int u0 = 0; u0 < kUnits; u0 += 32)
    for (int q = 0; q < 4; ++q) {
      std::vector<int> bank_use(32, 0);
      for (int lane = 0; lane < 32; ++lane) {
        const CopyUnit c = copy_unit(u0 + lane);
        ++bank_use[(staged_word(c.r, c.t, q) / 4) % 32];
      }
      for (int b = 0; b < 32; ++b) EXPECT_EQ(bank_use[b], 1) << "units from " << u0 << ", word " << q << ", bank " << b;
    }
}

// The global side: a warp's 32 units are 8 whole rows of 64 bytes (each row's 4 groups t).
TEST(WgmmaLayout, AWarpLoadsWholeRows) {
  for (int u0 = 0; u0 < kUnits; u0 += 32) {
    std::vector<int> groups(kRows, 0);
    for (int lane = 0; lane < 32; ++lane) {
      const CopyUnit c = copy_unit(u0 + lane);
      groups[c.r] |= 1 << c.t;
    }
    int rows = 0;
    for (int r = 0; r < kRows; ++r) {
      if (groups[r] != 0) {
        EXPECT_EQ(groups[r], 15) << "row " << r << " partly loaded by the warp at unit " << u0;
      }
      rows += groups[r] != 0;
    }
    EXPECT_EQ(rows, 8);
  }
}

// Control: the same check sees a wrong map (the natural, untransposed slot order).
TEST(WgmmaLayout, TheCheckSeesTheNaturalOrderAsWrong) {
  const std::vector<int> code = staged_elements();
  int wrong = 0;
  for (int s = 0; s < 2; ++s)
    for (int j = 0; j < 16; ++j)
      if (code[slot_read(0, s, j) / 2] != 16 * s + j) ++wrong;  // natural: step s slot j = element 16 s + j
  EXPECT_GT(wrong, 0);
}

}  // namespace
}  // namespace verbatim::cuda
