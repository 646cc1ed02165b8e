// system_fingerprint: a stable hash of what decides the bits, and nothing else.
#include <gtest/gtest.h>

#include <regex>

#include "core/hash.h"
#include "engine/cpu_backend.h"
#include "engine/fingerprint.h"
#include "model/weights.h"
#include "support/paths.h"

using namespace verbatim;

TEST(Fingerprint, NamesItsPartsAndHashesThem) {
  auto bf16 = make_cpu_backend(test::fixture("qwen3-tiny-tied"), DType::BF16);
  Fingerprint fp = make_fingerprint("00112233aabbccdd", *bf16);
  EXPECT_TRUE(std::regex_match(fp.short_hash, std::regex("fp_[0-9a-f]{12}"))) << fp.short_hash;
  ASSERT_EQ(fp.parts.size(), 5u);
  EXPECT_EQ(fp.parts[0], (std::pair<std::string, std::string>{"weights", "00112233aabbccdd"}));
  EXPECT_EQ(fp.parts[1], (std::pair<std::string, std::string>{"dtype", "bfloat16"}));
  EXPECT_EQ(fp.parts[2], (std::pair<std::string, std::string>{"engine", VERBATIM_VERSION}));
  EXPECT_EQ(fp.parts[3], (std::pair<std::string, std::string>{"device", "cpu"}));
  EXPECT_EQ(fp.parts[4].first, "kernels");
  EXPECT_EQ(make_fingerprint("00112233aabbccdd", *bf16).short_hash, fp.short_hash);  // stable
  EXPECT_NE(make_fingerprint("00112233aabbccde", *bf16).short_hash, fp.short_hash);  // weights
  auto f32 = make_cpu_backend(test::fixture("qwen3-tiny-tied"), DType::F32);
  EXPECT_NE(make_fingerprint("00112233aabbccdd", *f32).short_hash, fp.short_hash);   // dtype
}

TEST(Fingerprint, FromWeightsUsesTheirDigest) {
  const std::string dir = test::fixture("qwen3-tiny-untied");
  ModelWeights w = ModelWeights::load(dir);
  auto backend = make_cpu_backend(dir, DType::BF16);
  EXPECT_EQ(make_fingerprint(w, *backend).short_hash, make_fingerprint(hex64(w.digest()), *backend).short_hash);
  EXPECT_EQ(make_fingerprint(w, *backend).parts[0].second, hex64(w.digest()));
  ModelWeights other = ModelWeights::load(test::fixture("qwen3-tiny-tied"));
  EXPECT_NE(make_fingerprint(other, *backend).short_hash, make_fingerprint(w, *backend).short_hash);
}
