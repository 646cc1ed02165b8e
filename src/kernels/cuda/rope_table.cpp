// The RoPE cos/sin table for the CUDA kernels, with cpu::rope's exact formula (fp32 powf for
// inv_freq, angle = float(pos) * inv_freq, cosf / sinf), so both backends rotate by the same bits.
#include <cmath>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

std::vector<float> rope_table(int positions, int head_dim, double theta) {
  const int half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  const float base = float(theta);
  for (int i = 0; i < half; ++i) inv_freq[size_t(i)] = 1.0f / std::pow(base, float(2 * i) / float(head_dim));
  std::vector<float> table(size_t(positions) * size_t(head_dim));
  for (int p = 0; p < positions; ++p)
    for (int i = 0; i < half; ++i) {
      const float angle = float(p) * inv_freq[size_t(i)];
      table[size_t(p) * size_t(head_dim) + size_t(i)] = std::cos(angle);
      table[size_t(p) * size_t(head_dim) + size_t(half + i)] = std::sin(angle);
    }
  return table;
}

}  // namespace verbatim::cuda
