// libFuzzer: a checkpoint folder built from arbitrary bytes: [u16 n][n bytes of config.json]
// [u16 m][m bytes of generation_config.json][rest: model.safetensors], then ModelWeights::load
// (config parsing, tensor names, shapes and dtypes checked against the config). Must either
// throw verbatim::Error or give weights whose views lie inside the mapping and match the config.
#include <cstdint>

#include "fuzz_util.h"
#include "model/weights.h"

namespace {
void check_ref(const verbatim::WeightRef& w, int64_t rows, int64_t cols) {
  if (w.rows != rows || w.cols != cols)
    verbatim::fuzz::finding(w.name + ": shape [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) +
                            "] accepted where the config implies [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  const auto* p = static_cast<const uint8_t*>(w.data);
  const size_t n = static_cast<size_t>(rows * cols) * verbatim::dtype_size(w.dtype);
  volatile uint8_t x = 0;
  if (n) x = static_cast<uint8_t>(p[0] ^ p[n - 1]);  // both ends must be mapped
  (void)x;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  fuzz::Bytes in(data, size);
  const auto dir = fuzz::scratch_dir() / "model";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  const size_t n = in.byte() | (static_cast<size_t>(in.byte()) << 8);
  fuzz::write_file(dir / "config.json", in.take(n));
  const size_t m = in.byte() | (static_cast<size_t>(in.byte()) << 8);
  if (m) fuzz::write_file(dir / "generation_config.json", in.take(m - 1));  // 0: no file
  fuzz::write_file(dir / "model.safetensors", in.rest());
  fuzz::expect_only_errors("ModelWeights::load", [&] {
    ModelWeights w = ModelWeights::load(dir.string());
    const ModelConfig& c = w.config;
    if (c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0 ||
        c.vocab_size <= 0 || c.intermediate_size <= 0)
      fuzz::finding("a config with a non-positive dimension was accepted");
    if (c.num_heads % c.num_kv_heads != 0) fuzz::finding("num_heads not a multiple of num_kv_heads was accepted");
    if (static_cast<int>(w.layers.size()) != c.num_layers) fuzz::finding("layer count differs from the config");
    const int64_t h = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim, kv = int64_t(c.num_kv_heads) * c.head_dim;
    check_ref(w.embed, c.vocab_size, h);
    check_ref(w.lm_head, c.vocab_size, h);
    check_ref(w.final_norm, 1, h);
    for (const LayerWeights& l : w.layers) {
      check_ref(l.q_proj, q, h);
      check_ref(l.k_proj, kv, h);
      check_ref(l.v_proj, kv, h);
      check_ref(l.o_proj, h, q);
      check_ref(l.gate_proj, c.intermediate_size, h);
      check_ref(l.down_proj, h, c.intermediate_size);
      check_ref(l.q_norm, 1, c.head_dim);
    }
    (void)w.digest();
  });
  return 0;
}
