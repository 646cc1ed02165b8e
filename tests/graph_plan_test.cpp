// Decode-graph sizing (src/kernels/cuda/graph_plan.h), checked on the CPU: a graph's attention
// grid always has room for every part of every row (a cap below the parts would drop keys), and
// its empty items stay under a third of the grid.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/graph_plan.h"

namespace verbatim::cuda {
namespace {

TEST(GraphPartsCap, IsTheFirstOfTheSequenceAtOrAboveTheParts) {
  const std::vector<int> seq = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  for (int parts = -1; parts <= 1024; ++parts) {
    int want = 0;
    for (int c : seq)
      if (c >= parts) {
        want = c;
        break;
      }
    ASSERT_EQ(graph_parts_cap(parts), want) << parts << " parts";
  }
  EXPECT_EQ(graph_parts_cap(17), 24);  // 1k context with 64-token parts
  EXPECT_EQ(graph_parts_cap(16), 16);
}

TEST(GraphPartsCap, CoversEveryPartWithUnderAThirdEmpty) {
  int last = 0;
  for (int parts = 1; parts <= 100000; ++parts) {
    const int cap = graph_parts_cap(parts);
    ASSERT_GE(cap, parts);
    ASSERT_GE(cap, last) << "the cap never shrinks as the context grows";
    ASSERT_LT(3 * (cap - parts), cap) << parts << " parts: " << cap - parts << " empty of " << cap;
    last = cap;
  }
}

}  // namespace
}  // namespace verbatim::cuda
