// `verbatim engine-bench`: engine-level decode and prefill timings of one backend (the CUDA
// backend's figures in bench/results come from here), and `verbatim dump-logits`: the logits of
// given prompts, for comparing a backend with HF transformers (bench/hf_compare.py).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/run_facts.h"
#include "cli/validators.h"
#include "core/error.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "server/backend_factory.h"
#include "server/protocol.h"
#ifdef VERBATIM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_backend.h"
#endif

namespace verbatim::cli {
namespace {

struct BenchArgs {
  std::string model, device = "cuda", dtype = "auto", mode = "contract", json_out;
  int tensor_parallel_size = 1;
  std::string tp_reduce = "allgather";  // cuda, TP > 1: allreduce = NCCL's sum (contract off), to time its cost
  std::vector<int> batches = {1, 8, 32, 64};
  int context = 1024, steps = 64, warmup = 5, prefill = 2048, prefill_reps = 5;
  int logprobs = -1;  // >= 0: every decode row reports its token's logprob and this many top ones
  bool context_prefill = true;  // false: decode over the zeroed cache (same traffic; for profilers)
  // TB/s of the bound's bandwidth: the H200's measured copy rate (design.md) unless --bandwidth-tbs
  // names the card's (an H100 copies ~3.0 TB/s: device/KINDS.md).
  double bandwidth_tbs = 4.3;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[size_t(q * double(v.size() - 1) + 0.5)];
}
// Bytes in use on the device of `device` ("cuda" or "cuda:N"; 0 elsewhere): total - free.
size_t device_used_bytes(const std::string& device) {
#ifdef VERBATIM_HAVE_CUDA
  const int index = cuda_device_index(device);
  if (index < 0) return 0;
  size_t free_b = 0, total = 0;
  if (cudaSetDevice(index) != cudaSuccess || cudaFree(nullptr) != cudaSuccess ||
      cudaMemGetInfo(&free_b, &total) != cudaSuccess)
    return 0;
  return total - free_b;
#else
  (void)device;
  return 0;
#endif
}

// ", SM clock N MHz" when the clock was measured, else nothing.
std::string clock_note(const nlohmann::json& mhz) {
  return mhz.is_number() ? ", SM clock " + std::to_string(int(mhz.get<double>() + 0.5)) + " MHz" : "";
}
std::string join_ms(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.2f", s.empty() ? "" : " ", x);
    s += buf;
  }
  return s;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Weights read by one decode step: every matrix once, the embedding table only through its rows
// (unless tied: then it is read whole as lm_head).
double weight_bytes_per_step(const ModelConfig& c, DType t) {
  const double H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const double per_layer = H * (c.num_heads * hd) * 2 + H * (c.num_kv_heads * hd) * 2 + 3 * H * I + 2 * H + 2 * hd;
  return (c.num_layers * per_layer + double(c.vocab_size) * H + H) * double(dtype_size(t));
}
double kv_bytes_per_token(const ModelConfig& c, DType t) {
  return 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * double(dtype_size(t));
}
// Multiply-adds x 2 of a prefill of T tokens (linear layers, attention, one lm_head row).
double prefill_flops(const ModelConfig& c, int T) {
  const double H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const double lin = H * (c.num_heads * hd) * 2 + H * (c.num_kv_heads * hd) * 2 + 3 * H * I;
  const double attn = 2.0 * c.num_heads * hd * (double(T) * (T + 1) / 2);  // QK^T and PV over the causal half
  return 2.0 * (c.num_layers * (lin * T + attn) + H * c.vocab_size);
}

// dump-logits' --prompts: a JSON list of lists of token ids, each id an integer >= 0 (nlohmann's own
// conversion would wrap 2^32 + 1 to 1 and truncate 1.5 to 1).
std::vector<std::vector<int32_t>> read_prompt_ids(std::istream& in, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON");
  if (!j.is_array()) throw Error(path + ": must be a list of lists of token ids");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_array()) throw Error(path + ": prompt " + std::to_string(i) + " is not a list of token ids");
    std::vector<int32_t> ids;
    for (const auto& t : j[i]) {
      const bool ok = (t.is_number_unsigned() && t.get<uint64_t>() <= uint64_t(INT32_MAX)) ||
                      (t.is_number_integer() && !t.is_number_unsigned() && t.get<int64_t>() >= 0 &&
                       t.get<int64_t>() <= INT32_MAX);
      if (!ok) throw Error(path + ": prompt " + std::to_string(i) + " holds " + t.dump() + ", not a token id");
      ids.push_back(int32_t(t.get<int64_t>()));
    }
    out.push_back(std::move(ids));
  }
  return out;
}

// Positions past the model's max_position_embeddings are refused, as the engine refuses requests
// past max_model_len (engine-bench and dump-logits drive the backend without the engine).
void check_positions(const ModelConfig& c, size_t positions, const char* what) {
  if (c.max_position_embeddings > 0 && positions > size_t(c.max_position_embeddings))
    throw Error(std::string(what) + " needs " + std::to_string(positions) + " positions, more than the model's " +
                "max_position_embeddings of " + std::to_string(c.max_position_embeddings));
}

const Registrar bench_reg(80, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("engine-bench", "Time decode steps and prefill of one backend (no HTTP)");
  sub->add_option("--model", a->model, "Checkpoint folder")->required();
  sub->add_option("--device", a->device, "cpu | cuda | cuda:N")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "auto | bfloat16 | float16 | float32")->capture_default_str();
  sub->add_option("--mode", a->mode, "contract | fast (cuda: contract off, to measure its cost)")->capture_default_str();
  sub->add_option("--batches", a->batches, "Decode batch sizes")->delimiter(',')->check(at_least(1, 1 << 16))->capture_default_str();
  sub->add_option("--context", a->context, "Context length of every sequence before decoding")->capture_default_str()->check(at_least(1, 1 << 24));
  sub->add_option("--steps", a->steps, "Timed decode steps per batch size")->capture_default_str()->check(at_least(1, 1 << 20));
  sub->add_option("--logprobs", a->logprobs,
                  "Decode rows also report their token's logprob and the top N (0: the token's alone; an eval's "
                  "logprobs: N); default: none")
      ->check(at_least(0, server::kMaxLogprobs));
  sub->add_option("--prefill", a->prefill, "Prompt length of the prefill timing (0: skip)")->capture_default_str()->check(at_least(0, 1 << 24));
  sub->add_flag("!--no-context-prefill", a->context_prefill,
                "Decode over the zeroed cache instead of prefilled context (same bytes read; for profilers)");
  sub->add_option("--json", a->json_out, "Write the results here")->check(writable_file());
  sub->add_option("--bandwidth-tbs", a->bandwidth_tbs, "Memory bandwidth of the bound, TB/s (4.3: an H200)")
      ->capture_default_str()
      ->check(finite_range(0.0, 100.0, true));
  sub->add_option("--tensor-parallel-size", a->tensor_parallel_size, "cuda: GPUs (1, 2, 4, 8), one thread each")
      ->capture_default_str();
  sub->add_option("--tp-reduce", a->tp_reduce,
                  "cuda, TP > 1: allgather (the contract) | allreduce (NCCL's sum, bits change with TP: cost only)")
      ->capture_default_str();
  return [a]() -> int {
    if (a->batches.empty()) throw Error("--batches needs at least one batch size");
    const DType dt = server::resolve_dtype(a->dtype, a->model);
    server::BackendOptions bo;
    bo.kernels = a->mode;
    bo.tensor_parallel_size = a->tensor_parallel_size;
    bo.tp_reduce = a->tp_reduce;
    // Device memory in use before the backend exists (this process's context, other processes):
    // the baseline of the memory figure below.
    [[maybe_unused]] const size_t used_before = device_used_bytes(a->device);
    auto be = server::make_backend(a->device, a->model, dt, bo);
    const ModelConfig& c = be->config();
    check_positions(c, size_t(std::max(a->context + a->steps + a->warmup, a->prefill)), "--context + --steps (or --prefill)");
    const int max_b = *std::max_element(a->batches.begin(), a->batches.end());
    const int bs = 16;
    const int seq_blocks = (std::max(a->context + a->steps + a->warmup + 2, a->prefill + 1) + bs - 1) / bs;
    be->allocate_kv(seq_blocks * max_b, bs);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> tok(0, c.vocab_size - 1);
    nlohmann::json out = run_facts();
    out["model"] = a->model;
    out["gpu"] = gpu_facts(a->device);
    out["config"] = {{"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size},
                     {"num_layers", c.num_layers}, {"num_heads", c.num_heads}, {"num_kv_heads", c.num_kv_heads},
                     {"head_dim", c.head_dim}, {"vocab_size", c.vocab_size}, {"tie_word_embeddings", c.tie_word_embeddings}};
    out["dtype"] = dtype_name(dt);
    out["mode"] = a->mode;
    out["tensor_parallel_size"] = a->tensor_parallel_size;
    out["tp_reduce"] = a->tensor_parallel_size > 1 ? a->tp_reduce : "none";
    out["device"] = be->device_name();
    out["kernel_config"] = be->kernel_config();
    out["context"] = a->context;
    out["steps"] = a->steps;
    out["logprobs"] = a->logprobs >= 0 ? nlohmann::json(a->logprobs) : nlohmann::json(nullptr);
    out["bandwidth_bytes_per_s"] = a->bandwidth_tbs * 1e12;
    const double wbytes = weight_bytes_per_step(c, dt);
    out["weight_bytes_per_step"] = wbytes;
    std::printf("%s %s %s on %s%s\n", a->model.c_str(), dtype_name(dt), a->mode.c_str(), be->device_name().c_str(),
                a->logprobs >= 0 ? (", logprobs " + std::to_string(a->logprobs) + " a row").c_str() : "");
    nlohmann::json decode = nlohmann::json::array();
    // max_b sequences of `context` tokens, prefilled once in chunks of up to 2048 tokens; each
    // batch size then decodes the first B of them (rewriting the same positions each time).
    std::vector<std::vector<int32_t>> tables;
    for (int s = 0; s < max_b; ++s) {
      std::vector<int32_t> bt(static_cast<size_t>(seq_blocks));
      std::iota(bt.begin(), bt.end(), s * seq_blocks);
      tables.push_back(bt);
    }
    const double prefill_t0 = now_ms();
    for (int s = 0; s < (a->context_prefill ? max_b : 0); ++s)
      for (int p0 = 0; p0 < a->context; p0 += 2048) {
        ForwardBatch pb;
        pb.block_tables = tables;
        for (int p = p0; p < std::min(a->context, p0 + 2048); ++p) {
          pb.tokens.push_back(tok(rng));
          pb.positions.push_back(p);
          pb.token_seq.push_back(s);
        }
        be->forward_logits(pb, nullptr);
      }
    std::printf("context prefill: %d sequences x %d tokens in %.1f s\n", max_b, a->context, (now_ms() - prefill_t0) / 1e3);
    for (int B : a->batches) {
      ForwardBatch b;
      b.block_tables.assign(tables.begin(), tables.begin() + B);
      std::vector<SampleResult> res;
      std::vector<SampleSpec> specs(static_cast<size_t>(B));
      for (SampleSpec& sp : specs) {
        sp.want_logprob = a->logprobs >= 0;
        sp.num_top_logprobs = std::max(a->logprobs, 0);
      }
      std::vector<int32_t> last(static_cast<size_t>(B));
      for (int32_t& t : last) t = tok(rng);
      std::vector<double> times;
      for (int step = 0; step < a->warmup + a->steps; ++step) {
        b.tokens = last;
        b.positions.assign(static_cast<size_t>(B), a->context + step);
        b.token_seq.resize(static_cast<size_t>(B));
        std::iota(b.token_seq.begin(), b.token_seq.end(), 0);
        b.logit_rows = b.token_seq;
        for (int s = 0; s < B; ++s) specs[size_t(s)].position = a->context + step + 1;
        const double t0 = now_ms();
        be->forward_sample(b, specs, res);
        const double t1 = now_ms();
        if (step >= a->warmup) times.push_back(t1 - t0);
        for (int s = 0; s < B; ++s) last[size_t(s)] = res[size_t(s)].token;
      }
      const double med = median(times);
      const nlohmann::json clock = sm_clock_now(a->device);
      const double kv = kv_bytes_per_token(c, dt) * B * (a->context + a->warmup + a->steps / 2.0);
      const double bound_ms = (wbytes + kv) / (a->bandwidth_tbs * 1e12) * 1e3;
      decode.push_back({{"batch", B}, {"median_ms", med}, {"p10_ms", quantile(times, 0.1)},
                        {"p90_ms", quantile(times, 0.9)}, {"bytes_per_step", wbytes + kv}, {"bound_ms", bound_ms},
                        {"ratio_to_bound", med / bound_ms}, {"tokens_per_s", B * 1e3 / med},
                        {"sm_clock_mhz_after", clock},
                        // What the last step's row 0 got back (--logprobs: its token's logprob and
                        // the top ones), so the JSON shows the sampler did that work.
                        {"row0_logprob", a->logprobs >= 0 ? nlohmann::json(res.at(0).logprob) : nlohmann::json(nullptr)},
                        {"row0_top_logprobs", res.at(0).top.size()}});
      std::printf("decode batch %3d: median %8.3f ms/step (p10 %.3f, p90 %.3f), bound %.3f ms, %.2fx bound, %.0f tok/s%s\n",
                  B, med, quantile(times, 0.1), quantile(times, 0.9), bound_ms, med / bound_ms, B * 1e3 / med,
                  clock_note(clock).c_str());
      std::fflush(stdout);
    }
    out["decode"] = decode;
    if (a->prefill > 0) {
      std::vector<double> times;
      for (int rep = 0; rep < a->prefill_reps + 1; ++rep) {
        ForwardBatch pb;
        std::vector<int32_t> bt(static_cast<size_t>(seq_blocks));
        std::iota(bt.begin(), bt.end(), 0);
        pb.block_tables = {bt};
        for (int p = 0; p < a->prefill; ++p) {
          pb.tokens.push_back(tok(rng));
          pb.positions.push_back(p);
          pb.token_seq.push_back(0);
        }
        pb.logit_rows = {a->prefill - 1};
        std::vector<SampleResult> res;
        const double t0 = now_ms();
        be->forward_sample(pb, {SampleSpec{}}, res);
        const double t1 = now_ms();
        if (rep > 0) times.push_back(t1 - t0);
      }
      const double med = median(times);
      const nlohmann::json clock = sm_clock_now(a->device);
      const double flops = prefill_flops(c, a->prefill);
      out["prefill"] = {{"tokens", a->prefill}, {"ttft_median_ms", med}, {"times_ms", times}, {"flops", flops},
                        {"tflops", flops / (med * 1e-3) / 1e12}, {"sm_clock_mhz_after", clock}};
      std::printf("prefill %d tokens: median %.2f ms, %.1f TFLOP/s (reps %s ms)%s\n", a->prefill, med,
                  flops / (med * 1e-3) / 1e12, join_ms(times).c_str(), clock_note(clock).c_str());
    }
#ifdef VERBATIM_HAVE_CUDA
    if (auto* cb = dynamic_cast<CudaBackend*>(be.get())) {
      // After every batch and the prefill (buffers only grow), so the end is the peak. The target
      // (issue 4): weights + the KV cache asked for + less than 1 GiB.
      cb->synchronize();
      const size_t used_after = device_used_bytes(a->device);
      const double grown = double(used_after) - double(used_before);
      const double wb = double(cb->weight_bytes()), kvb = double(cb->kv_bytes());
      out["device_bytes_held"] = cb->device_bytes_held();
      out["memory"] = {{"weights_bytes", wb},
                       {"kv_bytes", kvb},
                       {"backend_held_bytes", cb->device_bytes_held()},
                       {"device_used_growth_bytes", grown},
                       {"overhead_bytes", grown - wb - kvb},
                       {"context_and_other_bytes_before", used_before}};
      std::printf("memory: weights %.2f GiB + KV %.2f GiB, device use grew %.2f GiB: %.3f GiB beyond weights + KV "
                  "(%.2f GiB in use before the backend)\n",
                  wb / 1073741824.0, kvb / 1073741824.0, grown / 1073741824.0, (grown - wb - kvb) / 1073741824.0,
                  double(used_before) / 1073741824.0);
    }
#endif
    if (!a->json_out.empty()) {
      std::ofstream f(a->json_out);
      if (!f) throw Error("cannot write " + a->json_out);
      f << out.dump(2) << "\n";
    }
    return 0;
  };
});

struct DumpArgs {
  std::string model, device = "cuda", dtype = "auto", mode = "contract", prompts, out;
  int greedy = 0, tensor_parallel_size = 1;
};

const Registrar dump_reg(81, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<DumpArgs>();
  CLI::App* sub = app.add_subcommand("dump-logits", "Write the fp32 logits (and greedy tokens) of prompts given as token ids");
  sub->add_option("--model", a->model, "Checkpoint folder")->required();
  sub->add_option("--device", a->device, "cpu | cuda | cuda:N")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "auto | bfloat16 | float16 | float32")->capture_default_str();
  sub->add_option("--mode", a->mode, "contract | fast")->capture_default_str();
  sub->add_option("--prompts", a->prompts, "JSON file: a list of lists of token ids")->required();
  sub->add_option("--greedy", a->greedy, "Also generate this many greedy tokens per prompt")
      ->capture_default_str()
      ->check(at_least(0, 1 << 20));
  sub->add_option("--out", a->out, "Output .safetensors (p<i>.logits [len, vocab] fp32, p<i>.greedy int32)")->required();
  sub->add_option("--tensor-parallel-size", a->tensor_parallel_size, "cuda: GPUs (1, 2, 4, 8), one thread each")
      ->capture_default_str();
  return [a]() -> int {
    std::ifstream in(a->prompts);
    if (!in) throw Error("cannot read " + a->prompts);
    const auto prompts = read_prompt_ids(in, a->prompts);
    const DType dt = server::resolve_dtype(a->dtype, a->model);
    server::BackendOptions bo;
    bo.kernels = a->mode;
    bo.tensor_parallel_size = a->tensor_parallel_size;
    auto be = server::make_backend(a->device, a->model, dt, bo);
    const int V = be->config().vocab_size, bs = 16;
    for (size_t i = 0; i < prompts.size(); ++i)
      for (int32_t id : prompts[i])
        if (id >= V)
          throw Error(a->prompts + ": prompt " + std::to_string(i) + " holds token " + std::to_string(id) +
                      ", outside the vocabulary of " + std::to_string(V));
    size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());
    // The last greedy token is never fed back: positions 0 .. longest + greedy - 2.
    check_positions(be->config(), longest + size_t(std::max(a->greedy - 1, 0)), "the longest prompt + --greedy - 1");
    const int blocks = int((longest + size_t(a->greedy) + bs) / bs) + 1;
    be->allocate_kv(blocks, bs);
    std::vector<TensorData> tensors;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto& ids = prompts[i];
      if (ids.empty()) throw Error(a->prompts + ": prompt " + std::to_string(i) + " is empty");
      ForwardBatch b;
      std::vector<int32_t> bt(static_cast<size_t>(blocks));
      std::iota(bt.begin(), bt.end(), 0);
      b.block_tables = {bt};
      b.tokens = ids;
      for (size_t p = 0; p < ids.size(); ++p) {
        b.positions.push_back(int32_t(p));
        b.token_seq.push_back(0);
        b.logit_rows.push_back(int32_t(p));
      }
      TensorData t;
      t.spec = {"p" + std::to_string(i) + ".logits", StDType::F32, {int64_t(ids.size()), V}};
      t.bytes.resize(ids.size() * size_t(V) * 4);
      be->forward_logits(b, reinterpret_cast<float*>(t.bytes.data()));
      tensors.push_back(std::move(t));
      if (a->greedy > 0) {
        std::vector<int32_t> gen;
        std::vector<SampleResult> res;
        b.logit_rows = {int32_t(ids.size() - 1)};
        while (int(gen.size()) < a->greedy) {
          be->forward_sample(b, {SampleSpec{}}, res);
          gen.push_back(res[0].token);
          b.tokens = {res[0].token};
          b.positions = {int32_t(ids.size() + gen.size() - 1)};
          b.token_seq = {0};
          b.logit_rows = {0};
        }
        TensorData g;
        g.spec = {"p" + std::to_string(i) + ".greedy", StDType::I32, {int64_t(gen.size())}};
        g.bytes.resize(gen.size() * 4);
        std::memcpy(g.bytes.data(), gen.data(), g.bytes.size());
        tensors.push_back(std::move(g));
      }
    }
    write_safetensors(a->out, tensors);
    std::printf("wrote %s: %zu prompts, %s, %s on %s\n", a->out.c_str(), prompts.size(), dtype_name(dt),
                a->mode.c_str(), be->device_name().c_str());
    return 0;
  };
});

}  // namespace
}  // namespace verbatim::cli
