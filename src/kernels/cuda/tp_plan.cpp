// Tensor-parallel plan of the CUDA backend (tp_plan.h).
#include "kernels/cuda/tp_plan.h"

#include "core/error.h"
#include "kernels/cuda/kernels.h"

namespace verbatim::cuda {

int row_parallel_split(int N, int K) {
  if (K % (8 * kTpSegments) == 0) return kTpSegments;
  return gemm_split_for(N, K);
}

void check_tp_plan(const ModelConfig& c, int tp, const std::string& config_path) {
  const std::string n = std::to_string(tp);
  if (tp != 1 && tp != 2 && tp != 4 && tp != 8)
    throw Error("--tensor-parallel-size " + n + ": expected 1, 2, 4 or 8");
  if (tp == 1) return;
  const std::string where = config_path + ": ";
  if (c.num_heads % tp)
    throw Error(where + "num_attention_heads " + std::to_string(c.num_heads) + " cannot be split over " +
                "--tensor-parallel-size " + n);
  if (c.num_kv_heads % tp)
    throw Error(where + "num_key_value_heads " + std::to_string(c.num_kv_heads) + " cannot be split over " +
                "--tensor-parallel-size " + n + " (KV heads are not replicated on CUDA)");
  const int64_t ko = int64_t(c.num_heads) * c.head_dim;
  if (ko % (8 * kTpSegments) || c.intermediate_size % (8 * kTpSegments))
    throw Error(where + "num_attention_heads * head_dim (" + std::to_string(ko) + ") and intermediate_size (" +
                std::to_string(c.intermediate_size) + ") must be multiples of 64 for --tensor-parallel-size " + n +
                " (8 K-segments of whole 8-element loads)");
  if (c.vocab_size % (8 * tp))
    throw Error(where + "vocab_size " + std::to_string(c.vocab_size) + " must be a multiple of " +
                std::to_string(8 * tp) + " for --tensor-parallel-size " + n);
}

}  // namespace verbatim::cuda
