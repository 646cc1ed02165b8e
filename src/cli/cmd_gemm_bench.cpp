// `verbatim gemm-bench`: the contract GEMM kernels (v1, v2) and cuBLAS timed alone on the linear
// layers of a Qwen3 shape, as weight bytes streamed per second (the decode figure of merit: at
// small M every weight is read once and the time is the weight bytes over the bandwidth).
// Each timing replays a CUDA graph of back-to-back launches that cycle through enough weight
// copies (> 256 MB) that L2 holds none of them, as in a decode step that reads every layer once.
// Each contract kernel's whole product is also compared with v1's, byte for byte, on the same
// operands (column "bits"; JSON elements_differing_from_v1): the model's own shapes, not only
// the test's. Row gate_up_silu is gate_up through gemm_silu_mul (the SiLU epilogue, at <= 32 rows,
// where the decode steps use it; cuBLAS there is the plain GEMM); the per-step sums leave it out.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_facts.h"
#include "cli/validators.h"
#include "core/error.h"
#include "model/make_model.h"
#ifdef VERBATIM_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/kernels.h"
#endif

namespace verbatim::cli {
namespace {

struct GemmBenchArgs {
  std::vector<std::string> archs = {"qwen3-0.6b", "qwen3-8b"};
  std::vector<int> ms = {1, 8, 32, 64};
  std::vector<std::string> kernels = {"v1", "tiled", "cublas"};
  double bandwidth_tbs = 4.3;  // the bound's bandwidth, TB/s (as engine-bench's --bandwidth-tbs)
  std::string json_out;
};

#ifdef VERBATIM_HAVE_CUDA
struct Shape {
  std::string name;
  int N, K;
  bool silu = false;  // gate_up through gemm_silu_mul (its SiLU epilogue): out[M, N / 2]
};

std::vector<Shape> linear_shapes(const ModelConfig& c) {
  const int H = int(c.hidden_size), I = int(c.intermediate_size), hd = int(c.head_dim);
  const int nh = int(c.num_heads), nkv = int(c.num_kv_heads);
  return {{"qkv", (nh + 2 * nkv) * hd, H}, {"o", H, nh * hd}, {"gate_up", 2 * I, H}, {"down", H, I},
          {"lm_head", int(c.vocab_size), H}, {"gate_up_silu", 2 * I, H, true}};
}

// "kernel[:knob]": v1 | v2 | tiled | auto, and one GemmTuning knob (kernels.h): combine,
// nocombine, wide, mma (tiled on mma.sync at > 64 rows), wgmma, wgcombine, wgnocombine (the wgmma
// kernel past 64 rows: segments added by size, always, never), wg256 (the wgmma kernel
// with 256-row CTAs where it does not add segments), wgsum128 / wgsum256 (segments added in the
// kernel on 128-row CTAs, sums in shared memory / on 256-row CTAs, sums in the workspace; the
// default picks by size), wgcp (the wgmma kernel's copies by cp.async, not TMA), wglag1 (its
// 256-row tiles leaving one stage of MMAs running), wgplain / wgpair / wgpersist (one chunk a box
// and one CTA a tile; a stage's two chunks as one 128-byte-swizzle box only; one CTA per SM looping
// over tiles only: the default has both); m64n32, m32x2 (v1 at 33..64 rows); u8 (v1 at <= 16
// rows). Sets the kernel and the tuning.
cuda::GemmKernel kernel_named(const std::string& spec, cuda::GemmTuning* tuning = nullptr) {
  const size_t colon = spec.find(':');
  const std::string k = spec.substr(0, colon), knob = colon == std::string::npos ? "" : spec.substr(colon + 1);
  cuda::GemmTuning t;
  if (knob == "combine") t.tiled_combine = 1;
  else if (knob == "nocombine") t.tiled_combine = 0;
  else if (knob == "wide") t.tiled_combine = 0, t.tiled_wide = true, t.tiled_wgmma = false;
  else if (knob == "mma") t.tiled_wgmma = false;
  else if (knob == "wgmma") t.tiled_wgmma = true;
  else if (knob == "wgcombine") t.tiled_wgmma = true, t.wgmma_combine = 1;
  else if (knob == "wgnocombine") t.tiled_wgmma = true, t.wgmma_combine = 0;
  else if (knob == "wg256") t.tiled_wgmma = true, t.wgmma_rows = 256;
  else if (knob == "wgsum128") t.tiled_wgmma = true, t.wgmma_combine = 1, t.wgmma_sum_rows = 128;
  else if (knob == "wgsum256") t.tiled_wgmma = true, t.wgmma_combine = 1, t.wgmma_sum_rows = 256;
  else if (knob == "wgcp") t.tiled_wgmma = true, t.wgmma_tma = false;
  else if (knob == "wglag1") t.tiled_wgmma = true, t.wgmma_lag = 1;
  else if (knob == "wgplain") t.tiled_wgmma = true, t.wgmma_pairs = false, t.wgmma_persist = false;
  else if (knob == "wgpair") t.tiled_wgmma = true, t.wgmma_pairs = true, t.wgmma_persist = false;
  else if (knob == "wgpersist") t.tiled_wgmma = true, t.wgmma_pairs = false, t.wgmma_persist = true;
  else if (knob == "m64n32") t.v1_m64 = 1;
  else if (knob == "m32x2") t.v1_m64 = 2;
  else if (knob == "u8") t.v1_unroll16 = 8;
  else if (knob == "u32x6") t.v1_unroll32 = 6;
  else if (knob == "u32x8") t.v1_unroll32 = 8;
  else if (knob == "m64u4") t.v1_m64 = 3;
  else if (!knob.empty()) throw Error("gemm-bench: unknown knob '" + knob + "' in '" + spec + "'");
  if (tuning) *tuning = t;
  if (k == "v1") return cuda::GemmKernel::V1;
  if (k == "v2") return cuda::GemmKernel::V2;
  if (k == "tiled") return cuda::GemmKernel::Tiled;
  if (k == "auto") return cuda::GemmKernel::Auto;
  if (k == "stream") return cuda::GemmKernel::Stream;
  throw Error("gemm-bench: unknown kernel '" + spec + "' (v1, v2, tiled, stream, auto[:knob], cublas)");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times `launches` (each enqueueing one GEMM on `stream`) as a graph: median ms per launch.
template <typename F>
double time_graph(cudaStream_t stream, int launches, F&& enqueue) {
  for (int i = 0; i < 2; ++i) enqueue(i);  // warm-up (module load, cuBLAS heuristics)
  VB_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  VB_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i) enqueue(i);
  VB_CUDA(cudaStreamEndCapture(stream, &graph));
  VB_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  VB_CUDA(cudaEventCreate(&e0));
  VB_CUDA(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int r = 0; r < 7; ++r) {
    VB_CUDA(cudaEventRecord(e0, stream));
    VB_CUDA(cudaGraphLaunch(exec, stream));
    VB_CUDA(cudaEventRecord(e1, stream));
    VB_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    VB_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (r > 0) ms.push_back(double(t) / launches);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return median(ms);
}

int run_gemm_bench(const GemmBenchArgs& a) {
  for (const std::string& k : a.kernels)
    if (k != "cublas") kernel_named(k);  // an unknown name fails here, before any capture
  cudaStream_t stream;
  VB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t cublas;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw Error("gemm-bench: cublasCreate failed");
  cublasSetStream(cublas, stream);
  void* cublas_ws = nullptr;
  const size_t cublas_ws_bytes = size_t(32) << 20;
  VB_CUDA(cudaMalloc(&cublas_ws, cublas_ws_bytes));
  cublasSetWorkspace(cublas, cublas_ws, cublas_ws_bytes);
  cuda::gemm_prepare();  // before any capture
  const int max_m = *std::max_element(a.ms.begin(), a.ms.end());
  // Random bf16 values (never zeros), made once on the host and tiled over every buffer.
  std::vector<uint16_t> pattern(size_t(1) << 22);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  for (auto& v : pattern) v = f32_to_bf16(nd(rng));
  auto fill = [&](void* p, size_t bytes) {
    for (size_t off = 0; off < bytes; off += pattern.size() * 2)
      VB_CUDA(cudaMemcpy(static_cast<char*>(p) + off, pattern.data(), std::min(pattern.size() * 2, bytes - off),
                         cudaMemcpyHostToDevice));
  };
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-11s %-8s %6s %6s %4s %3s %-7s %10s %9s %8s %8s %s\n", "arch", "layer", "N", "K", "M", "spl", "kernel",
              "us/launch", "TB/s(W)", "x bound", "TFLOP/s", "bits");
  for (const std::string& arch : a.archs) {
    const ModelConfig c = arch_config(arch, DType::BF16);
    for (const Shape& s : linear_shapes(c)) {
      const size_t wbytes = size_t(s.N) * s.K * 2;
      const int copies = int(std::max<size_t>(1, (size_t(256) << 20) / wbytes + 1));
      std::vector<void*> w(size_t(copies), nullptr);
      for (auto& p : w) {
        VB_CUDA(cudaMalloc(&p, wbytes));
        fill(p, wbytes);
      }
      void *x = nullptr, *y = nullptr;
      VB_CUDA(cudaMalloc(&x, size_t(max_m) * s.K * 2));
      fill(x, size_t(max_m) * s.K * 2);
      VB_CUDA(cudaMalloc(&y, size_t(max_m) * s.N * 4));
      const int split = cuda::gemm_split_for(s.N, s.K);
      const size_t ws_bytes = std::max<size_t>(size_t(64) << 20, cuda::gemm_workspace_bytes(max_m, s.N, split));
      float* ws = nullptr;
      VB_CUDA(cudaMalloc(reinterpret_cast<void**>(&ws), ws_bytes));
      const int launches = std::max(copies, int(std::min<size_t>(64, (size_t(2) << 30) / wbytes)));
      const bool logits = s.name == "lm_head";
      // One GEMM by contract kernel spec k into y, as the backend calls it: logits in fp32, the
      // layers rounded. as_layer: leave split-K partials for a fused consumer unless the kernel
      // adds the segments itself; else the whole product.
      auto contract_gemm = [&](const std::string& k, int M, const void* wi, bool as_layer) {
        cuda::GemmTuning tune;
        cuda::set_gemm_kernel(kernel_named(k, &tune));
        cuda::set_gemm_tuning(tune);  // before gemm_sums_in_kernel, which reads it
        cuda::GemmOut out;
        if (s.silu) return cuda::gemm_silu_mul(x, M, s.K, wi, s.N / 2, DType::BF16, y, stream);
        if (logits) out.y32 = static_cast<float*>(y);
        else out.y = y;
        out.partials_only = as_layer && !logits && split > 1 && !cuda::gemm_sums_in_kernel(M, s.N, split);
        cuda::gemm(x, M, s.K, s.K, wi, s.N, DType::BF16, split, out, ws, ws_bytes, stream);
      };
      // The whole product of spec k, to the host: every contract kernel must give v1's bytes on
      // these shapes too.
      auto product = [&](const std::string& k, int M) {
        contract_gemm(k, M, w[0], false);
        std::vector<uint8_t> bytes(size_t(M) * (s.silu ? s.N / 2 : s.N) * (logits ? 4 : 2));
        VB_CUDA(cudaStreamSynchronize(stream));
        VB_CUDA(cudaMemcpy(bytes.data(), y, bytes.size(), cudaMemcpyDeviceToHost));
        return bytes;
      };
      for (int M : a.ms) {
        // The decode rows only (v1's epilogue, the bits reference, takes <= 32), as the backend fuses them.
        if (s.silu && (M > 32 || !cuda::gemm_silu_mul_ok(M, s.K, s.N / 2, 1))) continue;
        const std::vector<uint8_t> v1 = product("v1", M);
        for (const std::string& k : a.kernels) {
          auto enqueue = [&](int i) {
            const void* wi = w[size_t(i % copies)];
            if (k == "cublas") {
              const float alpha = 1.0f, beta = 0.0f;
              if (cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, s.N, M, s.K, &alpha, wi, CUDA_R_16BF, s.K, x,
                               CUDA_R_16BF, s.K, &beta, y, logits ? CUDA_R_32F : CUDA_R_16BF, s.N, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
                throw Error("gemm-bench: cublasGemmEx failed");
              return;
            }
            contract_gemm(k, M, wi, true);
          };
          const double ms = time_graph(stream, launches, enqueue);
          // Elements whose bytes differ from v1's (-1 for cuBLAS, which keeps no contract).
          int64_t differ = -1;
          if (k != "cublas") {
            const std::vector<uint8_t> got = product(k, M);
            const size_t esz = logits ? 4 : 2;
            differ = 0;
            for (size_t e = 0; e < got.size(); e += esz) differ += std::memcmp(&got[e], &v1[e], esz) != 0;
          }
          const double tbs = double(wbytes) / (ms * 1e-3) / 1e12;
          const double bound_ms = double(wbytes) / (a.bandwidth_tbs * 1e12) * 1e3;
          const double tflops = 2.0 * M * double(s.N) * s.K / (ms * 1e-3) / 1e12;
          std::printf("%-11s %-8s %6d %6d %4d %3d %-7s %10.2f %9.2f %8.2f %8.1f %s\n", arch.c_str(), s.name.c_str(), s.N,
                      s.K, M, split, k.c_str(), ms * 1e3, tbs, ms / bound_ms, tflops,
                      differ < 0 ? "-" : differ == 0 ? "v1 bits" : ("DIFFERS from v1 in " + std::to_string(differ)).c_str());
          std::fflush(stdout);
          rows.push_back({{"arch", arch}, {"layer", s.name}, {"N", s.N}, {"K", s.K}, {"M", M}, {"split", split},
                          {"kernel", k}, {"us_per_launch", ms * 1e3}, {"weight_tb_per_s", tbs},
                          {"x_bound", ms / bound_ms}, {"tflop_per_s", tflops},
                          {"elements_differing_from_v1", differ < 0 ? nlohmann::json() : nlohmann::json(differ)},
                          {"tile", k == "cublas" ? "cublas" : cuda::gemm_tile_name(M)}});
        }
      }
      for (void* p : w) cudaFree(p);
      cudaFree(x);
      cudaFree(y);
      cudaFree(ws);
    }
  }
  // Per arch and M: the five layers as one decode step's linear work (weights only).
  for (const std::string& arch : a.archs)
    for (int M : a.ms)
      for (const std::string& k : a.kernels) {
        double us = 0, bytes = 0;
        for (const auto& r : rows)
          if (r["arch"] == arch && r["M"] == M && r["kernel"] == k && r["layer"] != "gate_up_silu") {
            us += r["us_per_launch"].get<double>();
            bytes += double(r["N"].get<int>()) * r["K"].get<int>() * 2;
          }
        std::printf("sum %-11s M %3d %-7s %9.1f us for one layer + lm_head: %.2f TB/s\n", arch.c_str(), M, k.c_str(),
                    us, bytes / (us * 1e-6) / 1e12);
      }
  cuda::set_gemm_kernel(cuda::GemmKernel::Auto);
  cuda::set_gemm_tuning(cuda::GemmTuning{});
  if (!a.json_out.empty()) {
    nlohmann::json out = run_facts();
    out["gpu"] = gpu_facts("cuda");
    out["sm_clock_mhz_after"] = sm_clock_now("cuda");
    out["bandwidth_bytes_per_s"] = a.bandwidth_tbs * 1e12;
    out["rows"] = rows;
    std::ofstream f(a.json_out);
    f << out.dump(2) << "\n";
    if (!f) throw Error("cannot write " + a.json_out);
  }
  cudaFree(cublas_ws);
  cublasDestroy(cublas);
  cudaStreamDestroy(stream);
  return 0;
}
#endif

const Registrar gemm_bench_reg(82, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<GemmBenchArgs>();
  CLI::App* sub = app.add_subcommand("gemm-bench", "Time the contract GEMM kernels and cuBLAS on a model's linear layers");
  sub->add_option("--archs", a->archs, "Shapes of these archs (make-model names)")->delimiter(',');
  sub->add_option("--m", a->ms, "Row counts (decode batch sizes)")->delimiter(',');
  sub->add_option("--kernels", a->kernels, "v1 | v2 | tiled | stream | auto | cublas")->delimiter(',');
  sub->add_option("--json", a->json_out, "Write the results here")->check(writable_file());
  sub->add_option("--bandwidth-tbs", a->bandwidth_tbs, "Memory bandwidth of the bound, TB/s (4.3: an H200)")
      ->capture_default_str()
      ->check(finite_range(0.0, 100.0, true));
  return [a]() -> int {
#ifdef VERBATIM_HAVE_CUDA
    return run_gemm_bench(*a);
#else
    throw Error("gemm-bench: this build has no CUDA backend");
#endif
  };
});

}  // namespace
}  // namespace verbatim::cli
