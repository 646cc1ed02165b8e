#pragma once
// How the CUDA backend splits a model over N GPUs (docs/tensor-parallel.md), and the one rule that
// makes N = 1, 2, 4, 8 give the same bits: the row-parallel GEMMs (o_proj, down_proj) sum every
// output over K in kTpSegments equal segments at every N (also N = 1), rank r computing segments
// [r * 8 / N, (r + 1) * 8 / N) on its column shard; the fp32 partials of all 8 are all-gathered
// and added in segment order by the consumer kernel, exactly as on one GPU.
#include <string>

#include "model/config.h"

namespace verbatim::cuda {

constexpr int kTpSegments = 8;

// The split-K count of a row-parallel GEMM [N, K]: kTpSegments whenever K % (8 * kTpSegments) == 0
// (each segment a whole number of 8-element loads, on the whole weight and on every shard), at
// every tensor-parallel size; otherwise the ordinary plan (gemm_split_for) and no tensor
// parallelism for this model.
int row_parallel_split(int N, int K);

// Throws Error (naming config.json) when `c` cannot be split `tp` ways on CUDA: tp not 1, 2, 4 or 8,
// heads or KV heads not divisible by tp (KV heads are not replicated on CUDA), o_proj's or
// down_proj's K not in kTpSegments segments, or the vocabulary slice not a multiple of 8.
void check_tp_plan(const ModelConfig& c, int tp, const std::string& config_path);

// Rank r's part [r * D / N, (r + 1) * D / N) of a dimension D that N divides.
inline long long tp_part_begin(long long D, int r, int N) { return D / N * r; }

}  // namespace verbatim::cuda
