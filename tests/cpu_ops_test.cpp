// The CPU reference kernels (kernels/ops.h): each op against a naive double-precision reference,
// the exact reduction order the header documents (emulated in scalar code, bit for bit), and the
// invariances the product promises: the same bits for 1 or 2 threads, for a row alone or inside
// 1..33 rows, for every instruction-set variant, for any chunking or block size of the KV cache.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/ops.h"

namespace verbatim {
namespace {

using cpu::Mat;

// ---------------------------------------------------------------------------------------------
// helpers

struct Weights {  // owns the bytes behind a Mat
  std::vector<float> f;
  std::vector<uint16_t> h;
  Mat mat;
};

Weights make_weights(int64_t rows, int64_t cols, DType t, std::mt19937& rng, float scale = 0.5f) {
  std::normal_distribution<float> nd(0.0f, scale);
  Weights w;
  w.mat.dtype = t;
  w.mat.rows = rows;
  w.mat.cols = cols;
  w.mat.name = "test.weight";
  if (t == DType::F32) {
    w.f.resize(size_t(rows * cols));
    for (float& x : w.f) x = nd(rng);
    w.mat.data = w.f.data();
  } else {
    w.h.resize(size_t(rows * cols));
    for (uint16_t& x : w.h) x = t == DType::BF16 ? f32_to_bf16(nd(rng)) : f32_to_f16(nd(rng));
    w.mat.data = w.h.data();
  }
  return w;
}

double weight_at(const Mat& w, int64_t i) {
  switch (w.dtype) {
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(w.data)[i]);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(w.data)[i]);
    default: return static_cast<const float*>(w.data)[i];
  }
}

std::vector<float> random_act(int64_t n, DType act, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = round_to(act, nd(rng));
  return v;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Runs f with `threads` OpenMP threads, every op split across them however small, then restores
// the previous settings.
template <class F>
void with_threads(int threads, F&& f) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  const int64_t min_work = cpu::testing::set_min_parallel_work(0);
  f();
  cpu::testing::set_min_parallel_work(min_work);
  omp_set_num_threads(before);
}

const DType kActs[] = {DType::F32, DType::BF16, DType::F16};

std::vector<std::string> supported_isas() {
  std::vector<std::string> out;
  for (const char* name : {"generic", "avx2", "avx512"}) {
    try {
      cpu::testing::force_isa(name);
      out.push_back(name);
    } catch (const Error&) {
    }
  }
  cpu::testing::force_isa("");
  return out;
}

// ---------------------------------------------------------------------------------------------
// dtype conversions (core/dtype.h)

// Round-to-nearest-even to bf16, by comparing the two neighbours in double (independent method).
uint16_t bf16_reference(float f) {
  uint32_t u = f32_bits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;  // toward zero, and one bf16 ulp further
  // IEEE overflow: round as if the exponent were unbounded, so "one past the largest" is 2^128.
  const double vhi = (hi & 0x7fffffffu) == 0x7f800000u ? std::copysign(0x1p128, double(f)) : double(bits_f32(hi));
  const double dlo = std::fabs(double(f) - double(bits_f32(lo)));
  const double dhi = std::fabs(vhi - double(f));
  if (dlo < dhi) return uint16_t(lo >> 16);
  if (dhi < dlo) return uint16_t(hi >> 16);
  return ((lo >> 16) & 1u) ? uint16_t(hi >> 16) : uint16_t(lo >> 16);
}

TEST(Dtype, Bf16RoundTripIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
  }
}

TEST(Dtype, F16RoundTripIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    // Against the compiler's own IEEE half type (an independent conversion).
    _Float16 ref;
    std::memcpy(&ref, &h, 2);
    ASSERT_EQ(f32_bits(f), f32_bits(float(ref))) << std::hex << h;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

// Floats around every midpoint between neighbours (where rounding decides), plus a sweep of
// the whole fp32 range with a prime stride.
std::vector<float> rounding_probe_values(int mantissa_bits_dropped) {
  std::vector<float> v;
  const uint32_t step = 1u << mantissa_bits_dropped, half = step >> 1;
  for (uint32_t base = 0; base < 0x7f800000u; base += step)
    for (int d = -2; d <= 2; ++d) {
      const float f = bits_f32(base + half + uint32_t(d));
      v.push_back(f);
      v.push_back(-f);
    }
  for (uint64_t u = 0; u < 0x100000000ull; u += 104729) v.push_back(bits_f32(uint32_t(u)));
  for (uint32_t u = 0x32800000u; u < 0x38800000u; u += 97) v.push_back(bits_f32(u));  // f16 subnormals
  return v;
}

TEST(Dtype, F32ToBf16MatchesReferenceAtEveryMidpoint) {
  for (float f : rounding_probe_values(16)) ASSERT_EQ(f32_to_bf16(f), bf16_reference(f)) << std::hexfloat << f;
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(Dtype, F32ToF16MatchesCompilerConversion) {
  // f16 has 10 mantissa bits: midpoints sit at bit 12 of the fp32 mantissa (normal range); the
  // subnormal and overflow ranges are covered by the sweep and the explicit values below.
  std::vector<float> vals = rounding_probe_values(13);
  for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f,
                  8.940697e-08f, 6.097555e-05f, 6.1035156e-05f, 1e-10f, INFINITY})
    for (float s : {1.0f, -1.0f}) vals.push_back(s * f);
  for (float f : vals) {
    if (std::isnan(f)) {  // any quiet NaN will do (payloads differ between implementations)
      ASSERT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    _Float16 ref = _Float16(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(f32_to_f16(f), rb) << std::hexfloat << f;
  }
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

// ---------------------------------------------------------------------------------------------
// exp and silu

TEST(CpuOps, ExpIsWithinTwoUlpOfDoubleExp) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> ud(-103.0f, 88.7f);
  for (int i = 0; i < 200000; ++i) {
    float x = i < 100000 ? ud(rng) : -float(i - 100000) * 1e-4f;  // softmax args are <= 0
    double ref = std::exp(double(x));
    float got = cpu::exp_f32(x);
    double ulp = std::max(double(std::nextafter(float(ref), INFINITY)) - float(ref), 0x1p-149);
    ASSERT_LE(std::fabs(got - ref), 2 * ulp) << "x=" << x;
  }
  EXPECT_EQ(cpu::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(cpu::exp_f32(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::exp_f32(INFINITY), INFINITY);
  EXPECT_EQ(cpu::exp_f32(100.0f), INFINITY);
  EXPECT_EQ(cpu::exp_f32(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::exp_f32(NAN)));
  EXPECT_GT(cpu::exp_f32(-100.0f), 0.0f);  // subnormal result, not flushed
}

// The exp recipe as ops.h documents it (and the CUDA kernels mirror it), written plainly with
// floorf: exp_f32 must give exactly these bits.
// Its reduction and polynomial: kf the integer nearest x / ln2, the return value e^(x - kf ln2).
float recipe_reduced(float x, float& kf) {
  kf = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = (x - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return (p * (r * r) + r) + 1.0f;
}
float exp_recipe(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return INFINITY;
  if (x < -103.97208404541015625f) return 0.0f;
  float kf;
  const float y = recipe_reduced(x, kf);
  const int k = int(kf), k1 = k / 2, k2 = k - k1;
  return (y * std::ldexp(1.0f, k1)) * std::ldexp(1.0f, k2);
}

TEST(CpuOps, ExpFollowsTheDocumentedRecipeBitForBit) {
  std::vector<float> xs = {0.0f, -0.0f, 88.72283935546875f, 88.7228f, -103.97208404541015625f, -103.9f, 1e-30f};
  std::mt19937 rng(20);
  std::uniform_real_distribution<float> ud(-110.0f, 95.0f);
  for (int i = 0; i < 1000000; ++i) xs.push_back(ud(rng));
  // Where x * log2(e) + 0.5 lands on an integer, the rounding of k decides the result.
  for (int k = -150; k <= 128; ++k) {
    float x = (float(k) - 0.5f) * 0.693147180559945309f;
    for (int d = 0; d < 64; ++d) {
      xs.push_back(x);
      x = std::nextafter(x, d < 32 ? INFINITY : -INFINITY);
    }
  }
  int ties = 0;
  for (float x : xs) {
    const float y0 = x * 1.44269504088896341f + 0.5f;
    ties += y0 == std::floor(y0);
    ASSERT_EQ(f32_bits(cpu::exp_f32(x)), f32_bits(exp_recipe(x))) << std::hexfloat << x;
  }
  EXPECT_GT(ties, 0);  // the exact-integer case really was exercised
}

// The CUDA kernels' exp for arguments that are not above 0 (common.cuh exp_nonpos_f32), written
// plainly: the same polynomial, then y · 2^k as an exponent add of k + 64 (exact: y · 2^(k + 64)
// is normal for k in [-150, 0]) and one rounding multiply by 2^-64. Its claim is exp_f32's bits on
// every such float; cuda_ops_test holds the device's to that on all of them, this test holds the
// argument to it on the CPU: every float whose result is subnormal (where the one rounding is all
// that matters) and every 61st float below 0 elsewhere.
float exp_nonpos_recipe(float x) {
  const bool under = x < -103.97208404541015625f;
  float kf;
  const float y = recipe_reduced(under || x != x ? 0.0f : x, kf);  // (a NaN's int(kf) would be UB here)
  const uint32_t scaled = f32_bits(y) + ((uint32_t(int(kf)) + 64u) << 23);
  const float e = bits_f32(scaled) * 0x1p-64f;
  return x != x ? x : under ? 0.0f : e;
}

TEST(CpuOps, ExpOfNonPositiveArgumentsIsExpF32BitForBit) {
  int64_t checked = 0, subnormal = 0;
  auto check = [&](uint32_t bits) {
    const float x = bits_f32(bits);
    const float want = cpu::exp_f32(x);
    ASSERT_EQ(f32_bits(exp_nonpos_recipe(x)), f32_bits(want)) << std::hexfloat << x;
    ++checked;
    subnormal += want > 0.0f && want < 0x1p-126f;
  };
  // Every float from -87 (exp ~1.6e-38, near the smallest normal) down to -104 (past the cut to 0).
  for (uint32_t b = f32_bits(-87.0f); b <= f32_bits(-104.0f); ++b) check(b);
  for (uint64_t b = 0x80000000u; b <= 0xffffffffu; b += 61) check(uint32_t(b));
  for (float x : {0.0f, -0.0f, -INFINITY, NAN, -NAN, -0x1p-149f, -1e-8f}) check(f32_bits(x));
  EXPECT_GT(subnormal, 1000000);  // the subnormal results, where a second rounding would show
  EXPECT_GT(checked, 35000000);
}

TEST(CpuOps, SiluMulMatchesDoubleAndRoundsTwice) {
  std::mt19937 rng(2);
  for (DType act : kActs) {
    const int64_t T = 5, D = 37;
    auto g = random_act(T * D, act, rng, 3.0f), u = random_act(T * D, act, rng);
    std::vector<float> out(size_t(T * D));
    cpu::silu_mul(g.data(), u.data(), T, D, act, out.data());
    for (size_t i = 0; i < out.size(); ++i) {
      double s = double(g[i]) / (1.0 + std::exp(-double(g[i])));
      double ref = double(round_to(act, float(s))) * u[i];
      double tol = act == DType::F32 ? 1e-6 * std::fabs(ref) + 1e-30 : 1e-2 * std::fabs(ref) + 1e-30;
      ASSERT_NEAR(out[i], ref, tol) << i;
      ASSERT_EQ(out[i], round_to(act, out[i]));  // representable in act
    }
  }
}

TEST(CpuOps, VectorizedExpGivesTheScalarBitsOnEveryIsa) {
  // silu_mul runs exp in the vectorized hot loops; silu_f32 is the scalar recipe.
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> ud(-120.0f, 100.0f);
  std::vector<float> g(4099), u(4099, 1.0f), out(4099);
  for (float& x : g) x = ud(rng);
  g[0] = NAN;
  g[1] = INFINITY;
  g[2] = -INFINITY;
  g[3] = 0.0f;
  for (const std::string& isa : supported_isas()) {
    cpu::testing::force_isa(isa);
    for (DType act : kActs) {
      cpu::silu_mul(g.data(), u.data(), 1, int64_t(g.size()), act, out.data());
      for (size_t i = 0; i < g.size(); ++i) {
        const float want = round_to(act, round_to(act, cpu::silu_f32(g[i])) * u[i]);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(out[i]));
          continue;
        }
        ASSERT_EQ(f32_bits(out[i]), f32_bits(want)) << isa << " " << dtype_name(act) << " g=" << g[i];
      }
    }
  }
  cpu::testing::force_isa("");
}

TEST(CpuOps, AddInplaceRoundsToAct) {
  std::mt19937 rng(3);
  for (DType act : kActs) {
    auto a = random_act(1000, act, rng), b = random_act(1000, act, rng);
    auto x = a;
    cpu::add_inplace(x.data(), b.data(), 1000, act);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(f32_bits(x[i]), f32_bits(round_to(act, a[i] + b[i])));
  }
}

TEST(CpuOps, EmbedCopiesRowsExactlyAndRejectsBadIds) {
  std::mt19937 rng(4);
  for (DType t : kActs) {
    Weights E = make_weights(50, 24, t, rng);
    std::vector<int32_t> ids = {3, 0, 49, 3};
    std::vector<float> out(ids.size() * 24);
    cpu::embed(E.mat, ids.data(), int64_t(ids.size()), out.data());
    for (size_t r = 0; r < ids.size(); ++r)
      for (int c = 0; c < 24; ++c) ASSERT_EQ(out[r * 24 + c], float(weight_at(E.mat, ids[r] * 24 + c)));
    std::vector<int32_t> bad = {1, 50};
    EXPECT_THROW(cpu::embed(E.mat, bad.data(), 2, out.data()), Error);
    bad = {-1};
    EXPECT_THROW(cpu::embed(E.mat, bad.data(), 1, out.data()), Error);
  }
}

// ---------------------------------------------------------------------------------------------
// matmul

// The documented order, emulated in scalar code: 16 lanes over ascending k, then the halving tree.
float dot_in_contract_order(const float* x, const Mat& W, int64_t n) {
  const int64_t K = W.cols;
  float lane[16] = {};
  for (int64_t k = 0; k < K; ++k) lane[k % 16] = lane[k % 16] + x[k] * float(weight_at(W, n * K + k));
  for (int w = 8; w >= 1; w >>= 1)
    for (int l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

TEST(CpuOps, MatmulMatchesDoubleReference) {
  std::mt19937 rng(5);
  for (DType wt : kActs)
    for (int64_t K : {1, 15, 16, 17, 64, 160, 333})
      for (int64_t M : {1, 3, 9}) {
        const int64_t N = 37;
        Weights W = make_weights(N, K, wt, rng);
        auto x = random_act(M * K, wt, rng);
        std::vector<float> y(size_t(M * N)), yr(size_t(M * N));
        cpu::matmul_f32out(x.data(), M, W.mat, y.data());
        cpu::matmul(x.data(), M, W.mat, wt, yr.data());
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              double p = double(x[m * K + k]) * weight_at(W.mat, n * K + k);
              ref += p;
              mag += std::fabs(p);
            }
            const float got = y[m * N + n];
            ASSERT_NEAR(got, ref, 1e-6 * mag + 1e-30) << "K=" << K << " m=" << m << " n=" << n;
            ASSERT_EQ(f32_bits(yr[m * N + n]), f32_bits(round_to(wt, got)));
          }
      }
}

TEST(CpuOps, MatmulFollowsTheDocumentedOrderBitForBitOnEveryIsa) {
  std::mt19937 rng(6);
  for (const std::string& isa : supported_isas()) {
    cpu::testing::force_isa(isa);
    for (DType wt : kActs)
      for (int64_t K : {7, 16, 40, 128, 161}) {
        const int64_t M = 11, N = 23;
        Weights W = make_weights(N, K, wt, rng);
        auto x = random_act(M * K, DType::F32, rng);  // fp32 inputs: products round, order matters
        std::vector<float> y(size_t(M * N));
        cpu::matmul_f32out(x.data(), M, W.mat, y.data());
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            float want = dot_in_contract_order(&x[size_t(m * K)], W.mat, n);
            ASSERT_EQ(f32_bits(y[m * N + n]), f32_bits(want)) << isa << " K=" << K << " m=" << m << " n=" << n;
          }
      }
  }
  cpu::testing::force_isa("");
}

TEST(CpuOps, MatmulRowIsTheSameAloneOrInsideAnyBatchAndThreadCount) {
  std::mt19937 rng(7);
  for (DType wt : kActs) {
    const int64_t K = 96, N = 200, Mmax = 33;
    Weights W = make_weights(N, K, wt, rng);
    auto x = random_act(Mmax * K, DType::F32, rng);
    // Each row alone, one thread: the reference bits.
    std::vector<float> alone(size_t(Mmax * N));
    with_threads(1, [&] {
      for (int64_t m = 0; m < Mmax; ++m) cpu::matmul(&x[size_t(m * K)], 1, W.mat, wt, &alone[size_t(m * N)]);
    });
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        for (int64_t M = 1; M <= Mmax; ++M)
          for (int64_t start : {int64_t(0), Mmax - M}) {
            std::vector<float> y(size_t(M * N));
            cpu::matmul(&x[size_t(start * K)], M, W.mat, wt, y.data());
            ASSERT_TRUE(same_bits(y.data(), &alone[size_t(start * N)], size_t(M * N)))
                << "M=" << M << " start=" << start << " threads=" << threads;
          }
      });
  }
}

TEST(CpuOps, BatchDependentTestSwitchReallyChangesBits) {
  std::mt19937 rng(8);
  const int64_t K = 512, N = 64, M = 4;
  Weights W = make_weights(N, K, DType::F32, rng);
  auto x = random_act(M * K, DType::F32, rng);
  std::vector<float> a(size_t(M * N)), b(size_t(M * N));
  cpu::matmul_f32out(x.data(), M, W.mat, a.data());
  cpu::testing::set_batch_dependent_matmul(true);
  cpu::matmul_f32out(x.data(), M, W.mat, b.data());
  cpu::testing::set_batch_dependent_matmul(false);
  EXPECT_FALSE(same_bits(a.data(), b.data(), a.size()));
}

// ---------------------------------------------------------------------------------------------
// rmsnorm and rope

TEST(CpuOps, RmsnormMatchesDoubleReference) {
  std::mt19937 rng(9);
  for (DType act : kActs)
    for (int64_t D : {16, 64, 100}) {
      const int64_t M = 7;
      Weights w = make_weights(1, D, act, rng, 0.3f);
      auto x = random_act(M * D, act, rng, 2.0f);
      std::vector<float> y(size_t(M * D)), y1(static_cast<size_t>(D));
      cpu::rmsnorm(x.data(), M, D, w.mat, 1e-6f, act, y.data());
      const double tol = act == DType::F32 ? 2e-6 : act == DType::BF16 ? 1.6e-2 : 2e-3;
      for (int64_t m = 0; m < M; ++m) {
        double ss = 0;
        for (int64_t i = 0; i < D; ++i) ss += double(x[m * D + i]) * x[m * D + i];
        const double inv = 1.0 / std::sqrt(ss / D + 1e-6);
        for (int64_t i = 0; i < D; ++i) {
          const double ref = (1.0 + 0) * weight_at(w.mat, i) * x[m * D + i] * inv;
          ASSERT_NEAR(y[m * D + i], ref, tol * (std::fabs(ref) + 1e-3)) << "D=" << D;
          ASSERT_EQ(y[m * D + i], round_to(act, y[m * D + i]));
        }
        cpu::rmsnorm(&x[size_t(m * D)], 1, D, w.mat, 1e-6f, act, y1.data());
        ASSERT_TRUE(same_bits(y1.data(), &y[size_t(m * D)], size_t(D)));  // alone == in a batch
      }
    }
}

TEST(CpuOps, RopeMatchesDoubleReferenceAndDependsOnlyOnPosition) {
  std::mt19937 rng(10);
  for (DType act : kActs)
    for (double theta : {1e4, 1e6}) {
      const int64_t T = 6;
      const int H = 3, hd = 32;
      auto x = random_act(T * H * hd, act, rng);
      std::vector<int32_t> pos = {0, 1, 7, 100, 4095, 7};
      auto y = x;
      cpu::rope(y.data(), T, H, hd, pos.data(), theta, act);
      const double tol = act == DType::F32 ? 1e-5 : act == DType::BF16 ? 1e-2 : 2e-3;
      for (int64_t t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < hd / 2; ++i) {
            const float* r = &x[size_t((t * H + h) * hd)];
            const double ang = double(pos[size_t(t)]) / std::pow(theta, 2.0 * i / hd);
            const double a = r[i], b = r[i + hd / 2];
            const double r0 = a * std::cos(ang) - b * std::sin(ang), r1 = b * std::cos(ang) + a * std::sin(ang);
            const float* o = &y[size_t((t * H + h) * hd)];
            // fp32 angles of large positions carry ~pos * 2^-24 rad of error (as in HF)
            const double tol_abs = tol * 4 + 1e-6 * pos[size_t(t)] * 2;
            ASSERT_NEAR(o[i], r0, tol_abs) << t << " " << i;
            ASSERT_NEAR(o[i + hd / 2], r1, tol_abs) << t << " " << i;
          }
      // Same position, same input -> same bits; token 5 is token 2's twin position.
      std::vector<float> single(x.begin() + 2 * H * hd, x.begin() + 3 * H * hd);
      int32_t p7 = 7;
      cpu::rope(single.data(), 1, H, hd, &p7, theta, act);
      ASSERT_TRUE(same_bits(single.data(), &y[size_t(2 * H * hd)], size_t(H * hd)));
    }
}

// ---------------------------------------------------------------------------------------------
// attention

struct KvCache {
  std::vector<float> kf, vf;
  std::vector<uint16_t> kh, vh;
  cpu::PagedKV kv;
  KvCache(DType t, int num_blocks, int block_size, int kvh, int hd) {
    kv.dtype = t;
    kv.block_size = block_size;
    kv.num_kv_heads = kvh;
    kv.head_dim = hd;
    const size_t n = size_t(num_blocks) * block_size * kvh * hd;
    if (t == DType::F32) {
      kf.assign(n, NAN);  // unwritten slots are NaN: reading one would poison the result
      vf.assign(n, NAN);
      kv.k = kf.data();
      kv.v = vf.data();
    } else {
      kh.assign(n, 0x7fc0);
      vh.assign(n, 0x7fc0);
      kv.k = kh.data();
      kv.v = vh.data();
    }
  }
};

// One sequence's keys/values for positions 0..L-1 and queries for each position.
struct AttnCase {
  int H = 4, KVH = 2, hd = 32, L = 150;
  std::vector<float> q, k, v;  // [L, H, hd], [L, KVH, hd], [L, KVH, hd]
  AttnCase(DType act, std::mt19937& rng, int L_ = 150, int H_ = 4, int KVH_ = 2, int hd_ = 32)
      : H(H_), KVH(KVH_), hd(hd_), L(L_) {
    q = random_act(int64_t(L) * H * hd, act, rng);
    k = random_act(int64_t(L) * KVH * hd, act, rng);
    v = random_act(int64_t(L) * KVH * hd, act, rng);
  }
};

// A block table that scatters a sequence over non-contiguous blocks (reversed, offset by `first`).
std::vector<int32_t> scattered_blocks(int L, int block_size, int first) {
  const int n = (L + block_size - 1) / block_size;
  std::vector<int32_t> bt(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) bt[size_t(i)] = first + (n - 1 - i);
  return bt;
}

void write_all(KvCache& c, const AttnCase& a, const std::vector<int32_t>& bt, int from, int to) {
  std::vector<int32_t> slots;
  for (int p = from; p < to; ++p) slots.push_back(bt[size_t(p / c.kv.block_size)] * c.kv.block_size + p % c.kv.block_size);
  const size_t row = size_t(a.KVH) * a.hd;
  cpu::kv_write(c.kv, &a.k[from * row], &a.v[from * row], to - from, slots.data());
}

// out for query rows [from, to) in one call.
std::vector<float> attend(const KvCache& c, const AttnCase& a, const std::vector<int32_t>& bt, int from, int to,
                          DType act) {
  std::vector<int32_t> pos;
  std::vector<const int32_t*> tables;
  for (int p = from; p < to; ++p) {
    pos.push_back(p);
    tables.push_back(bt.data());
  }
  const size_t row = size_t(a.H) * a.hd;
  std::vector<float> out((to - from) * row);
  cpu::attention(&a.q[from * row], to - from, a.H, c.kv, pos.data(), tables.data(), 1.0f / std::sqrt(float(a.hd)),
                 act, out.data());
  return out;
}

TEST(CpuOps, AttentionMatchesDoubleSoftmaxWithGqa) {
  std::mt19937 rng(11);
  for (DType act : kActs) {
    AttnCase a(act, rng, 150, 4, 2, 32);
    KvCache c(act, 20, 16, a.KVH, a.hd);
    auto bt = scattered_blocks(a.L, 16, 3);
    write_all(c, a, bt, 0, a.L);
    auto out = attend(c, a, bt, 0, a.L, act);
    const double tol = act == DType::F32 ? 2e-6 : act == DType::BF16 ? 2e-2 : 3e-3;
    const double scale = 1.0 / std::sqrt(double(a.hd));
    for (int t = 0; t < a.L; ++t)
      for (int h = 0; h < a.H; ++h) {
        const int kvh = h / (a.H / a.KVH);
        std::vector<double> s(size_t(t + 1));
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= t; ++j) {
          double d = 0;
          for (int i = 0; i < a.hd; ++i) d += double(a.q[(size_t(t) * a.H + h) * a.hd + i]) * a.k[(size_t(j) * a.KVH + kvh) * a.hd + i];
          s[size_t(j)] = d * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int i = 0; i < a.hd; ++i) {
          double ref = 0, mag = 0;  // mag: the size of the terms, which bounds rounding error
          for (int j = 0; j <= t; ++j) {
            const double term = s[size_t(j)] / sum * a.v[(size_t(j) * a.KVH + kvh) * a.hd + i];
            ref += term;
            mag += std::fabs(term);
          }
          ASSERT_NEAR(out[(size_t(t) * a.H + h) * a.hd + i], ref, tol * (std::fabs(ref) + mag))
              << dtype_name(act) << " t=" << t << " h=" << h << " i=" << i;
        }
      }
  }
}

TEST(CpuOps, AttentionRowIsTheSameForAnyChunkingBlockSizeBatchAndThreads) {
  std::mt19937 rng(12);
  for (DType act : kActs) {
    AttnCase a(act, rng, 200, 4, 2, 32);
    // Reference: every row computed alone (decode style), cache written token by token, block 16.
    KvCache ref_cache(act, 16, 16, a.KVH, a.hd);
    auto ref_bt = scattered_blocks(a.L, 16, 2);
    std::vector<float> ref;
    with_threads(1, [&] {
      for (int p = 0; p < a.L; ++p) {
        write_all(ref_cache, a, ref_bt, p, p + 1);
        auto o = attend(ref_cache, a, ref_bt, p, p + 1, act);
        ref.insert(ref.end(), o.begin(), o.end());
      }
    });
    const size_t row = size_t(a.H) * a.hd;
    for (int block_size : {16, 32})
      for (int chunk : {1, 7, 16, 64, 200})
        for (int threads : {1, 2})
          with_threads(threads, [&] {
            KvCache c(act, 400 / block_size + 4, block_size, a.KVH, a.hd);
            auto bt = scattered_blocks(a.L, block_size, 1);
            for (int from = 0; from < a.L; from += chunk) {
              const int to = std::min(a.L, from + chunk);
              write_all(c, a, bt, from, to);
              auto o = attend(c, a, bt, from, to, act);
              ASSERT_TRUE(same_bits(o.data(), &ref[from * row], o.size()))
                  << dtype_name(act) << " block=" << block_size << " chunk=" << chunk << " from=" << from
                  << " threads=" << threads;
            }
          });
  }
}

TEST(CpuOps, AttentionMixesSequencesInOneCallWithoutInteraction) {
  std::mt19937 rng(13);
  const DType act = DType::BF16;
  AttnCase a(act, rng, 90), b(act, rng, 90);
  KvCache c(act, 16, 16, a.KVH, a.hd);
  auto bta = scattered_blocks(90, 16, 0), btb = scattered_blocks(90, 16, 8);
  write_all(c, a, bta, 0, 90);
  write_all(c, b, btb, 0, 90);
  auto alone_a = attend(c, a, bta, 0, 90, act), alone_b = attend(c, b, btb, 0, 90, act);
  // Interleave: a's row p and b's row 89 - p in one call.
  const size_t row = size_t(a.H) * a.hd;
  std::vector<float> q;
  std::vector<int32_t> pos;
  std::vector<const int32_t*> tables;
  for (int p = 0; p < 90; ++p) {
    q.insert(q.end(), &a.q[p * row], &a.q[(p + 1) * row]);
    pos.push_back(p);
    tables.push_back(bta.data());
    q.insert(q.end(), &b.q[(89 - p) * row], &b.q[(90 - p) * row]);
    pos.push_back(89 - p);
    tables.push_back(btb.data());
  }
  std::vector<float> out(q.size());
  cpu::attention(q.data(), 180, a.H, c.kv, pos.data(), tables.data(), 1.0f / std::sqrt(32.0f), act, out.data());
  for (int p = 0; p < 90; ++p) {
    ASSERT_TRUE(same_bits(&out[(2 * p) * row], &alone_a[p * row], row)) << p;
    ASSERT_TRUE(same_bits(&out[(2 * p + 1) * row], &alone_b[(89 - p) * row], row)) << p;
  }
  EXPECT_FALSE(same_bits(alone_a.data(), alone_b.data(), alone_a.size()));  // not vacuous
}

TEST(CpuOps, AttentionIsTheSameOnEveryIsa) {
  std::mt19937 rng(14);
  AttnCase a(DType::F32, rng, 130, 8, 2, 40);  // head_dim 40: exercises the lane tail
  KvCache c(DType::F32, 10, 16, a.KVH, a.hd);
  auto bt = scattered_blocks(a.L, 16, 0);
  write_all(c, a, bt, 0, a.L);
  std::vector<float> first;
  for (const std::string& isa : supported_isas()) {
    cpu::testing::force_isa(isa);
    auto o = attend(c, a, bt, 0, a.L, DType::F32);
    if (first.empty()) first = o;
    ASSERT_TRUE(same_bits(o.data(), first.data(), o.size())) << isa;
  }
  cpu::testing::force_isa("");
}

TEST(CpuOps, KvWriteStoresExactBitsInTheCacheDtype) {
  std::mt19937 rng(15);
  for (DType t : kActs) {
    AttnCase a(t, rng, 20, 2, 2, 16);
    KvCache c(t, 4, 8, a.KVH, a.hd);
    auto bt = scattered_blocks(20, 8, 0);
    write_all(c, a, bt, 0, 20);
    for (int p = 0; p < 20; ++p) {
      const size_t slot = size_t(bt[size_t(p / 8)]) * 8 + p % 8;
      for (int i = 0; i < a.KVH * a.hd; ++i) {
        const size_t at = slot * a.KVH * a.hd + i;
        const float k = t == DType::F32 ? c.kf[at] : t == DType::BF16 ? bf16_to_f32(c.kh[at]) : f16_to_f32(c.kh[at]);
        ASSERT_EQ(f32_bits(k), f32_bits(a.k[size_t(p) * a.KVH * a.hd + i]));
      }
    }
  }
}

TEST(CpuOps, KernelConfigNamesTheBitChangingChoices) {
  const std::string k = cpu::kernel_config();
  EXPECT_NE(k.find("cpu-ref-v2"), std::string::npos);
  EXPECT_NE(k.find("lanes16"), std::string::npos);
  EXPECT_NE(k.find("attn_tile=64"), std::string::npos);
}

}  // namespace
}  // namespace verbatim
