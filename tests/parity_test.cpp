// Parity with Hugging Face transformers (tests/fixtures, made with HF Qwen3ForCausalLM, eager):
// the CPU reference's fp32 logits at every position of every prompt, greedy generation through the
// KV cache, and the size of the bf16 / fp16 error next to HF's own bf16 error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/error.h"
#include "engine/cpu_backend.h"
#include "kernels/ops.h"
#include "model/safetensors.h"
#include "support/paths.h"

namespace verbatim {
namespace {

struct GoldenPrompt {
  std::vector<int32_t> ids;
  std::vector<float> logits_fp32, logits_bf16;  // [len, vocab]
};

std::vector<float> read_f32(const SafetensorsFile& f, const std::string& name) {
  const TensorInfo& t = f.get(name);
  EXPECT_EQ(t.dtype, StDType::F32) << name;
  std::vector<float> v(t.nbytes / 4);
  std::memcpy(v.data(), t.data, t.nbytes);
  return v;
}

std::vector<GoldenPrompt> load_golden(const std::string& model) {
  std::string path = test::fixture(model);
  path += "/golden_logits.safetensors";  // (operator+ here trips GCC 12's false -Wrestrict)
  SafetensorsFile f(path);
  std::vector<GoldenPrompt> out;
  for (int i = 0;; ++i) {
    std::string p = "p";
    p += std::to_string(i);
    p += ".";
    const TensorInfo* ids = f.find(p + "ids");
    if (!ids) break;
    GoldenPrompt g;
    g.ids.resize(ids->nbytes / 4);
    std::memcpy(g.ids.data(), ids->data, ids->nbytes);
    g.logits_fp32 = read_f32(f, p + "logits_fp32");
    g.logits_bf16 = read_f32(f, p + "logits_bf16");
    out.push_back(std::move(g));
  }
  return out;
}

// Block table 0..n-1 for a sequence of `len` tokens.
std::vector<int32_t> blocks_for(int len, int block_size) {
  std::vector<int32_t> bt(static_cast<size_t>((len + block_size - 1) / block_size));
  for (size_t i = 0; i < bt.size(); ++i) bt[i] = int32_t(i);
  return bt;
}

// Logits of every position of `ids`, as one prefill.
std::vector<float> prefill_all(Backend& be, const std::vector<int32_t>& ids) {
  ForwardBatch b;
  b.tokens = ids;
  b.block_tables = {blocks_for(int(ids.size()), 16)};
  for (size_t i = 0; i < ids.size(); ++i) {
    b.positions.push_back(int32_t(i));
    b.token_seq.push_back(0);
    b.logit_rows.push_back(int32_t(i));
  }
  std::vector<float> logits(ids.size() * size_t(be.config().vocab_size));
  be.forward_logits(b, logits.data());
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, Fp32LogitsMatchHfAtEveryPosition) {
  const std::string model = GetParam();
  auto golden = load_golden(model);
  ASSERT_GE(golden.size(), 5u);
  auto be = make_cpu_backend(test::fixture(model), DType::F32);
  be->allocate_kv(64, 16);
  double worst = 0;
  for (size_t i = 0; i < golden.size(); ++i) {
    auto logits = prefill_all(*be, golden[i].ids);
    ASSERT_EQ(logits.size(), golden[i].logits_fp32.size());
    const double err = max_abs_diff(logits, golden[i].logits_fp32);
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-4) << model << " prompt " << i << " (" << golden[i].ids.size() << " tokens)";
  }
  std::printf("[parity] %s fp32: max |logit - HF fp32| = %.3g over %zu prompts\n", model.c_str(), worst, golden.size());
}

TEST_P(Parity, ReducedPrecisionErrorIsNoWorseThanHfBf16) {
  const std::string model = GetParam();
  auto golden = load_golden(model);
  double hf_bf16 = 0;
  for (const GoldenPrompt& g : golden) hf_bf16 = std::max(hf_bf16, max_abs_diff(g.logits_bf16, g.logits_fp32));
  for (DType dt : {DType::BF16, DType::F16}) {
    auto be = make_cpu_backend(test::fixture(model), dt);
    be->allocate_kv(64, 16);
    double ours = 0;
    for (const GoldenPrompt& g : golden) ours = std::max(ours, max_abs_diff(prefill_all(*be, g.ids), g.logits_fp32));
    std::printf("[parity] %s %s: max |logit - HF fp32| = %.4g (HF's own bf16 run: %.4g)\n", model.c_str(),
                dtype_name(dt), ours, hf_bf16);
    EXPECT_LE(ours, 1.5 * hf_bf16) << dtype_name(dt);
    EXPECT_GT(ours, 0.0) << dtype_name(dt) << " gave exactly the fp32 logits: was it computed in fp32?";
  }
}

TEST_P(Parity, GreedyThroughTheKvCacheMatchesHf) {
  const std::string model = GetParam();
  std::string path = test::fixture(model);
  path += "/golden_greedy.json";
  std::ifstream in(path);
  nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_FALSE(cases.empty());
  auto be = make_cpu_backend(test::fixture(model), DType::F32);
  be->allocate_kv(64, 16);
  SampleSpec greedy;
  greedy.temperature = 0.0f;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<int32_t> prompt = cases[c]["prompt"].get<std::vector<int32_t>>();
    std::vector<int32_t> want = cases[c]["greedy_fp32"].get<std::vector<int32_t>>();
    const int total = int(prompt.size() + want.size());
    // Prefill the prompt (one call), then one decode step per new token.
    ForwardBatch b;
    b.tokens = prompt;
    b.block_tables = {blocks_for(total, 16)};
    for (size_t i = 0; i < prompt.size(); ++i) {
      b.positions.push_back(int32_t(i));
      b.token_seq.push_back(0);
    }
    b.logit_rows = {int32_t(prompt.size() - 1)};
    std::vector<int32_t> got;
    std::vector<SampleResult> out;
    while (got.size() < want.size()) {
      be->forward_sample(b, {greedy}, out);
      got.push_back(out[0].token);
      const int32_t pos = int32_t(prompt.size() + got.size() - 1);
      b.tokens = {out[0].token};
      b.positions = {pos};
      b.token_seq = {0};
      b.logit_rows = {0};
    }
    EXPECT_EQ(got, want) << model << " prompt " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::Values("qwen3-tiny-tied", "qwen3-tiny-untied"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace verbatim

namespace verbatim {
namespace {

// The CPU reference's exact bits for one prompt, recorded once (identical on an AMD EPYC Zen 4
// with glibc 2.36 and an Intel Xeon with glibc 2.39, on the AVX-512, AVX2 and SSE2 paths). A
// change here means the reference's numerics changed: if on purpose, bump "cpu-ref-vN" in
// cpu::kernel_config() (it is in every fingerprint) and record the new values.
// cpu-ref-v2 (o_proj/down_proj K in 8 chunks, tree-combined) re-recorded F32 and F16 on this
// machine's AVX-512, AVX2 and SSE2 paths (all equal); the BF16 bits did not change on this prompt
// (v1 and v2 round every o_proj/down_proj output to the same bf16 here).
TEST(ReferenceBits, TinyFixtureLogitsHaveTheRecordedBits) {
  auto golden = load_golden("qwen3-tiny-tied");
  ASSERT_GE(golden.size(), 4u);
  const std::vector<int32_t>& ids = golden[3].ids;  // 64 tokens: one full attention tile
  const std::pair<DType, const char*> recorded[] = {
      {DType::F32, "b2e39730ec86273d"}, {DType::BF16, "e0e7cf1e2c4e6362"}, {DType::F16, "e4cecb12ce8b0277"}};
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    try {
      cpu::testing::force_isa(isa);
    } catch (const Error&) {
      continue;  // this CPU lacks it
    }
    for (const auto& [dt, want] : recorded) {
      auto be = make_cpu_backend(test::fixture("qwen3-tiny-tied"), dt);
      be->allocate_kv(8, 16);
      const std::vector<float> logits = prefill_all(*be, ids);
      EXPECT_EQ(hex64(hash_bytes(logits.data(), logits.size() * 4)), want)
          << isa << " " << dtype_name(dt) << ": the CPU reference's bits changed (see the comment above)";
    }
  }
  cpu::testing::force_isa("");
}

}  // namespace
}  // namespace verbatim
