// v1's x-through-shared-memory layout (load mode 4; src/kernels/cuda/gemm_v1_layout.h), checked on
// the CPU by simulating ldmatrix.x4: every lane must get exactly the words v1's register path gives
// it (the pairs at step_k(tig) and step_k(tig) + 2 of each step, rows gid and gid + 8), the layout
// must hold each word once, and the 8 row addresses of one matrix must fall in distinct banks. The
// GPU test of the kernel is cuda_ops_test GemmKernelsAreV1BitForBit; this one catches a wrong map
// without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <set>

#include "kernels/cuda/gemm_v1_layout.h"

namespace verbatim::cuda {
namespace {

using namespace v1_layout;

// A 16-row tile's chunk in shared memory under a word-slot map: slot -> (row, natural word).
using Tile = std::array<std::array<int, 16>, 16>;
Tile store(const std::function<int(int, int)>& slot_of) {
  Tile t{};
  for (auto& r : t) r.fill(-1);
  for (int row = 0; row < 16; ++row)
    for (int w = 0; w < 16; ++w) t[size_t(row)][size_t(slot_of(row, w))] = w;
  return t;
}
// ldmatrix.x4 as the kernel issues it for step s: lane l gives the address of row (l & 7) + 8 ((l
// >> 3) & 1), 16-byte unit 2 s + (l >> 4) (through the swizzle); lane (gid, tig) receives word tig
// of row gid of matrix j in register j. Returns the natural word each register holds, per lane.
std::array<std::array<int, 4>, 32> ldmatrix(const Tile& t, int s) {
  std::array<std::array<int, 4>, 32> regs{};
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j) {
      const int src = 8 * j + lane / 4;  // the lane whose address is matrix j's row lane / 4
      const int row = (src & 7) + ((src >> 3) & 1) * 8;
      const int word0 = xs_unit_word(row, 2 * s + (src >> 4));
      regs[size_t(lane)][size_t(j)] = t[size_t(row)][size_t(word0 + lane % 4)];
    }
  return regs;
}
// What v1's registers hold for step s: a1 = {row gid, row gid + 8} x {pair at step_k, at step_k + 2}.
bool matches_v1(const Tile& t) {
  for (int s = 0; s < 2; ++s) {
    const auto regs = ldmatrix(t, s);
    for (int lane = 0; lane < 32; ++lane) {
      const int tig = lane % 4;
      const int w0 = (16 * s + step_k(tig)) / 2, w1 = w0 + 1;
      const std::array<int, 4> want = {w0, w0, w1, w1};  // rows gid, gid + 8, gid, gid + 8
      if (regs[size_t(lane)] != want) return false;
    }
  }
  return true;
}

TEST(V1Layout, LdmatrixGivesEveryLaneItsStepWords) { EXPECT_TRUE(matches_v1(store(xs_word_slot))); }

TEST(V1Layout, TheCheckSeesAWrongMap) {
  // Words in natural order (swizzled units): ldmatrix would give lane tig pair 2 tig, not step_k.
  EXPECT_FALSE(matches_v1(store([](int row, int w) { return xs_unit_word(row, w >> 2) + (w & 3); })));
}

TEST(V1Layout, EachRowHoldsEachWordOnce) {
  for (int row = 0; row < 64; ++row) {
    std::set<int> slots;
    for (int w = 0; w < 16; ++w) {
      const int slot = xs_word_slot(row, w);
      EXPECT_GE(slot, 0);
      EXPECT_LT(slot, 16);
      slots.insert(slot);
    }
    EXPECT_EQ(slots.size(), 16u) << "row " << row;
  }
}

TEST(V1Layout, OneMatrixsRowsHitDistinctBanks) {
  // 8 rows of 64 bytes read at the same unit: byte offsets row * 64 + 16 * unit' must cover 8
  // different 16-byte bank groups (of 8 in 128 bytes).
  for (int base = 0; base < 64; base += 8)
    for (int unit = 0; unit < 4; ++unit) {
      std::set<int> groups;
      for (int r = base; r < base + 8; ++r) groups.insert(((r * 64 + 4 * xs_unit_word(r, unit)) / 16) % 8);
      EXPECT_EQ(groups.size(), 8u) << "rows " << base << "+, unit " << unit;
    }
}

}  // namespace
}  // namespace verbatim::cuda
