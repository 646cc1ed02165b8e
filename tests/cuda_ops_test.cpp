// The CUDA kernels op by op against the CPU reference (kernels/ops.h), and their batch invariance.
// Element-wise ops and RMSNorm mirror the reference's arithmetic and must match it bit for bit;
// GEMM and attention sum on tensor cores in another (fixed) grouping and must match within the
// dtype's rounding, and give the same bits for a row whatever else shares the launch.
// Skipped (never faked) where no CUDA device is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "engine/sampler.h"
#include "kernels/cuda/fused.h"
#include "kernels/cuda/kernels.h"
#include "kernels/ops.h"
#include "support/cuda_helpers.h"

namespace verbatim {
namespace {

using test::DevBuf;
using test::to_device;
using test::to_host;

// Random values representable in `t`: fp32 copies for the CPU and raw 16-bit values for the GPU.
struct Values {
  std::vector<float> f;
  std::vector<uint16_t> raw;
};
Values random_values(size_t n, DType t, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  Values v;
  v.f.resize(n);
  v.raw.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float x = nd(rng);
    v.raw[i] = t == DType::BF16 ? f32_to_bf16(x) : f32_to_f16(x);
    v.f[i] = t == DType::BF16 ? bf16_to_f32(v.raw[i]) : f16_to_f32(v.raw[i]);
  }
  return v;
}
std::vector<float> to_floats(const std::vector<uint16_t>& raw, DType t) {
  std::vector<float> f(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) f[i] = t == DType::BF16 ? bf16_to_f32(raw[i]) : f16_to_f32(raw[i]);
  return f;
}
double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
WeightRef weight_ref(const Values& v, DType t, int64_t rows, int64_t cols) {
  WeightRef w;
  w.dtype = t;
  w.rows = rows;
  w.cols = cols;
  w.data = v.raw.data();
  w.name = "test";
  return w;
}
double tol(DType t) { return t == DType::BF16 ? 4e-3 : 6e-4; }

class CudaOps : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { VB_REQUIRE_GPU(); }
  DType t() const { return GetParam(); }
};

// ---- GEMM

struct GemmShape {
  int N, K;
};
const GemmShape kShapes[] = {{1024, 2048}, {512, 64}, {160, 128}, {3072, 1024}};

std::vector<uint16_t> gpu_gemm(const DevBuf& x, int M, int K, const DevBuf& w, int N, DType t, int split) {
  DevBuf y(size_t(M) * N * 2);
  DevBuf ws(size_t(64) << 20);
  cuda::GemmOut out;
  out.y = y.p;
  cuda::gemm(x.p, M, K, K, w.p, N, t, split, out, ws.as<float>(), ws.bytes, nullptr);
  return to_host<uint16_t>(y, size_t(M) * N);
}

TEST_P(CudaOps, GemmMatchesCpuWithinDtypeRounding) {
  for (const GemmShape& s : kShapes) {
    const int M = 33;
    Values x = random_values(size_t(M) * s.K, t(), 1.0f, 1), w = random_values(size_t(s.N) * s.K, t(), 0.05f, 2);
    std::vector<float> want(size_t(M) * s.N);
    cpu::matmul(x.f.data(), M, weight_ref(w, t(), s.N, s.K), t(), want.data());
    DevBuf dx = to_device(x.raw), dw = to_device(w.raw);
    const std::vector<float> got = to_floats(gpu_gemm(dx, M, s.K, dw, s.N, t(), cuda::gemm_split_for(s.N, s.K)), t());
    EXPECT_LT(rel_error(got, want), tol(t())) << "N " << s.N << " K " << s.K;
    // fp32 output (the logits path): no rounding, so much closer.
    std::vector<float> want32(size_t(M) * s.N);
    cpu::matmul_f32out(x.f.data(), M, weight_ref(w, t(), s.N, s.K), want32.data());
    DevBuf y32(size_t(M) * s.N * 4), ws(size_t(64) << 20);
    cuda::GemmOut out;
    out.y32 = y32.as<float>();
    cuda::gemm(dx.p, M, s.K, s.K, dw.p, s.N, t(), cuda::gemm_split_for(s.N, s.K), out, ws.as<float>(), ws.bytes, nullptr);
    EXPECT_LT(rel_error(to_host<float>(y32, want32.size()), want32), 1e-5) << "fp32 out, N " << s.N << " K " << s.K;
  }
}

// Selects a GEMM kernel for a scope (the variant is process-wide state of the launcher).
struct ScopedGemmKernel {
  cuda::GemmKernel saved = cuda::active_gemm_kernel();
  explicit ScopedGemmKernel(cuda::GemmKernel k) { cuda::set_gemm_kernel(k); }
  ~ScopedGemmKernel() { cuda::set_gemm_kernel(saved); }
};

TEST_P(CudaOps, GemmRowBitsAreTheSameForEveryM) {
  for (cuda::GemmKernel kernel : {cuda::GemmKernel::V1, cuda::GemmKernel::V2, cuda::GemmKernel::Tiled})
  for (const GemmShape& s : kShapes) {
    SCOPED_TRACE(std::string("gemm kernel ") + cuda::gemm_kernel_name(kernel));
    ScopedGemmKernel use(kernel);
    const int Mmax = 257;
    Values x = random_values(size_t(Mmax) * s.K, t(), 1.0f, 3), w = random_values(size_t(s.N) * s.K, t(), 0.05f, 4);
    DevBuf dx = to_device(x.raw), dw = to_device(w.raw);
    const int split = cuda::gemm_split_for(s.N, s.K);
    // Every row alone (M = 1, the decode case).
    std::vector<std::vector<uint16_t>> alone(Mmax);
    for (int r = 0; r < Mmax; ++r) {
      DevBuf xr(size_t(s.K) * 2);
      VB_CUDA(cudaMemcpy(xr.p, x.raw.data() + size_t(r) * s.K, size_t(s.K) * 2, cudaMemcpyHostToDevice));
      alone[size_t(r)] = gpu_gemm(xr, 1, s.K, dw, s.N, t(), split);
    }
    std::vector<int> Ms(70);
    std::iota(Ms.begin(), Ms.end(), 1);
    for (int m : {100, 130, 200, 257}) Ms.push_back(m);
    int checked = 0;
    for (int M : Ms) {
      const std::vector<uint16_t> y = gpu_gemm(dx, M, s.K, dw, s.N, t(), split);
      for (int r = 0; r < M; ++r) {
        ASSERT_EQ(std::memcmp(&y[size_t(r) * s.N], alone[size_t(r)].data(), size_t(s.N) * 2), 0)
            << "row " << r << " of M = " << M << " (N " << s.N << " K " << s.K << ", tile " << cuda::gemm_tile_name(M)
            << ") differs from the row computed alone";
        ++checked;
      }
    }
    EXPECT_GT(checked, 2000);
    // Control: another K order (a different split) does change bits, so the comparison above is
    // sensitive to the summation order it claims to hold fixed.
    if (s.K >= 256) {
      const std::vector<uint16_t> a = gpu_gemm(dx, 64, s.K, dw, s.N, t(), 1);
      const std::vector<uint16_t> b = gpu_gemm(dx, 64, s.K, dw, s.N, t(), s.K % 128 == 0 ? 4 : 2);
      EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * 2), 0) << "N " << s.N << " K " << s.K;
    }
  }
}

// One GEMM's raw output bytes, every output buffer poisoned first (0xFF: NaN in every dtype), so
// an element a kernel forgets to write shows up as a difference. what: 0 rounded y, 1 fp32 y32,
// 2 the split-K partials a fused consumer reads (partials_only).
// ws_written (if given): whether the GEMM wrote any byte of the workspace (it starts as 0xFF).
std::vector<uint8_t> gemm_bytes(const DevBuf& x, int M, int K, const DevBuf& w, int N, DType t, int split, int what,
                                size_t ws_bytes = size_t(64) << 20, bool* ws_written = nullptr) {
  DevBuf ws(ws_bytes);
  VB_CUDA(cudaMemset(ws.p, 0xFF, ws.bytes));
  cuda::GemmOut out;
  size_t bytes = size_t(M) * N * (what == 1 ? 4 : 2);
  DevBuf y(bytes);
  VB_CUDA(cudaMemset(y.p, 0xFF, y.bytes));
  if (what == 0) out.y = y.p;
  if (what == 1) out.y32 = y.as<float>();
  if (what == 2) {
    out.y = y.p;
    out.partials_only = split > 1;
  }
  cuda::gemm(x.p, M, K, K, w.p, N, t, split, out, ws.as<float>(), ws.bytes, nullptr);
  if (ws_written) {
    const std::vector<uint8_t> b = to_host<uint8_t>(ws, ws.bytes);
    *ws_written = std::any_of(b.begin(), b.end(), [](uint8_t v) { return v != 0xFF; });
  }
  if (what == 2 && split > 1) return to_host<uint8_t>(ws, cuda::gemm_workspace_bytes(M, N, split));
  return to_host<uint8_t>(y, bytes);
}

// v2 (cp.async pipeline per thread) and the tiled kernel (CTA tiles in shared memory, segments
// added in the kernel or by the reduce) issue v1's MMAs in v1's order, so they must give v1's
// bits: every M from 1 to 70 (the small tiles and their edges) and the large tile's edges (128,
// 129, 257, 300), the model's shapes (Qwen3-0.6B qkv/o/gate_up/down), ragged N (N % 16 == 8) and
// K (K % 32 != 0), rounded, fp32 and partial outputs, the contract's split and other splits, and
// the tiled kernel both adding the segments itself and leaving them to the reduce kernel.
struct KernelUnderTest {
  cuda::GemmKernel kernel;
  cuda::GemmTuning tuning;
  const char* name;
};
cuda::GemmTuning tuned(int combine, bool wide, int v1_m64, int unroll16 = 4, bool wgmma = false, int wg_combine = -1,
                       int wg_rows = 128, int wg_sum_rows = 128, bool wg_tma = true) {
  cuda::GemmTuning t;
  t.wgmma_tma = wg_tma;
  t.tiled_wgmma = wgmma;
  t.wgmma_combine = wg_combine;
  t.wgmma_rows = wg_rows;
  t.wgmma_sum_rows = wg_sum_rows;
  t.wgmma_pairs = false;    // the plain forms here; paired() and persistent() below add the others
  t.wgmma_persist = false;
  t.v1_unroll16 = unroll16;
  t.v1_unroll32 = 4;        // the plain v1 (the reference's form); unrolled32() below sets others
  t.tiled_combine = combine;
  t.tiled_wide = wide;
  t.v1_m64 = v1_m64;
  return t;
}
// The 256-row wgmma kernel with one stage of MMAs left running (GemmTuning::wgmma_lag).
cuda::GemmTuning lagged(cuda::GemmTuning t) {
  t.wgmma_lag = 1;
  return t;
}
// ... and each stage's two chunks copied as one 128-byte-swizzle box (GemmTuning::wgmma_pairs).
cuda::GemmTuning paired(cuda::GemmTuning t) {
  t.wgmma_pairs = true;
  return t;
}
// ... and one CTA per SM looping over tiles (GemmTuning::wgmma_persist).
cuda::GemmTuning persistent(cuda::GemmTuning t) {
  t.wgmma_persist = true;
  return t;
}
// v1 with u 32-k chunks per load round at 17..32 rows (GemmTuning::v1_unroll32).
cuda::GemmTuning unrolled32(cuda::GemmTuning t, int u) {
  t.v1_unroll32 = u;
  return t;
}
// The stream kernel with s stages at <= 16 rows (GemmTuning::stream_stages16).
// preload / l2: GemmTuning::stream_preload / stream_preload_l2 (W issued before the PDL wait).
cuda::GemmTuning stream_stages(cuda::GemmTuning t, int s, int preload = 0, int l2 = 0) {
  t.stream_stages16 = s;
  t.stream_preload = preload;
  t.stream_preload_l2 = l2;
  return t;
}
// With the preload: W of only the ring's first n stages before the wait (GemmTuning::stream_preload_stages).
cuda::GemmTuning preload_stages(cuda::GemmTuning t, int n) {
  t.stream_preload_stages = n;
  return t;
}
// The stream kernel with s stages at 17..32 rows (GemmTuning::stream_stages32).
cuda::GemmTuning stream_stages32(cuda::GemmTuning t, int s) {
  t.stream_stages32 = s;
  return t;
}
struct ScopedGemmTuning {
  cuda::GemmTuning saved = cuda::gemm_tuning();
  explicit ScopedGemmTuning(const cuda::GemmTuning& t) { cuda::set_gemm_tuning(t); }
  ~ScopedGemmTuning() { cuda::set_gemm_tuning(saved); }
};
TEST_P(CudaOps, GemmKernelsAreV1BitForBit) {
  const GemmShape shapes[] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072},
                              {512, 64},    {160, 128},   {520, 200},   {24, 1000}};
  const KernelUnderTest kernels[] = {
      {cuda::GemmKernel::V2, tuned(-1, false, 0), "v2"},
      {cuda::GemmKernel::Tiled, tuned(1, false, 0), "tiled, segments added in the kernel"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0), "tiled, segments to partials"},
      {cuda::GemmKernel::Tiled, tuned(0, true, 0), "tiled, segments to partials, 128 x 256 tiles"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 1), "tiled, wgmma past 64 rows, segments added in the kernel"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 0), "tiled, wgmma past 64 rows, segments to partials"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 0, 256), "tiled, wgmma with 256-row CTAs, to partials"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, -1, 256), "tiled, wgmma with 256-row CTAs, added by size"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 1, 256, 256),
       "tiled, wgmma with 256-row CTAs, segments added in the kernel (sums in the workspace)"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 1, 128, 128, false),
       "tiled, wgmma copies by cp.async, segments added in the kernel"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 0, 256, 128, false),
       "tiled, wgmma copies by cp.async, 256-row CTAs, to partials"},
      {cuda::GemmKernel::Tiled, tuned(0, false, 0, 4, true, 1, 256, 256, false),
       "tiled, wgmma copies by cp.async, 256-row CTAs, sums in the workspace"},
      {cuda::GemmKernel::Tiled, lagged(tuned(0, false, 0, 4, true, 0, 256)),
       "tiled, wgmma with 256-row CTAs and one stage of MMAs running, to partials"},
      {cuda::GemmKernel::Tiled, lagged(tuned(0, false, 0, 4, true, 1, 256, 256)),
       "tiled, wgmma with 256-row CTAs and one stage of MMAs running, sums in the workspace"},
      {cuda::GemmKernel::Tiled, lagged(tuned(0, false, 0, 4, true, 1, 256, 256, false)),
       "tiled, wgmma copies by cp.async, 256-row CTAs and one stage of MMAs running, sums in the workspace"},
      {cuda::GemmKernel::Tiled, paired(tuned(0, false, 0, 4, true, 0, 256)),
       "tiled, wgmma with 256-row CTAs and 64-k boxes, to partials"},
      {cuda::GemmKernel::Tiled, paired(tuned(0, false, 0, 4, true, -1, 256)),
       "tiled, wgmma with 256-row CTAs and 64-k boxes, added by size"},
      {cuda::GemmKernel::Tiled, paired(lagged(tuned(0, false, 0, 4, true, 1, 256, 256))),
       "tiled, wgmma with 256-row CTAs, 64-k boxes and one stage of MMAs running, sums in the workspace"},
      {cuda::GemmKernel::Tiled, persistent(tuned(0, false, 0, 4, true, 1)),
       "tiled, wgmma on one CTA per SM, segments added in the kernel"},
      {cuda::GemmKernel::Tiled, persistent(tuned(0, false, 0, 4, true, 0, 256)),
       "tiled, wgmma with 256-row CTAs, one per SM, to partials"},
      {cuda::GemmKernel::Tiled, persistent(paired(lagged(tuned(0, false, 0, 4, true, 1, 256, 256)))),
       "tiled, wgmma with 256-row CTAs, one per SM, 64-k boxes, one stage running, sums in the workspace"},
      {cuda::GemmKernel::V1, tuned(-1, false, 1), "v1, 64 x 32 tiles at 33..64 rows"},
      {cuda::GemmKernel::V1, tuned(-1, false, 2), "v1, two 32-row tiles at 33..64 rows"},
      {cuda::GemmKernel::V1, tuned(-1, false, 0, 8), "v1, 8 chunks per round at <= 16 rows"},
      {cuda::GemmKernel::V1, unrolled32(tuned(-1, false, 0), 6), "v1, 6 chunks per round at 17..32 rows"},
      {cuda::GemmKernel::V1, unrolled32(tuned(-1, false, 0), 8), "v1, 8 chunks per round at 17..32 rows"},
      {cuda::GemmKernel::V1, tuned(-1, false, 3), "v1, 64 x 16 tiles, 4 chunks per round at 33..64 rows"},
      {cuda::GemmKernel::Stream, tuned(-1, false, 0), "stream (TMA ring) at <= 64 rows"},
      {cuda::GemmKernel::Stream, stream_stages(tuned(-1, false, 0), 3), "stream, 3 stages at <= 16 rows"},
      {cuda::GemmKernel::Stream, stream_stages(tuned(-1, false, 0), 4), "stream, 4 stages at <= 16 rows"},
      {cuda::GemmKernel::Stream, stream_stages32(tuned(-1, false, 0), 3), "stream, 3 stages at 17..32 rows"},
      {cuda::GemmKernel::Stream, stream_stages(tuned(-1, false, 0), 3, 2), "stream, W's first stages before the PDL wait"},
      {cuda::GemmKernel::Stream, stream_stages(tuned(-1, false, 0), 5, 2, 8),
       "stream, 5 stages at <= 16 rows, W's first stages (and 8 more into L2) before the PDL wait"},
      {cuda::GemmKernel::Stream, preload_stages(stream_stages(tuned(-1, false, 0), 4, 2), 1),
       "stream, 4 stages at <= 16 rows, W of the first stage only before the PDL wait"},
      {cuda::GemmKernel::Auto, tuned(-1, false, 0), "auto, segments added in the kernel by size"},
      {cuda::GemmKernel::Auto, cuda::GemmTuning{}, "auto, default knobs"}};
  int compared = 0;
  for (const GemmShape& s : shapes) {
    const int Mmax = 300;
    Values x = random_values(size_t(Mmax) * s.K, t(), 1.0f, 11), w = random_values(size_t(s.N) * s.K, t(), 0.05f, 12);
    DevBuf dx = to_device(x.raw), dw = to_device(w.raw);
    std::vector<int> splits = {cuda::gemm_split_for(s.N, s.K)};
    if (s.K % 64 == 0 && splits[0] != 2) splits.push_back(2);
    if (splits[0] != 1) splits.push_back(1);
    std::vector<int> Ms(70);
    std::iota(Ms.begin(), Ms.end(), 1);
    for (int m : {100, 128, 129, 257, 300}) Ms.push_back(m);
    for (int split : splits)
      for (int M : Ms)
        for (int what = 0; what < 3; ++what) {
          if (what != 0 && M % 7 != 1 && M != 16 && M != 64 && M != 129) continue;  // fp32/partials: a sample
          std::vector<uint8_t> v1;
          {
            ScopedGemmKernel use(cuda::GemmKernel::V1);
            ScopedGemmTuning tune(tuned(-1, false, 0));
            v1 = gemm_bytes(dx, M, s.K, dw, s.N, t(), split, what);
          }
          for (const KernelUnderTest& k : kernels) {
            ScopedGemmKernel use(k.kernel);
            ScopedGemmTuning tune(k.tuning);
            const std::vector<uint8_t> other = gemm_bytes(dx, M, s.K, dw, s.N, t(), split, what);
            ASSERT_EQ(v1.size(), other.size());
            ASSERT_EQ(std::memcmp(v1.data(), other.data(), v1.size()), 0)
                << k.name << " differs from v1: N " << s.N << " K " << s.K << " M " << M << " split " << split
                << " output " << what;
            ++compared;
          }
        }
  }
  EXPECT_GT(compared, 5000);
  // Control: the comparison sees one flipped input bit (each kernel on another weight differs).
  const GemmShape s{1024, 2048};
  Values x = random_values(size_t(200) * s.K, t(), 1.0f, 13), w = random_values(size_t(s.N) * s.K, t(), 0.05f, 14);
  DevBuf dx = to_device(x.raw), dw = to_device(w.raw);
  std::vector<uint8_t> v1;
  {
    ScopedGemmKernel use(cuda::GemmKernel::V1);
    v1 = gemm_bytes(dx, 200, s.K, dw, s.N, t(), cuda::gemm_split_for(s.N, s.K), 0);
  }
  w.raw[size_t(5) * s.K + 700] ^= 0x0100;  // an exponent bit of one weight of column 5
  DevBuf dw2 = to_device(w.raw);
  for (const KernelUnderTest& k : kernels) {
    ScopedGemmKernel use(k.kernel);
    ScopedGemmTuning tune(k.tuning);
    const std::vector<uint8_t> other = gemm_bytes(dx, 200, s.K, dw2, s.N, t(), cuda::gemm_split_for(s.N, s.K), 0);
    EXPECT_NE(std::memcmp(v1.data(), other.data(), v1.size()), 0) << k.name;
  }
}

// The wgmma kernel adding segments on 256-row CTAs keeps its sums in the workspace, in passes of
// whole 256-row tiles that fit: several passes (the last of > 64 rows), a pass shortened so the last
// is not <= 64 rows, and no pass at all (128-row CTAs) must all give v1's bits. The workspace starts
// as NaN bytes, so a sum that read it before writing would show; the pass cases must write it (the
// launch ran the 256-row kernel) and the others must not (it fell back to 128 rows). Default knobs
// on an 8B-shaped layer (K 4,096, 128 tiles of 256 rows) must pick the 256-row kernel by size.
TEST_P(CudaOps, GemmWgmmaSumsInWorkspaceGiveV1BitsInEveryPass) {
  const GemmShape s{1024, 2048};
  const int split = cuda::gemm_split_for(s.N, s.K);
  ASSERT_GT(split, 1);
  const int Mmax = 830;
  Values x = random_values(size_t(Mmax) * s.K, t(), 1.0f, 21), w = random_values(size_t(s.N) * s.K, t(), 0.05f, 22);
  DevBuf dx = to_device(x.raw), dw = to_device(w.raw);
  const size_t tile = size_t(s.N / 128) * 64 * 512 * sizeof(float);  // one 256-row pass of sums
  struct Case {
    int M;
    size_t tiles;
    bool passes;
  };
  // Passes: 830 with 2 tiles 512 + 318; 600 with 2: 512 + 88; 600 with 8: one; 800 with 3: 768 + 32
  // would end at <= 64 rows, so 512 + 288; 830 with 1 (256 x 3 + 62) and 300 with 1 (256 + 44): none.
  for (const Case c : {Case{830, 2, true}, Case{600, 2, true}, Case{600, 8, true}, Case{800, 3, true},
                       Case{830, 1, false}, Case{300, 1, false}}) {
    std::vector<uint8_t> v1;
    {
      ScopedGemmKernel use(cuda::GemmKernel::V1);
      ScopedGemmTuning tune(tuned(-1, false, 0));
      v1 = gemm_bytes(dx, c.M, s.K, dw, s.N, t(), split, 0);
    }
    ScopedGemmKernel use(cuda::GemmKernel::Tiled);
    ScopedGemmTuning tune(tuned(0, false, 0, 4, true, 1, 256, 256));
    bool written = false;
    const std::vector<uint8_t> other = gemm_bytes(dx, c.M, s.K, dw, s.N, t(), split, 0, c.tiles * tile, &written);
    ASSERT_EQ(v1.size(), other.size());
    EXPECT_EQ(std::memcmp(v1.data(), other.data(), v1.size()), 0) << "M " << c.M << ", workspace of " << c.tiles << " tiles";
    EXPECT_EQ(written, c.passes) << "M " << c.M << ", workspace of " << c.tiles << " tiles";
  }
  const GemmShape big{4096, 4096};
  const int M = 1024, bsplit = cuda::gemm_split_for(big.N, big.K);
  ASSERT_GT(bsplit, 1);
  Values bx = random_values(size_t(M) * big.K, t(), 1.0f, 23), bw = random_values(size_t(big.N) * big.K, t(), 0.05f, 24);
  DevBuf dbx = to_device(bx.raw), dbw = to_device(bw.raw);
  std::vector<uint8_t> v1;
  {
    ScopedGemmKernel use(cuda::GemmKernel::V1);
    ScopedGemmTuning tune(tuned(-1, false, 0));
    v1 = gemm_bytes(dbx, M, big.K, dbw, big.N, t(), bsplit, 0);
  }
  ScopedGemmKernel use(cuda::GemmKernel::Auto);
  ScopedGemmTuning tune(cuda::GemmTuning{});
  bool written = false;
  EXPECT_EQ(gemm_bytes(dbx, M, big.K, dbw, big.N, t(), bsplit, 0, size_t(64) << 20, &written), v1);
  EXPECT_TRUE(written) << "default knobs did not run the 256-row kernel adding segments in the workspace";
}

// ---- RMSNorm, RoPE, SiLU-mul, add, embedding: the reference's bits.

TEST_P(CudaOps, RmsNormIsTheCpuReferenceBitForBit) {
  const int T = 37, D = 1024;
  Values x = random_values(size_t(T) * D, t(), 2.0f, 5), w = random_values(D, t(), 1.0f, 6);
  std::vector<float> want(size_t(T) * D);
  cpu::rmsnorm(x.f.data(), T, D, weight_ref(w, t(), 1, D), 1e-6f, t(), want.data());
  DevBuf dx = to_device(x.raw), dw = to_device(w.f), dy(size_t(T) * D * 2);
  cuda::rmsnorm(dx.p, {}, T, D, dw.as<float>(), 1e-6f, t(), dy.p, {}, nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dy, want.size()), t()), want);
  // Per-head (Qwen3 q/k norm): 16 heads of 128 inside rows of width 3000, in place.
  const int H = 16, hd = 128, ld = 3000;
  Values q = random_values(size_t(T) * ld, t(), 1.5f, 7), qw = random_values(hd, t(), 1.0f, 8);
  std::vector<float> heads(size_t(T) * H * hd);
  for (int r = 0; r < T; ++r) std::copy_n(&q.f[size_t(r) * ld], H * hd, &heads[size_t(r) * H * hd]);
  std::vector<float> want_h(heads.size());
  cpu::rmsnorm(heads.data(), int64_t(T) * H, hd, weight_ref(qw, t(), 1, hd), 1e-6f, t(), want_h.data());
  DevBuf dq = to_device(q.raw), dqw = to_device(qw.f);
  cuda::RowMap map{H, ld};
  cuda::rmsnorm(dq.p, map, int64_t(T) * H, hd, dqw.as<float>(), 1e-6f, t(), dq.p, map, nullptr);
  const std::vector<float> got = to_floats(to_host<uint16_t>(dq, q.raw.size()), t());
  for (int r = 0; r < T; ++r) {
    ASSERT_TRUE(std::equal(want_h.begin() + r * H * hd, want_h.begin() + (r + 1) * H * hd, got.begin() + size_t(r) * ld))
        << "token " << r;
    ASSERT_TRUE(std::equal(q.f.begin() + size_t(r) * ld + H * hd, q.f.begin() + size_t(r + 1) * ld,
                           got.begin() + size_t(r) * ld + H * hd))
        << "bytes past the heads were touched, token " << r;
  }
}

TEST_P(CudaOps, AddRmsNormIsAddThenNormBitForBit) {
  const int T = 9, D = 2048;
  Values h = random_values(size_t(T) * D, t(), 3.0f, 9), d = random_values(size_t(T) * D, t(), 1.0f, 10),
         w = random_values(D, t(), 1.0f, 11);
  std::vector<float> hh = h.f, want(size_t(T) * D);
  cpu::add_inplace(hh.data(), d.f.data(), int64_t(T) * D, t());
  cpu::rmsnorm(hh.data(), T, D, weight_ref(w, t(), 1, D), 1e-6f, t(), want.data());
  DevBuf dh = to_device(h.raw), dd = to_device(d.raw), dw = to_device(w.f), dy(size_t(T) * D * 2);
  cuda::add_rmsnorm(dh.p, dd.p, T, D, dw.as<float>(), 1e-6f, t(), dy.p, nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dh, hh.size()), t()), hh);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dy, want.size()), t()), want);
}

TEST_P(CudaOps, RopeIsTheCpuReferenceBitForBit) {
  const int T = 29, heads = 6, hd = 128;
  const double theta = 1e6;
  std::vector<int32_t> pos(T);
  std::mt19937 rng(12);
  for (int& p : pos) p = int(rng() % 40000);
  Values x = random_values(size_t(T) * heads * hd, t(), 1.0f, 13);
  std::vector<float> want = x.f;
  cpu::rope(want.data(), T, heads, hd, pos.data(), theta, t());
  const std::vector<float> table = cuda::rope_table(40000, hd, theta);
  DevBuf dx = to_device(x.raw), dp = to_device(pos), dt = to_device(table);
  cuda::rope(dx.p, {heads, int64_t(heads) * hd}, T, heads, hd, dp.as<int32_t>(), dt.as<float>(), t(), nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dx, want.size()), t()), want);
}

TEST_P(CudaOps, SiluMulAddAndEmbeddingAreTheCpuReferenceBitForBit) {
  const int T = 17, D = 768;
  Values g = random_values(size_t(T) * D, t(), 4.0f, 14), u = random_values(size_t(T) * D, t(), 1.0f, 15);
  std::vector<float> want(size_t(T) * D);
  cpu::silu_mul(g.f.data(), u.f.data(), T, D, t(), want.data());
  // gate and up side by side in one [T, 2D] row, as the fused gate_up GEMM writes them.
  std::vector<uint16_t> gu(size_t(T) * 2 * D);
  for (int r = 0; r < T; ++r) {
    std::copy_n(&g.raw[size_t(r) * D], D, &gu[size_t(r) * 2 * D]);
    std::copy_n(&u.raw[size_t(r) * D], D, &gu[size_t(r) * 2 * D + D]);
  }
  DevBuf dgu = to_device(gu), dout(size_t(T) * D * 2);
  cuda::silu_mul(dgu.p, dgu.as<uint16_t>() + D, 2 * D, T, D, t(), dout.p, nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dout, want.size()), t()), want);

  std::vector<float> sum = g.f;
  cpu::add_inplace(sum.data(), u.f.data(), int64_t(T) * D, t());
  DevBuf dg = to_device(g.raw), du = to_device(u.raw);
  cuda::add_inplace(dg.p, du.p, int64_t(T) * D, t(), nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(dg, sum.size()), t()), sum);

  const int V = 300;
  Values E = random_values(size_t(V) * D, t(), 1.0f, 16);
  std::vector<int32_t> toks = {5, 299, 0, 5, 123};
  std::vector<float> want_e(toks.size() * D);
  cpu::embed(weight_ref(E, t(), V, D), toks.data(), int64_t(toks.size()), want_e.data());
  DevBuf dE = to_device(E.raw), dtok = to_device(toks), de(toks.size() * D * 2);
  cuda::embed(dE.p, D, dtok.as<int32_t>(), int64_t(toks.size()), t(), de.p, nullptr);
  EXPECT_EQ(to_floats(to_host<uint16_t>(de, want_e.size()), t()), want_e);
}

// ---- Fused glue: the same bits as the unfused kernels.

TEST_P(CudaOps, FusedGlueGivesTheUnfusedBits) {
  const int T = 19, H = 1024, I = 768;
  DevBuf ws(size_t(64) << 20);
  Values x = random_values(size_t(T) * H, t(), 1.0f, 31);
  const DevBuf dx19 = to_device(x.raw);
  // head_dim 128 (Qwen3), 64 and 256: qkv_post keeps each lane's norm weights and RoPE entries
  // in registers sized for 256. 300 tokens: the many-token kernel on 3 blocks, two items per warp
  // at head_dim <= 128 (each half warp loops over 50 items), one at 256 (each warp over 100).
  const int Tmax = 300;
  Values xq = random_values(size_t(Tmax) * H, t(), 1.0f, 30);
  DevBuf dxq = to_device(xq.raw);
  for (const std::pair<int, int>& case_ : std::initializer_list<std::pair<int, int>>{{128, 19}, {64, 19}, {256, 19}, {128, Tmax}, {64, Tmax}, {256, Tmax}}) {
  const int hd = case_.first, T = case_.second;
  SCOPED_TRACE("head_dim " + std::to_string(hd) + ", " + std::to_string(T) + " tokens");
  const DevBuf& dx = T == Tmax ? dxq : dx19;
  cuda::set_qkv_post_loop_blocks(T == Tmax ? 3 : 0);
  const int nh = 4, nkv = 2, nqkv = (nh + 2 * nkv) * hd;
  Values wq = random_values(size_t(nqkv) * H, t(), 0.05f, 32), qn = random_values(hd, t(), 1.0f, 33),
         kn = random_values(hd, t(), 1.0f, 34);
  std::vector<int32_t> pos(T), slots(T);
  for (int i = 0; i < T; ++i) {
    pos[size_t(i)] = (100 + 37 * i) % 2000;
    slots[size_t(i)] = 3 * i + 1;
  }
  const std::vector<float> table = cuda::rope_table(2048, hd, 1e6);
  DevBuf dw = to_device(wq.raw), dqn = to_device(qn.f), dkn = to_device(kn.f), dpos = to_device(pos),
         dslot = to_device(slots), dtab = to_device(table);
  const size_t cache = size_t(3 * T + 2) * nkv * hd;
  const int split = cuda::gemm_split_for(nqkv, H);
  ASSERT_GT(split, 1);
  // Unfused: GEMM (reduced, rounded), q norm, k norm, RoPE, KV write.
  DevBuf y1(size_t(T) * nqkv * 2), kc1(cache * 2), vc1(cache * 2);
  VB_CUDA(cudaMemset(kc1.p, 0, kc1.bytes));
  VB_CUDA(cudaMemset(vc1.p, 0, vc1.bytes));
  cuda::GemmOut out;
  out.y = y1.p;
  cuda::gemm(dx.p, T, H, H, dw.p, nqkv, t(), split, out, ws.as<float>(), ws.bytes, nullptr);
  char* q = static_cast<char*>(y1.p);
  cuda::rmsnorm(q, {nh, nqkv}, int64_t(T) * nh, hd, dqn.as<float>(), 1e-6f, t(), q, {nh, nqkv}, nullptr);
  cuda::rmsnorm(q + nh * hd * 2, {nkv, nqkv}, int64_t(T) * nkv, hd, dkn.as<float>(), 1e-6f, t(), q + nh * hd * 2,
                {nkv, nqkv}, nullptr);
  cuda::rope(q, {nh + nkv, nqkv}, T, nh + nkv, hd, dpos.as<int32_t>(), dtab.as<float>(), t(), nullptr);
  cuda::kv_write(q + nh * hd * 2, q + (nh + nkv) * hd * 2, nqkv, T, nkv, hd, dslot.as<int32_t>(), kc1.p, vc1.p, t(),
                 nullptr);
  // Fused: partials left by the GEMM, summed by qkv_post.
  DevBuf y2(size_t(T) * nqkv * 2), kc2(cache * 2), vc2(cache * 2);
  VB_CUDA(cudaMemset(kc2.p, 0, kc2.bytes));
  VB_CUDA(cudaMemset(vc2.p, 0, vc2.bytes));
  cuda::QkvPost p;
  p.in = cuda::gemm_for_consumer(dx.p, T, H, dw.p, nqkv, t(), split, y2.p, ws.as<float>(), ws.bytes, nullptr);
  ASSERT_NE(p.in.partials, nullptr);
  p.qkv = y2.p;
  p.nh = nh;
  p.nkv = nkv;
  p.hd = hd;
  p.q_norm = dqn.as<float>();
  p.k_norm = dkn.as<float>();
  p.positions = dpos.as<int32_t>();
  p.cos_sin = dtab.as<float>();
  p.slots = dslot.as<int32_t>();
  p.k_cache = kc2.p;
  p.v_cache = vc2.p;
  cuda::qkv_post(p, T, t(), nullptr);
  const auto a1 = to_host<uint16_t>(y1, size_t(T) * nqkv), a2 = to_host<uint16_t>(y2, size_t(T) * nqkv);
  for (int r = 0; r < T; ++r)
    ASSERT_TRUE(std::equal(a1.begin() + r * nqkv, a1.begin() + r * nqkv + nh * hd, a2.begin() + r * nqkv)) << "q row " << r;
  EXPECT_EQ(to_host<uint16_t>(kc1, cache), to_host<uint16_t>(kc2, cache));
  EXPECT_EQ(to_host<uint16_t>(vc1, cache), to_host<uint16_t>(vc2, cache));
  }
  cuda::set_qkv_post_loop_blocks(0);
  const DevBuf& dx = dx19;

  // add + RMSNorm from partials, and SiLU·mul from partials.
  Values hres = random_values(size_t(T) * H, t(), 2.0f, 35), nw = random_values(H, t(), 1.0f, 36),
         wo = random_values(size_t(H) * I, t(), 0.05f, 37), wgu = random_values(size_t(2 * I) * H, t(), 0.05f, 38),
         mid = random_values(size_t(T) * I, t(), 1.0f, 39);
  DevBuf dwo = to_device(wo.raw), dnw = to_device(nw.f), dmid = to_device(mid.raw), dwgu = to_device(wgu.raw);
  const int so = cuda::gemm_split_for(H, I), sg = cuda::gemm_split_for(2 * I, H);
  DevBuf h1 = to_device(hres.raw), h2 = to_device(hres.raw), o1(size_t(T) * H * 2), n1(size_t(T) * H * 2),
         n2(size_t(T) * H * 2), o2(size_t(T) * H * 2);
  cuda::GemmOut oo;
  oo.y = o1.p;
  cuda::gemm(dmid.p, T, I, I, dwo.p, H, t(), so, oo, ws.as<float>(), ws.bytes, nullptr);
  cuda::add_rmsnorm(h1.p, o1.p, T, H, dnw.as<float>(), 1e-6f, t(), n1.p, nullptr);
  const cuda::GemmResult r = cuda::gemm_for_consumer(dmid.p, T, I, dwo.p, H, t(), so, o2.p, ws.as<float>(), ws.bytes, nullptr);
  cuda::add_rmsnorm_from(h2.p, r, T, H, dnw.as<float>(), 1e-6f, t(), n2.p, nullptr);
  EXPECT_EQ(to_host<uint16_t>(h1, size_t(T) * H), to_host<uint16_t>(h2, size_t(T) * H));
  EXPECT_EQ(to_host<uint16_t>(n1, size_t(T) * H), to_host<uint16_t>(n2, size_t(T) * H));
  DevBuf g1(size_t(T) * 2 * I * 2), m1(size_t(T) * I * 2), g2(size_t(T) * 2 * I * 2), m2(size_t(T) * I * 2);
  cuda::GemmOut go;
  go.y = g1.p;
  cuda::gemm(dx.p, T, H, H, dwgu.p, 2 * I, t(), sg, go, ws.as<float>(), ws.bytes, nullptr);
  cuda::silu_mul(g1.p, g1.as<uint16_t>() + I, 2 * I, T, I, t(), m1.p, nullptr);
  const cuda::GemmResult rg = cuda::gemm_for_consumer(dx.p, T, H, dwgu.p, 2 * I, t(), sg, g2.p, ws.as<float>(), ws.bytes, nullptr);
  cuda::silu_mul_from(rg, T, I, t(), m2.p, nullptr);
  EXPECT_EQ(to_host<uint16_t>(m1, size_t(T) * I), to_host<uint16_t>(m2, size_t(T) * I));

  // SiLU·mul in the GEMM's epilogue (unsplit W; v1 at 1..32 rows, wgmma past 64): the bits of
  // gemm() then silu_mul() for each v1 row tile (16 / 32 rows) and its edges, both v1 unroll
  // depths at <= 16 rows, and the wgmma kernel's 128- and 256-row tiles and their edges.
  ASSERT_TRUE(cuda::gemm_silu_mul_ok(1, H, I, 1));
  ASSERT_TRUE(cuda::gemm_silu_mul_ok(65, H, I, 1));
  EXPECT_TRUE(cuda::gemm_silu_mul_ok(1, H, I, 2));  // a split W: the stream kernel adds the segments
  EXPECT_FALSE(cuda::gemm_silu_mul_ok(33, H, I, 2));
  EXPECT_FALSE(cuda::gemm_silu_mul_ok(1, H, I, 64));  // segments of 16 k
  {
    const ScopedGemmKernel v1(cuda::GemmKernel::V1);
    EXPECT_FALSE(cuda::gemm_silu_mul_ok(1, H, I, 2));
  }
  EXPECT_FALSE(cuda::gemm_silu_mul_ok(33, H, I, 1));
  EXPECT_FALSE(cuda::gemm_silu_mul_ok(1, H, I + 8, 1));
  EXPECT_FALSE(cuda::gemm_silu_mul_ok(65, H, I + 32, 1));
  const int Mmax = 300;
  Values xs = random_values(size_t(Mmax) * H, t(), 1.0f, 40);
  DevBuf dxs = to_device(xs.raw), gs(size_t(Mmax) * 2 * I * 2), ms1(size_t(Mmax) * I * 2), ms2(size_t(Mmax) * I * 2);
  for (int unroll : {4, 6, 8})
    for (int M : {1, 5, 16, 17, 32, 65, 129, 256, 300}) {
      if (unroll != 4 && M > 32) continue;
      if (unroll == 6 && M <= 16) continue;
      cuda::GemmTuning tun = cuda::gemm_tuning();
      tun.v1_unroll16 = unroll == 8 ? 8 : 4;
      tun.v1_unroll32 = unroll;  // (17..32 rows: 4, 6 or 8 chunks a round)
      tun.wgmma_rows = M == 129 ? 128 : 256;  // both wgmma tiles
      tun.wgmma_tma = M != 300;                // both copy paths (TMA: the gate and up boxes)
      tun.wgmma_lag = M >= 256 ? 1 : 0;        // 256-row tiles with one stage of MMAs running, or not
      tun.wgmma_pairs = M == 256 || M == 65;    // 64-k boxes (TMA), with and without lag 1
      tun.wgmma_persist = M == 129 || M == 256;  // one CTA per SM looping over tiles
      const ScopedGemmTuning scoped(tun);
      cuda::GemmOut gso;
      gso.y = gs.p;
      cuda::gemm(dxs.p, M, H, H, dwgu.p, 2 * I, t(), 1, gso, ws.as<float>(), ws.bytes, nullptr);
      cuda::silu_mul(gs.p, gs.as<uint16_t>() + I, 2 * I, M, I, t(), ms1.p, nullptr);
      VB_CUDA(cudaMemset(ms2.p, 0xff, ms2.bytes));
      cuda::gemm_silu_mul(dxs.p, M, H, dwgu.p, I, t(), ms2.p, nullptr);
      const auto want = to_host<uint16_t>(ms1, size_t(M) * I), got = to_host<uint16_t>(ms2, size_t(Mmax) * I);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "M " << M << ", unroll " << unroll
                                                                     << ", wgmma rows " << tun.wgmma_rows
                                                                     << ", TMA " << tun.wgmma_tma << ", lag " << tun.wgmma_lag << ", pairs " << tun.wgmma_pairs
                                                                     << ", persistent " << tun.wgmma_persist;
      // Rows past M are never written.
      EXPECT_TRUE(std::all_of(got.begin() + long(size_t(M) * I), got.end(), [](uint16_t v) { return v == 0xffff; }))
          << "M " << M;
    }
  // gemm_silu_mul (the kernel in use, with tun) on M rows of a W in `split` segments against v1's
  // gemm() (split: partials, then the reduce's sum in segment order) then silu_mul(); rows past M
  // never written.
  auto stream_silu_matches = [&](int M, int split, const cuda::GemmTuning& tun, const std::string& what) {
    cuda::GemmOut gso;
    gso.y = gs.p;
    {
      const ScopedGemmKernel v1(cuda::GemmKernel::V1);
      cuda::gemm(dxs.p, M, H, H, dwgu.p, 2 * I, t(), split, gso, ws.as<float>(), ws.bytes, nullptr);
    }
    cuda::silu_mul(gs.p, gs.as<uint16_t>() + I, 2 * I, M, I, t(), ms1.p, nullptr);
    VB_CUDA(cudaMemset(ms2.p, 0xff, ms2.bytes));
    {
      const ScopedGemmTuning scoped(tun);
      ASSERT_TRUE(cuda::gemm_silu_mul_ok(M, H, I, split)) << what;
      cuda::gemm_silu_mul(dxs.p, M, H, dwgu.p, I, t(), ms2.p, nullptr, split);
    }
    const auto want = to_host<uint16_t>(ms1, size_t(M) * I), got = to_host<uint16_t>(ms2, size_t(Mmax) * I);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << what;
    EXPECT_TRUE(std::all_of(got.begin() + long(size_t(M) * I), got.end(), [](uint16_t v) { return v == 0xffff; }))
        << what;
  };
  // The stream kernel's epilogue (VERBATIM_GEMM=stream, <= 32 rows) at each ring depth of <= 16
  // rows and of 17..32 rows. (preload 2: W's first stages issued before the wait, the code path PDL
  // steps take; the op tests' legacy stream has no PDL dependency, so the wait returns at once.)
  for (int stages : {3, 4, 5})
    for (int M : {1, 5, 16, 17, 32})
      for (int preload : {0, 2}) {
        if (stages == 5 && M > 16) continue;
        const ScopedGemmKernel use(cuda::GemmKernel::Stream);
        cuda::GemmTuning tun = cuda::gemm_tuning();
        tun.stream_stages16 = stages;
        tun.stream_stages32 = stages;
        tun.stream_preload = preload;
        stream_silu_matches(M, 1, tun,
                            "stream, M " + std::to_string(M) + ", stages " + std::to_string(stages) + ", preload " +
                                std::to_string(preload));
      }
  // A split W (segments of 512, 256, 128 k) under the default kernel (Auto): the stream kernel adds
  // the segments in order before the epilogue, with and without W's first stages before the wait.
  // (Summing the segments in another order rarely moves a rounded output at these sizes; the 0.6B
  // digests of record, whose gate_up is split in 4, are the sensitive check of the order.)
  for (int split : {2, 4, 8})
    for (int M : {1, 5, 16, 17, 32}) {
      cuda::GemmTuning tun = cuda::gemm_tuning();
      tun.stream_preload = M % 2 ? 2 : 0;
      stream_silu_matches(M, split, tun, "stream, split " + std::to_string(split) + ", M " + std::to_string(M));
    }
  // Control: another x gives other outputs.
  cuda::gemm_silu_mul(dx.p, 1, H, dwgu.p, I, t(), ms2.p, nullptr);
  EXPECT_NE(to_host<uint16_t>(ms1, size_t(I)), to_host<uint16_t>(ms2, size_t(I)));
}

// ---- Block-per-row norms and the partial consumers (the decode glue): the reference's bits for
// every row width (vector and scalar paths), every split count, and every row count.

// The consumer's order of adding split-K partials (fused.cu sum_parts): segment 0, 1, 2, ...
// then one rounding. p: [split, M, N].
float partial_sum(const std::vector<float>& p, int split, int64_t seg, int64_t at, DType t) {
  float v = p[size_t(at)];
  for (int s = 1; s < split; ++s) v = v + p[size_t(int64_t(s) * seg + at)];
  return round_to(t, v);
}
std::vector<float> random_floats(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

TEST_P(CudaOps, RmsNormWideAndOddRowsAreTheCpuReferenceBitForBit) {
  for (int D : {4096, 1002, 6, 5120}) {
    for (int T : {1, 5}) {
      Values x = random_values(size_t(T) * D, t(), 2.0f, uint32_t(40 + D + T)), w = random_values(D, t(), 1.0f, 41);
      std::vector<float> want(size_t(T) * D);
      cpu::rmsnorm(x.f.data(), T, D, weight_ref(w, t(), 1, D), 1e-6f, t(), want.data());
      DevBuf dx = to_device(x.raw), dw = to_device(w.f), dy(size_t(T) * D * 2);
      cuda::rmsnorm(dx.p, {}, T, D, dw.as<float>(), 1e-6f, t(), dy.p, {}, nullptr);
      ASSERT_EQ(to_floats(to_host<uint16_t>(dy, want.size()), t()), want) << "D " << D << " rows " << T;
    }
  }
}

TEST_P(CudaOps, AddRmsNormFromPartialsIsTheCpuReferenceForEverySplitAndRowCount) {
  // D 1024 / 4096: the 0.6B / 8B hidden sizes (vector path); 1002: the scalar path.
  for (int D : {1024, 4096, 1002}) {
    for (int split : {1, 2, 4, 8}) {
      const int Tmax = 65;  // 65: a prefill's many rows (smaller row blocks, fused.cu many_rows_threads)
      const std::vector<float> parts = random_floats(size_t(split) * Tmax * D, 0.7f, uint32_t(50 + D + split));
      Values h = random_values(size_t(Tmax) * D, t(), 3.0f, uint32_t(60 + D)), w = random_values(D, t(), 1.0f, 61);
      DevBuf dw = to_device(w.f);
      std::vector<uint16_t> first_rows;  // rows of the T = 1 launch
      for (int T : {1, 2, 17, 33, 65}) {
        // The partials of T rows: [split, T, D] (the first T rows of each segment).
        std::vector<float> p(size_t(split) * T * D);
        for (int s = 0; s < split; ++s)
          std::copy_n(&parts[size_t(s) * Tmax * D], size_t(T) * D, &p[size_t(s) * T * D]);
        std::vector<float> hh(h.f.begin(), h.f.begin() + long(T) * D), dsum(size_t(T) * D);
        for (int64_t i = 0; i < int64_t(T) * D; ++i) dsum[size_t(i)] = partial_sum(p, split, int64_t(T) * D, i, t());
        cpu::add_inplace(hh.data(), dsum.data(), int64_t(T) * D, t());
        std::vector<float> want(size_t(T) * D);
        cpu::rmsnorm(hh.data(), T, D, weight_ref(w, t(), 1, D), 1e-6f, t(), want.data());
        DevBuf dh = to_device(std::vector<uint16_t>(h.raw.begin(), h.raw.begin() + long(T) * D)),
               dp = to_device(p), dy(size_t(T) * D * 2);
        cuda::GemmResult r;
        r.partials = dp.as<float>();
        r.split = split;
        r.M = T;
        r.N = D;
        cuda::add_rmsnorm_from(dh.p, r, T, D, dw.as<float>(), 1e-6f, t(), dy.p, nullptr);
        const auto got_y = to_host<uint16_t>(dy, size_t(T) * D);
        ASSERT_EQ(to_floats(to_host<uint16_t>(dh, hh.size()), t()), hh) << "D " << D << " split " << split << " T " << T;
        ASSERT_EQ(to_floats(got_y, t()), want) << "D " << D << " split " << split << " T " << T;
        if (T == 1) first_rows = got_y;
        ASSERT_TRUE(std::equal(first_rows.begin(), first_rows.end(), got_y.begin())) << "row 0 changed with T " << T;
      }
      if (split == 1) {  // the rounded-y input (no partials) gives the same bits
        const int T = 3;
        std::vector<uint16_t> yin(size_t(T) * D);
        std::vector<float> dsum(size_t(T) * D), hh(h.f.begin(), h.f.begin() + long(T) * D);
        for (size_t i = 0; i < yin.size(); ++i) {
          dsum[i] = round_to(t(), parts[i]);
          yin[i] = t() == DType::BF16 ? f32_to_bf16(dsum[i]) : f32_to_f16(dsum[i]);
        }
        cpu::add_inplace(hh.data(), dsum.data(), int64_t(T) * D, t());
        std::vector<float> want(size_t(T) * D);
        cpu::rmsnorm(hh.data(), T, D, weight_ref(w, t(), 1, D), 1e-6f, t(), want.data());
        DevBuf dh = to_device(std::vector<uint16_t>(h.raw.begin(), h.raw.begin() + long(T) * D)), dyin = to_device(yin),
               dy(size_t(T) * D * 2);
        cuda::GemmResult r;
        r.y = dyin.p;
        r.ld = D;
        r.M = T;
        r.N = D;
        cuda::add_rmsnorm_from(dh.p, r, T, D, dw.as<float>(), 1e-6f, t(), dy.p, nullptr);
        ASSERT_EQ(to_floats(to_host<uint16_t>(dy, want.size()), t()), want) << "D " << D << " from y";
      }
    }
  }
  // Control: the partials added in another order (last segment first) give other fp32 sums, so
  // an order change is visible wherever it survives the rounding to the activation dtype.
  const int D = 1024, T = 4, split = 8;
  std::vector<float> p = random_floats(size_t(split) * T * D, 1.0f, 70);
  int differ = 0;
  for (int64_t i = 0; i < int64_t(T) * D; ++i) {
    float a = p[size_t(i)], b = p[size_t(int64_t(split - 1) * T * D + i)];
    for (int s = 1; s < split; ++s) a = a + p[size_t(int64_t(s) * T * D + i)];
    for (int s = split - 2; s >= 0; --s) b = b + p[size_t(int64_t(s) * T * D + i)];
    differ += a != b;
  }
  EXPECT_GT(differ, 0);
}

TEST_P(CudaOps, SiluMulFromPartialsIsTheCpuReference) {
  for (int D : {768, 3072, 770}) {
    for (int split : {1, 4}) {
      const int T = 9;
      const std::vector<float> p = random_floats(size_t(split) * T * 2 * D, 1.5f, uint32_t(80 + D + split));
      std::vector<float> g(size_t(T) * D), u(size_t(T) * D), want(size_t(T) * D);
      for (int r = 0; r < T; ++r)
        for (int i = 0; i < D; ++i) {
          g[size_t(r) * D + i] = partial_sum(p, split, int64_t(T) * 2 * D, int64_t(r) * 2 * D + i, t());
          u[size_t(r) * D + i] = partial_sum(p, split, int64_t(T) * 2 * D, int64_t(r) * 2 * D + D + i, t());
        }
      cpu::silu_mul(g.data(), u.data(), T, D, t(), want.data());
      DevBuf dp = to_device(p), dout(size_t(T) * D * 2);
      cuda::GemmResult r;
      r.partials = dp.as<float>();
      r.split = split;
      r.M = T;
      r.N = 2 * D;
      cuda::silu_mul_from(r, T, D, t(), dout.p, nullptr);
      ASSERT_EQ(to_floats(to_host<uint16_t>(dout, want.size()), t()), want) << "D " << D << " split " << split;
    }
  }
}

// ---- Attention over a paged cache.

// How AttnFixture::gpu lays a batch out.
struct AttnRun {
  int part_tokens = 64;
  // Every token is its own whole-row item (attention_fold_kernel), as the graph's decode step lays
  // them out with VERBATIM_DECODE_FOLD_MIN_BATCH.
  bool fold_rows = false;
  // The merge runs in the attention kernels (AttnArgs::merge_counters); the counters must be back
  // at zero afterwards (the next layer reuses them).
  bool fused_merge = false;
  // Query tiles of <= 16 rows run in the ring kernel (plan_attention's ring); with fold_rows, every
  // token is its own ring item (the graph's decode layout).
  bool ring = false;
};

struct AttnFixture {
  DType t;
  int heads, kv_heads, hd, block_size = 16;
  std::vector<int> lens;                       // per sequence
  std::vector<std::vector<int32_t>> tables;    // per sequence
  int num_blocks = 0;
  std::vector<uint16_t> kc, vc;                // host caches (raw)
  std::vector<std::vector<Values>> q;          // q[seq][pos]: [heads * hd]
  DevBuf dk, dv;

  AttnFixture(DType t_, int heads_, int kv_heads_, int hd_, std::vector<int> lens_, int block_size_ = 16)
      : t(t_), heads(heads_), kv_heads(kv_heads_), hd(hd_), block_size(block_size_), lens(std::move(lens_)) {
    std::mt19937 rng(77);
    for (int L : lens) num_blocks += (L + block_size - 1) / block_size;
    num_blocks += 5;
    std::vector<int32_t> pool(static_cast<size_t>(num_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    size_t next = 0;
    const size_t row = size_t(kv_heads) * hd;
    kc.assign(size_t(num_blocks) * block_size * row, 0);
    vc = kc;
    for (size_t s = 0; s < lens.size(); ++s) {
      std::vector<int32_t> bt;
      for (int b = 0; b < (lens[s] + block_size - 1) / block_size; ++b) bt.push_back(pool[next++]);
      tables.push_back(bt);
      std::vector<Values> qs;
      for (int p = 0; p < lens[s]; ++p) {
        const size_t slot = size_t(bt[size_t(p / block_size)]) * block_size + p % block_size;
        Values k = random_values(row, t, 1.0f, uint32_t(1000 + s * 10000 + p));
        Values v = random_values(row, t, 1.0f, uint32_t(500000 + s * 10000 + p));
        std::copy(k.raw.begin(), k.raw.end(), kc.begin() + long(slot * row));
        std::copy(v.raw.begin(), v.raw.end(), vc.begin() + long(slot * row));
        qs.push_back(random_values(size_t(heads) * hd, t, 1.0f, uint32_t(900000 + s * 10000 + p)));
      }
      q.push_back(std::move(qs));
    }
    dk = to_device(kc);
    dv = to_device(vc);
  }

  using Key = std::pair<int, int>;  // (seq, pos)
  // Runs one batch (tokens listed in order; a sequence's tokens contiguous) on the GPU, laid out
  // as AttnRun says (by default the contract's: parts of one tile, query tiles of more than 16
  // rows folded in one CTA).
  std::map<Key, std::vector<uint16_t>> gpu(const std::vector<Key>& batch, AttnRun run = {}) const {
    const int part_tokens = run.part_tokens;
    const bool fold_rows = run.fold_rows, fused_merge = run.fused_merge, ring = run.ring;
    const int T = int(batch.size());
    std::vector<int32_t> pos(T), seq(T), bt_flat, bt_off(lens.size());
    for (size_t s = 0; s < lens.size(); ++s) {
      bt_off[s] = int32_t(bt_flat.size());
      bt_flat.insert(bt_flat.end(), tables[s].begin(), tables[s].end());
    }
    std::vector<uint16_t> qh(size_t(T) * heads * hd);
    for (int i = 0; i < T; ++i) {
      seq[size_t(i)] = batch[size_t(i)].first;
      pos[size_t(i)] = batch[size_t(i)].second;
      const Values& qv = q[size_t(seq[size_t(i)])][size_t(pos[size_t(i)])];
      std::copy(qv.raw.begin(), qv.raw.end(), qh.begin() + long(size_t(i) * heads * hd));
    }
    const size_t ws_floats = size_t(16) << 20;
    const int max_states = int(ws_floats / (cuda::attention_state_floats(hd) * heads));
    cuda::AttnPlan plan =
        cuda::plan_attention(pos.data(), seq.data(), bt_off.data(), T, heads / kv_heads, part_tokens, max_states,
                             part_tokens == 64, ring);
    if (fold_rows) {
      plan = cuda::AttnPlan{};
      plan.state_base.assign(size_t(T), -1);
      for (int i = 0; i < T; ++i) plan.items.push_back(cuda::AttnItem{i, 1, -1, bt_off[size_t(seq[size_t(i)])]});
      cuda::AttnLaunch g;
      (ring ? g.ring_end : g.fold_end) = T;
      g.ring_rows = heads / kv_heads;
      plan.launches = {g};
    }
    std::vector<int32_t> items_raw(plan.items.size() * 4);
    std::memcpy(items_raw.data(), plan.items.data(), items_raw.size() * 4);
    DevBuf dq = to_device(qh), dpos = to_device(pos), dbt = to_device(bt_flat), dsb = to_device(plan.state_base),
           dit = to_device(items_raw), dmt = to_device(plan.merge_tokens), dmp = to_device(plan.merge_parts),
           dout(size_t(T) * heads * hd * 2), dws(ws_floats * 4),
           dcnt = to_device(std::vector<int32_t>(size_t(T) * kv_heads, 0));
    for (const cuda::AttnLaunch& g : plan.launches) {
      cuda::AttnArgs a;
      a.q = dq.p;
      a.k_cache = dk.p;
      a.v_cache = dv.p;
      a.out = dout.p;
      a.states = dws.as<float>();
      a.positions = dpos.as<int32_t>();
      a.block_tables = dbt.as<int32_t>();
      a.state_base = dsb.as<int32_t>();
      a.items = reinterpret_cast<const cuda::AttnItem*>(dit.as<int32_t>());
      a.merge_counters = fused_merge ? dcnt.as<int32_t>() : nullptr;
      a.heads = heads;
      a.kv_heads = kv_heads;
      a.head_dim = hd;
      a.block_size = block_size;
      a.part_tokens = part_tokens;
      a.scale = float(1.0 / std::sqrt(double(hd)));
      cuda::attention(a, g, t, nullptr);
      cuda::attention_merge(a, dmt.as<int32_t>() + g.merge_begin, dmp.as<int32_t>() + g.merge_begin,
                            g.merge_end - g.merge_begin, t, nullptr);
    }
    const std::vector<uint16_t> out = to_host<uint16_t>(dout, size_t(T) * heads * hd);
    const std::vector<int32_t> counters = to_host<int32_t>(dcnt, size_t(T) * kv_heads);
    for (int32_t c : counters) EXPECT_EQ(c, 0) << "a merge counter was left non-zero";
    std::map<Key, std::vector<uint16_t>> res;
    for (int i = 0; i < T; ++i)
      res[batch[size_t(i)]] = std::vector<uint16_t>(out.begin() + long(size_t(i) * heads * hd),
                                                    out.begin() + long(size_t(i + 1) * heads * hd));
    return res;
  }

  std::vector<float> cpu(int s, int p) const {
    cpu::PagedKV kv;
    kv.dtype = t;
    kv.block_size = block_size;
    kv.num_kv_heads = kv_heads;
    kv.head_dim = hd;
    kv.k = const_cast<uint16_t*>(kc.data());
    kv.v = const_cast<uint16_t*>(vc.data());
    const int32_t* table = tables[size_t(s)].data();
    std::vector<float> out(size_t(heads) * hd);
    cpu::attention(q[size_t(s)][size_t(p)].f.data(), 1, heads, kv, &p, &table, float(1.0 / std::sqrt(double(hd))), t,
                   out.data());
    return out;
  }
};

std::vector<AttnFixture::Key> all_tokens(const AttnFixture& f) {
  std::vector<AttnFixture::Key> b;
  for (size_t s = 0; s < f.lens.size(); ++s)
    for (int p = 0; p < f.lens[s]; ++p) b.emplace_back(int(s), p);
  return b;
}

TEST_P(CudaOps, AttentionMatchesCpuWithinDtypeRounding) {
  for (auto [heads, kv, hd] : {std::tuple{4, 2, 128}, std::tuple{8, 2, 64}, std::tuple{4, 2, 32}}) {
    AttnFixture f(t(), heads, kv, hd, {700, 130});
    const auto got = f.gpu(all_tokens(f));
    std::vector<float> g, w;
    for (auto [s, p] : std::vector<AttnFixture::Key>{{0, 0}, {0, 63}, {0, 64}, {0, 255}, {0, 256}, {0, 511}, {0, 699},
                                                    {1, 5}, {1, 129}}) {
      const std::vector<float> want = f.cpu(s, p);
      const std::vector<float> have = to_floats(got.at({s, p}), t());
      g.insert(g.end(), have.begin(), have.end());
      w.insert(w.end(), want.begin(), want.end());
    }
    EXPECT_LT(rel_error(g, w), 2 * tol(t())) << heads << " heads, " << kv << " kv heads, head_dim " << hd;
  }
}

TEST_P(CudaOps, AttentionRowBitsIndependentOfBatchAndChunking) {
  AttnFixture f(t(), 8, 2, 128, {700, 300, 65, 1});
  const auto ref = f.gpu(all_tokens(f));  // every token of every sequence in one launch (prefill)
  auto expect_same = [&](const std::map<AttnFixture::Key, std::vector<uint16_t>>& got, const std::string& what) {
    for (const auto& [k, v] : got)
      ASSERT_EQ(v, ref.at(k)) << what << ": seq " << k.first << " pos " << k.second;
  };
  // Decode: each token alone.
  for (int p : {0, 1, 63, 64, 65, 255, 256, 257, 511, 512, 699}) expect_same(f.gpu({{0, p}}), "alone");
  // Chunked prefill: chunks of 37 positions of sequence 0, each batched with one token of seq 1.
  for (int p0 = 0; p0 < 700; p0 += 37) {
    std::vector<AttnFixture::Key> b;
    for (int p = p0; p < std::min(700, p0 + 37); ++p) b.emplace_back(0, p);
    b.emplace_back(1, p0 % 300);
    expect_same(f.gpu(b), "chunk at " + std::to_string(p0));
  }
  // Decode batches of many sequences (1 token each), as a decode step of 15, 16, 17 sequences.
  for (int n : {2, 15, 16, 17}) {
    std::vector<AttnFixture::Key> b;
    for (int i = 0; i < n; ++i) b.emplace_back(i % 4, std::min(f.lens[size_t(i % 4)] - 1, 17 * i + 3));
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    expect_same(f.gpu(b), "decode batch of " + std::to_string(n));
  }
  // Control: parts of two tiles (the online softmax runs across the pair instead of folding
  // per-tile states) change bits of rows past the first tile, so the comparisons above are
  // sensitive to the reduction structure they claim to hold fixed.
  const auto other = f.gpu(all_tokens(f), {.part_tokens = 128});
  // The merge fused into the attention kernels, on items of several tokens (chunks of 37 with
  // 2-tile parts: four-warp CTAs of up to 64 rows, not folded in the CTA) and on decode rows:
  // the merge kernel's bits.
  for (int p0 = 0; p0 < 700; p0 += 111) {
    std::vector<AttnFixture::Key> b;
    for (int p = p0; p < std::min(700, p0 + 37); ++p) b.emplace_back(0, p);
    b.emplace_back(1, p0 % 300);
    for (const auto& [k, v] : f.gpu(b, {.part_tokens = 128, .fused_merge = true}))
      ASSERT_EQ(v, other.at(k)) << "fused merge, chunk at " << p0 << ": seq " << k.first << " pos " << k.second;
  }
  int differ = 0;
  for (const auto& [k, v] : other) differ += v != ref.at(k);
  EXPECT_GT(differ, 0);
  int differ_first = 0;  // rows in the first tile have one tile either way: no change
  for (const auto& [k, v] : other)
    if (k.second < 64) differ_first += v != ref.at(k);
  EXPECT_EQ(differ_first, 0);
}

TEST_P(CudaOps, AttentionSplitKeysGivesTheFoldBitsAtEveryHeadDim) {
  // The split four-warp kernel at the head dims AttentionMergeOfManyPartsIsTheFold does not run
  // (64, 256; 32 takes the per-part kernel: no split below 64 dims), decode rows alone against the
  // prefill rows' bits, at 2 and 16 query heads per kv head (rows in one or both halves of the m16
  // tile).
  for (auto [heads, hd] : {std::tuple{4, 64}, std::tuple{32, 64}, std::tuple{4, 256}, std::tuple{4, 32}}) {
    AttnFixture f(t(), heads, 2, hd, {1100});
    const auto ref = f.gpu(all_tokens(f));
    cuda::set_attention_small_item_warps(4);
    cuda::set_attention_split_keys(1);
    const uint64_t split_before = cuda::attention_launches(cuda::AttnKernel::Split);
    for (int p : {0, 40, 63, 64, 700, 1087, 1099}) {
      const auto got = f.gpu({{0, p}});
      ASSERT_EQ(got.at({0, p}), ref.at({0, p})) << "pos " << p << ", heads " << heads << ", head_dim " << hd;
    }
    // Not vacuous: the split kernel ran for each decode row at >= 64 dims, and never below.
    const uint64_t split_runs = cuda::attention_launches(cuda::AttnKernel::Split) - split_before;
    if (hd >= 64) EXPECT_EQ(split_runs, 7u) << "head_dim " << hd;
    else EXPECT_EQ(split_runs, 0u) << "head_dim " << hd;
    cuda::set_attention_small_item_warps(0);
    cuda::set_attention_split_keys(-1);
  }
}

TEST_P(CudaOps, AttentionMergeOfManyPartsIsTheFold) {
  // 1,100 positions: 18 parts of 64, past the merge's 16-part load-ahead window. Decode rows alone
  // (per-part kernel + merge) must give the prefill rows' bits (parts folded in the CTA).
  // The one- and four-warp per-part kernels (picked by CTA count) must both give these bits.
  // Also the tile kernel (one-warp items of one-tile parts, K from the cache into registers), at
  // 2 and 4 query heads per kv head (the 0.6B and 8B groups), with cache blocks of 16 positions,
  // of 7 (block lookups by division, not shifts) and of 1 (more blocks per tile than a warp has
  // lanes: block ids read per position).
  for (int bs : {16, 7, 1})
  for (int heads : {4, 8}) {
  AttnFixture f(t(), heads, 2, 128, {1100, 900}, bs);
  const auto ref = f.gpu(all_tokens(f));
  // Every fold kernel variant (whole-tile P·V; 16 columns at a time, cp.async; 32 columns, bulk
  // row copies; the same with the row halves' softmax interleaved) gives the same bits.
  for (int mode : {0, 1, 2, 3}) {
    cuda::set_attention_fold_pv(mode);
    const auto variant = f.gpu(all_tokens(f));
    for (const auto& [k, v] : variant) ASSERT_EQ(v, ref.at(k)) << "fold kernel " << mode << ", pos " << k.second;
  }
  cuda::set_attention_fold_pv(-1);
  // Four-warp CTAs with the tile's keys and P·V columns split over the warps (split 1) and not (0).
  for (int warps : {1, 4, 0})
  for (int tile_kernel : {0, 1, 2})
  for (int split : {0, 1}) {
    if (warps == 4 && tile_kernel != 0) continue;  // four warps never take the tile kernel
    if (split == 1 && (warps == 1 || tile_kernel != 0)) continue;  // only four-warp CTAs split
    cuda::set_attention_small_item_warps(warps);
    cuda::set_attention_tile_kernel(tile_kernel);
    cuda::set_attention_split_keys(split);
    const std::string how = "small-item warps " + std::to_string(warps) + ", tile kernel " +
                            std::to_string(tile_kernel) + ", split keys " + std::to_string(split) + ", heads " +
                            std::to_string(heads) + ", block size " + std::to_string(bs);
    for (bool fused : {false, true}) {
    const std::string how_f = how + (fused ? ", merge fused" : ", merge kernel");
    const uint64_t split_before = cuda::attention_launches(cuda::AttnKernel::Split);
    const uint64_t tile_before = cuda::attention_launches(cuda::AttnKernel::Tile);
    for (int p : {0, 5, 63, 64, 100, 1023, 1024, 1025, 1087, 1088, 1099}) {
      const auto got = f.gpu({{0, p}}, {.fused_merge = fused});
      ASSERT_EQ(got.at({0, p}), ref.at({0, p})) << "pos " << p << ", " << how_f;
    }
    // The kernel these switches name is the one that ran (one launch per decode row above).
    const uint64_t split_runs = cuda::attention_launches(cuda::AttnKernel::Split) - split_before;
    const uint64_t tile_runs = cuda::attention_launches(cuda::AttnKernel::Tile) - tile_before;
    EXPECT_EQ(split_runs, split == 1 ? 11u : 0u) << how_f;
    EXPECT_EQ(tile_runs, warps == 1 && tile_kernel != 0 ? 11u : 0u) << how_f;
    // A decode step of both sequences, each with many parts.
    const auto both = f.gpu({{0, 1099}, {1, 899}}, {.fused_merge = fused});
    EXPECT_EQ(both.at({0, 1099}), ref.at({0, 1099})) << how_f;
    EXPECT_EQ(both.at({1, 899}), ref.at({1, 899})) << how_f;
    }
  }
  cuda::set_attention_small_item_warps(0);
  cuda::set_attention_tile_kernel(-1);
  cuda::set_attention_split_keys(-1);
  // The ring kernel (whole rows of <= 16 rows, tiles computed by warps in turn, their states folded
  // in tile order by one warp), every shape: decode rows as their own items (the graph's layout,
  // tiles from 1 to 18, rows in one tile), and items of several tokens at other positions (their
  // rows skip tiles past their own position): 3 tokens x 4 heads, or 8 x 2 (16 rows), across tile
  // edges.
  // With transposed tiles (tr 1: keys as the MMA's m, on launches of <= 8-row items; the 12- and
  // 16-row items keep the plain tiles) and without; items of 8 rows (2 tokens x 4 heads, 4 x 2)
  // take the transposed tiles too.
  for (int tr : {0, 1})
  for (int variant : {0, 1, 2, 3, 4, -1}) {  // -1: auto (by waves)
    cuda::set_attention_ring_variant(variant);
    cuda::set_attention_ring_transposed(tr);
    const std::string how = "ring variant " + std::to_string(variant) + ", transposed " + std::to_string(tr) +
                            ", heads " + std::to_string(heads) + ", block size " + std::to_string(bs);
    const auto rows =
        f.gpu({{0, 0}, {0, 5}, {0, 64}, {0, 1023}, {0, 1099}, {1, 63}, {1, 899}}, {.fold_rows = true, .ring = true});
    for (const auto& [k, v] : rows) ASSERT_EQ(v, ref.at(k)) << how << ", row item, pos " << k.second;
    for (int n : {heads == 8 ? 3 : 8, 16 / heads}) {
      for (int p0 : {0, 60, 1020, 1099 - n + 1}) {
        std::vector<AttnFixture::Key> b;
        for (int p = p0; p < p0 + n; ++p) b.emplace_back(0, p);
        b.emplace_back(1, 899);
        const auto got = f.gpu(b, {.ring = true});
        for (const auto& [k, v] : got)
          ASSERT_EQ(v, ref.at(k)) << how << ", items of " << n << " from " << p0 << ", pos " << k.second;
      }
    }
  }
  cuda::set_attention_ring_variant(-1);
  cuda::set_attention_ring_transposed(-1);
  if (heads == 8) continue;
  // Decode rows as whole-row items folded in one CTA each (the graph's fold layout).
  for (int fold_pv : {0, 1, 2, 3}) {
    cuda::set_attention_fold_pv(fold_pv);
    const auto folded = f.gpu({{0, 64}, {0, 1099}, {1, 0}, {1, 899}}, {.fold_rows = true});
    for (const auto& [k, v] : folded)
      EXPECT_EQ(v, ref.at(k)) << "folded decode row, pos " << k.second << ", fold kernel " << fold_pv;
  }
  cuda::set_attention_fold_pv(-1);
  // Control: another query position reads other keys, so its output differs.
  EXPECT_NE(ref.at({0, 1099}), ref.at({0, 1098}));
  }
}

// ---- Sampler

struct SamplerRun {
  std::vector<cuda::SampleRowOut> out;
  std::vector<int32_t> top_ids;
  std::vector<float> top_lps;
};

SamplerRun gpu_sample(const std::vector<float>& logits, int V, const std::vector<SampleSpec>& specs) {
  const int R = int(specs.size());
  std::vector<cuda::SampleRowSpec> rs(static_cast<size_t>(R));
  std::vector<int32_t> banned, slot(size_t(R), -1), rows;
  bool any_lp = false;
  for (int i = 0; i < R; ++i) {
    const SampleSpec& s = specs[size_t(i)];
    cuda::SampleRowSpec& d = rs[size_t(i)];
    d = {s.temperature, s.top_k, s.top_p, s.min_p, s.seed, s.stream, s.position, s.score_token,
         std::min(s.num_top_logprobs, cuda::kMaxTopLogprobs), int32_t(banned.size()), 0};
    banned.insert(banned.end(), s.banned.begin(), s.banned.end());
    d.banned_end = int32_t(banned.size());
    if (s.temperature > 0 && s.score_token < 0) {
      slot[size_t(i)] = int32_t(rows.size());
      rows.push_back(i);
    }
    any_lp = any_lp || s.want_logprob || s.num_top_logprobs > 0;
  }
  DevBuf dl = to_device(logits), dspec(rs.size() * sizeof(cuda::SampleRowSpec)), dban = to_device(banned),
         dslot = to_device(slot), drows = to_device(rows), dout(size_t(R) * sizeof(cuda::SampleRowOut)),
         dti(size_t(R) * cuda::kMaxTopLogprobs * 4), dtl(size_t(R) * cuda::kMaxTopLogprobs * 4);
  VB_CUDA(cudaMemcpy(dspec.p, rs.data(), dspec.bytes, cudaMemcpyHostToDevice));
  const size_t n = std::max<size_t>(1, rows.size()) * size_t(V);
  DevBuf k(n * 4), ids(n * 4), sk(n * 4), sid(n * 4), off((rows.size() + 2) * 4), stats(size_t(R) * 8);
  const size_t tb = cuda::sampler_temp_bytes(int(std::max<size_t>(1, rows.size())), V);
  DevBuf temp(tb);
  cuda::SamplerBuffers sb{k.as<float>(), ids.as<int32_t>(), sk.as<float>(), sid.as<int32_t>(), off.as<int32_t>(),
                          temp.p, tb, stats.as<float>()};
  cuda::sample(dl.as<float>(), R, V, dspec.as<cuda::SampleRowSpec>(), dban.as<int32_t>(), dslot.as<int32_t>(),
               drows.as<int32_t>(), int(rows.size()), any_lp, sb, dout.as<cuda::SampleRowOut>(), dti.as<int32_t>(),
               dtl.as<float>(), nullptr);
  SamplerRun r;
  VB_CUDA(cudaDeviceSynchronize());
  r.out.resize(size_t(R));
  VB_CUDA(cudaMemcpy(r.out.data(), dout.p, dout.bytes, cudaMemcpyDeviceToHost));
  r.top_ids = to_host<int32_t>(dti, size_t(R) * cuda::kMaxTopLogprobs);
  r.top_lps = to_host<float>(dtl, size_t(R) * cuda::kMaxTopLogprobs);
  return r;
}

// exp and silu feed every softmax, merge and SiLU of the contract: the device's recipe must be the
// CPU reference's function, so every one of the 2^32 floats is checked. exp bit for bit (a NaN
// comes back as it went in); silu bit for bit where it is a number, NaN where the CPU's is NaN:
// an arithmetic NaN's bits are the hardware's (silu(-inf) = -inf / inf: x86 gives 0xffc00000, the
// GPU 0x7fffffff; s24_b, the one float of the 2^32 where they differ).
TEST(CudaExp, ExpAndSiluAreTheCpuReferenceOnEveryFloat) {
  VB_REQUIRE_GPU();
  constexpr int64_t kChunk = int64_t(1) << 26;
  DevBuf de(kChunk * sizeof(float)), ds(kChunk * sizeof(float));
  std::vector<float> ge(kChunk), gs(kChunk);
  int64_t exp_bad = 0, silu_bad = 0, first_bad = -1;
  for (int64_t first = 0; first < (int64_t(1) << 32); first += kChunk) {
    cuda::exp_silu_sweep(uint32_t(first), kChunk, de.as<float>(), ds.as<float>(), nullptr);
    VB_CUDA(cudaMemcpy(ge.data(), de.p, kChunk * sizeof(float), cudaMemcpyDeviceToHost));
    VB_CUDA(cudaMemcpy(gs.data(), ds.p, kChunk * sizeof(float), cudaMemcpyDeviceToHost));
#pragma omp parallel for reduction(+ : exp_bad, silu_bad)
    for (int64_t i = 0; i < kChunk; ++i) {
      const float x = bits_f32(uint32_t(first + i));
      const float ws = cpu::silu_f32(x), gsi = gs[size_t(i)];
      if (f32_bits(cpu::exp_f32(x)) != f32_bits(ge[size_t(i)])) ++exp_bad;
      if (ws != ws ? gsi == gsi : f32_bits(ws) != f32_bits(gsi)) ++silu_bad;
    }
    if ((exp_bad || silu_bad) && first_bad < 0) first_bad = first;
  }
  EXPECT_EQ(exp_bad, 0) << "first failing chunk starts at bits " << std::hex << first_bad;
  EXPECT_EQ(silu_bad, 0) << "first failing chunk starts at bits " << std::hex << first_bad;
}

// exp_nonpos_f32 (the softmax, merge and sampler exps, whose arguments are never above 0) is
// exp_f32's function on every float not above 0: the 2^31 with the sign bit set (-0, the
// negatives, -inf, the negative NaNs), +0 and the positive NaNs, bit for bit.
TEST(CudaExp, ExpOfNonPositiveArgumentsIsTheCpuReferenceOnEveryOne) {
  VB_REQUIRE_GPU();
  constexpr int64_t kChunk = int64_t(1) << 26;
  DevBuf dout(kChunk * sizeof(float));
  std::vector<float> got(kChunk);
  int64_t bad = 0, checked = 0;
  uint32_t first_bad = 0;
  auto sweep = [&](uint64_t begin, uint64_t end) {
    for (uint64_t first = begin; first < end; first += kChunk) {
      const int64_t n = int64_t(std::min<uint64_t>(kChunk, end - first));
      cuda::exp_nonpos_sweep(uint32_t(first), n, dout.as<float>(), nullptr);
      VB_CUDA(cudaMemcpy(got.data(), dout.p, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
      int64_t chunk_bad = 0;
#pragma omp parallel for reduction(+ : chunk_bad)
      for (int64_t i = 0; i < n; ++i)
        if (f32_bits(cpu::exp_f32(bits_f32(uint32_t(first + uint64_t(i))))) != f32_bits(got[size_t(i)])) ++chunk_bad;
      if (chunk_bad && !bad) first_bad = uint32_t(first);
      bad += chunk_bad;
      checked += n;
    }
  };
  sweep(0x80000000u, uint64_t(1) << 32);
  sweep(0, 1);
  sweep(0x7f800001u, 0x80000000u);
  EXPECT_EQ(checked, (int64_t(1) << 31) + 1 + 0x7fffff);
  EXPECT_EQ(bad, 0) << "first failing chunk starts at bits " << std::hex << first_bad;
}

// round_exp_candidate (the softmax's rounded probability without the recipe, where it is sure)
// is never wrong: on every float not above 0 (the sign-bit half and +0), in bf16 and fp16, each
// sure answer is round_T(cpu::exp_f32(x)). Not vacuous: it is sure on most of [-86, 0] (else every
// kernel would run the recipe after all). Prints the candidate's largest relative distance from
// exp_f32 on [-86, 0], the margin its 2^-20 bracket is set against.
TEST(CudaExp, RoundedExpCandidateIsTheRecipeWhereverItIsSure) {
  VB_REQUIRE_GPU();
  constexpr int64_t kChunk = int64_t(1) << 26;
  DevBuf dout(kChunk * sizeof(float)), draw(kChunk * sizeof(float));
  std::vector<float> got(kChunk), raw(kChunk);
  for (DType t : {DType::BF16, DType::F16}) {
    int64_t wrong = 0, sure_in_range = 0, in_range = 0;
    double max_rel = 0.0;
    uint32_t first_wrong = 0;
    auto sweep = [&](uint64_t begin, uint64_t end) {
      for (uint64_t first = begin; first < end; first += kChunk) {
        const int64_t n = int64_t(std::min<uint64_t>(kChunk, end - first));
        const bool want_raw = t == DType::BF16;
        cuda::exp_candidate_sweep(uint32_t(first), n, t, dout.as<float>(), want_raw ? draw.as<float>() : nullptr, nullptr);
        VB_CUDA(cudaMemcpy(got.data(), dout.p, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
        if (want_raw) VB_CUDA(cudaMemcpy(raw.data(), draw.p, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
        int64_t w = 0, s = 0, r = 0;
        double mr = 0.0;
#pragma omp parallel for reduction(+ : w, s, r) reduction(max : mr)
        for (int64_t i = 0; i < n; ++i) {
          const float x = bits_f32(uint32_t(first + uint64_t(i)));
          const float ref = cpu::exp_f32(x);
          const float c = got[size_t(i)];
          if (c != -1.0f && f32_bits(c) != f32_bits(round_to(t, ref))) ++w;
          if (x >= -86.0f && x <= 0.0f) {
            ++r;
            s += c != -1.0f;
            if (want_raw) mr = std::max(mr, std::fabs(double(raw[size_t(i)]) / double(ref) - 1.0));
          }
        }
        if (w && !wrong) first_wrong = uint32_t(first);
        wrong += w;
        sure_in_range += s;
        in_range += r;
        max_rel = std::max(max_rel, mr);
      }
    };
    sweep(0x80000000u, uint64_t(1) << 32);
    sweep(0, 1);
    EXPECT_EQ(wrong, 0) << dtype_name(t) << ": first chunk with a wrong sure answer starts at bits " << std::hex
                        << first_wrong;
    EXPECT_GT(double(sure_in_range), 0.9 * double(in_range)) << dtype_name(t);
    std::printf("[exp candidate] %s: sure on %.4f%% of the %lld floats in [-86, 0]", dtype_name(t),
                100.0 * double(sure_in_range) / double(in_range), static_cast<long long>(in_range));
    if (t == DType::BF16) std::printf("; largest relative distance from exp_f32 there 2^%.2f", std::log2(max_rel));
    std::printf("\n");
  }
}

TEST(CudaSampler, FollowsTheCpuSamplerAndIsRowInvariant) {
  VB_REQUIRE_GPU();
  const int V = 5003, R = 24;
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> logits(size_t(R) * V);
  for (float& x : logits) x = nd(rng);
  // A tie at the top of row 0: the lower id must win.
  const auto top0 = std::max_element(logits.begin(), logits.begin() + V) - logits.begin();
  logits[size_t(V - 7)] = logits[size_t(top0)];
  std::vector<SampleSpec> specs(static_cast<size_t>(R));
  for (int i = 0; i < R; ++i) {
    SampleSpec& s = specs[size_t(i)];
    s.seed = 1000 + uint64_t(i);
    s.position = 17 + i;
    s.want_logprob = true;
    s.num_top_logprobs = i % 3 == 0 ? 5 : 0;
    switch (i % 8) {
      case 0: s.temperature = 0; break;
      case 1: s.temperature = 0; s.banned = {int32_t(std::max_element(logits.begin() + long(i) * V, logits.begin() + long(i + 1) * V) - (logits.begin() + long(i) * V))}; break;
      case 2: s.temperature = 1.0f; break;
      case 3: s.temperature = 0.7f; s.top_k = 50; break;
      case 4: s.temperature = 1.3f; s.top_p = 0.9f; break;
      case 5: s.temperature = 1.0f; s.min_p = 0.05f; break;
      case 6: s.temperature = 0.9f; s.top_k = 200; s.top_p = 0.8f; s.min_p = 0.01f; s.stream = 3; break;
      case 7: s.score_token = 4242; break;
    }
  }
  const SamplerRun all = gpu_sample(logits, V, specs);
  int drawn = 0, drawn_equal = 0;
  for (int i = 0; i < R; ++i) {
    const SampleResult want = sample_row(&logits[size_t(i) * V], V, specs[size_t(i)]);
    const bool draws = specs[size_t(i)].temperature > 0 && specs[size_t(i)].score_token < 0;
    if (draws) {
      ++drawn;
      drawn_equal += all.out[size_t(i)].token == want.token;
    } else {
      EXPECT_EQ(all.out[size_t(i)].token, want.token) << "row " << i;
    }
    EXPECT_NEAR(all.out[size_t(i)].logprob, want.logprob, 1e-4) << "row " << i;
    for (size_t k = 0; k < want.top.size(); ++k) {
      EXPECT_EQ(all.top_ids[size_t(i) * cuda::kMaxTopLogprobs + k], want.top[k].first) << "row " << i << " top " << k;
      EXPECT_NEAR(all.top_lps[size_t(i) * cuda::kMaxTopLogprobs + k], want.top[k].second, 1e-4);
    }
  }
  EXPECT_EQ(all.out[0].token, int32_t(top0)) << "ties go to the lowest id";
  // The sums run in another (fixed) order than the CPU's, so a draw landing exactly on a
  // boundary could differ; with these rows every draw agrees.
  EXPECT_EQ(drawn_equal, drawn);
  // Row invariance: each row alone gives the same token and logprob bits as in the batch.
  for (int i = 0; i < R; ++i) {
    const SamplerRun one = gpu_sample(std::vector<float>(logits.begin() + long(i) * V, logits.begin() + long(i + 1) * V),
                                      V, {specs[size_t(i)]});
    EXPECT_EQ(one.out[0].token, all.out[size_t(i)].token) << "row " << i;
    EXPECT_EQ(f32_bits(one.out[0].logprob), f32_bits(all.out[size_t(i)].logprob)) << "row " << i;
  }
  // Control: another seed changes some draws.
  std::vector<SampleSpec> reseeded = specs;
  for (SampleSpec& s : reseeded) s.seed += 99;
  const SamplerRun other = gpu_sample(logits, V, reseeded);
  int changed = 0;
  for (int i = 0; i < R; ++i) changed += other.out[size_t(i)].token != all.out[size_t(i)].token;
  EXPECT_GT(changed, 0);
}

TEST(CudaSampler, FullVocabStatsFollowTheCpuAndIgnoreTheBatch) {
  VB_REQUIRE_GPU();
  // Qwen3's vocabulary: 8 chunks of 18,992 ids. Row 0: the max tied across a chunk boundary;
  // row 1: the max banned; row 2: the max in the last chunk; row 3: scored token.
  const int V = 151936, R = 5;
  std::mt19937 rng(91);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logits(size_t(R) * V);
  for (float& x : logits) x = nd(rng);
  logits[18991] = logits[18992] = 40.0f;  // tie straddling chunks 0 and 1: id 18991 wins
  logits[size_t(V) + 77777] = 50.0f;
  logits[size_t(V) + 140000] = 45.0f;
  logits[size_t(2) * V + size_t(V - 1)] = 33.0f;
  std::vector<SampleSpec> specs(static_cast<size_t>(R));
  for (int i = 0; i < R; ++i) {
    specs[size_t(i)].temperature = 0;
    specs[size_t(i)].want_logprob = true;
    specs[size_t(i)].position = i;
  }
  specs[1].banned = {77777};
  specs[3].score_token = 4242;
  // Top logprobs across the chunks: row 0's first two (the tie at 18991 / 18992) come from two of
  // them; row 2 asks for the most there are.
  specs[0].num_top_logprobs = 5;
  specs[2].num_top_logprobs = cuda::kMaxTopLogprobs;
  const SamplerRun all = gpu_sample(logits, V, specs);
  EXPECT_EQ(all.out[0].token, 18991);
  EXPECT_EQ(all.out[1].token, 140000);
  EXPECT_EQ(all.out[2].token, V - 1);
  EXPECT_EQ(all.out[3].token, 4242);
  for (int i = 0; i < R; ++i) {
    const SampleResult want = sample_row(&logits[size_t(i) * V], V, specs[size_t(i)]);
    EXPECT_EQ(all.out[size_t(i)].token, want.token) << "row " << i;
    EXPECT_NEAR(all.out[size_t(i)].logprob, want.logprob, 3e-4) << "row " << i;  // 151,936 terms summed
    ASSERT_EQ(want.top.size(), size_t(specs[size_t(i)].num_top_logprobs)) << "row " << i;
    for (size_t k = 0; k < want.top.size(); ++k) {
      EXPECT_EQ(all.top_ids[size_t(i) * cuda::kMaxTopLogprobs + k], want.top[k].first) << "row " << i << " top " << k;
      EXPECT_NEAR(all.top_lps[size_t(i) * cuda::kMaxTopLogprobs + k], want.top[k].second, 3e-4) << "row " << i;
    }
    const SamplerRun one = gpu_sample(std::vector<float>(logits.begin() + long(i) * V, logits.begin() + long(i + 1) * V),
                                      V, {specs[size_t(i)]});
    EXPECT_EQ(one.out[0].token, all.out[size_t(i)].token) << "row " << i;
    EXPECT_EQ(f32_bits(one.out[0].logprob), f32_bits(all.out[size_t(i)].logprob)) << "row " << i;
    for (int k = 0; k < specs[size_t(i)].num_top_logprobs; ++k) {
      EXPECT_EQ(one.top_ids[size_t(k)], all.top_ids[size_t(i) * cuda::kMaxTopLogprobs + size_t(k)]) << "row " << i;
      EXPECT_EQ(f32_bits(one.top_lps[size_t(k)]), f32_bits(all.top_lps[size_t(i) * cuda::kMaxTopLogprobs + size_t(k)]));
    }
  }
}

// The plan says how many rows its largest ring item has (host code: runs without a GPU): the ring
// kernel takes the transposed tiles only where every item fits their 8 rows (n of the MMA).
TEST(AttentionPlan, RingRowsIsTheLargestRingItem) {
  auto ring_rows = [](const std::vector<int32_t>& pos, const std::vector<int32_t>& seq, int group) {
    const std::vector<int32_t> bt_off(8, 0);
    const cuda::AttnPlan plan =
        cuda::plan_attention(pos.data(), seq.data(), bt_off.data(), int(pos.size()), group, 64, 1 << 20, true, true);
    EXPECT_EQ(plan.launches.size(), 1u);
    const cuda::AttnLaunch& g = plan.launches.at(0);
    EXPECT_EQ(g.ring_end - g.ring_begin, int(std::set<int32_t>(seq.begin(), seq.end()).size()));
    return g.ring_rows;
  };
  EXPECT_EQ(ring_rows({700, 64, 3, 1023, 0}, {0, 1, 2, 3, 4}, 4), 4);  // a decode step (8B's group)
  EXPECT_EQ(ring_rows({700, 64, 3}, {0, 1, 2}, 2), 2);                 // (0.6B's group)
  EXPECT_EQ(ring_rows({10, 11, 500}, {0, 0, 1}, 4), 8);                // 2 tokens x 4 heads: still fits
  EXPECT_EQ(ring_rows({10, 11, 12, 500}, {0, 0, 0, 1}, 4), 12);        // 3 x 4: the plain tiles
  EXPECT_EQ(ring_rows({10, 11, 12, 13, 14, 15, 16, 17}, {0, 0, 0, 0, 0, 0, 0, 0}, 2), 16);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOps, ::testing::Values(DType::BF16, DType::F16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace verbatim
