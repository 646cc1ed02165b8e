#pragma once
// Decode-graph sizing, free of CUDA so that it is unit-tested on the CPU (tests/graph_plan_test.cpp).

namespace verbatim::cuda {

// The attention parts per row a decode graph is captured for: the first of 1, 2, 3, 4, 6, 8, 12,
// 16, 24, ... (2^k and 3·2^(k-1)) at or above `parts`. Empty work items are then under a third of
// the attention grid (with powers of two alone up to a half: at 1k context 17 parts ran 32 items a
// row, now 24), for twice the graphs over a growing context. Only speed depends on it: empty
// items touch no row.
inline int graph_parts_cap(int parts) {
  int cap = 1;
  while (cap < parts) {
    const bool pow2 = (cap & (cap - 1)) == 0;
    cap = cap == 1 ? 2 : pow2 ? cap / 2 * 3 : cap / 3 * 4;
  }
  return cap;
}

}  // namespace verbatim::cuda
