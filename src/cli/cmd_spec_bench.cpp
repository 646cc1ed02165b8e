// `verbatim spec-bench`: time per output token with and without speculative decoding (n-gram
// drafts), through the Engine, on a repetitive and a non-repetitive workload. Off and on runs
// alternate rep by rep (so machine noise hits both alike), every pair is checked bit for bit
// (ids and logprobs), and medians go to JSON (bench/results/spec_*.json).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/dtype.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "engine/spec_decode.h"
#include "server/backend_factory.h"

namespace verbatim::cli {
namespace {

struct SpecBenchArgs {
  std::string model, device = "cpu", dtype = "auto", json_out;
  std::vector<std::string> workloads = {"repetitive", "random", "rejecting"};
  std::vector<int> batches = {1};
  std::vector<int> ks = {3};
  int max_tokens = 64, prompt_len = 48, reps = 3, ngram_min = 2, ngram_max = 4;
};

// Lends one backend to engine after engine (each Engine owns its backend; the weights load once).
class KvKeepingBackend : public ForwardingBackend {
 public:
  KvKeepingBackend(Backend& b, int* kv_shape) : ForwardingBackend(b), kv_shape_(kv_shape) {}
  // Every run asks for the same cache: keep the one the last run used (a GPU backend would
  // otherwise re-allocate and zero it and drop its captured CUDA graphs, and re-capturing them
  // inside the timed decode phase would bias the first runs). Its stale K/V is finite and never
  // attended: each run writes every position it reads (prefix caching is off in spec-bench).
  void allocate_kv(int n, int bs) override {
    if (kv_shape_[0] == n && kv_shape_[1] == bs) return;
    borrowed().allocate_kv(n, bs);
    kv_shape_[0] = n;
    kv_shape_[1] = bs;
  }

 private:
  int* kv_shape_;  // {num_blocks, block_size} of the backend's current cache, shared by all lenders
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// CPU time of the whole process (every OpenMP thread): the work done, which a shared machine's
// other load disturbs far less than the wall clock. With OMP_NUM_THREADS=1 it is exactly the
// engine's work.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Request {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

// repetitive: a token pattern (period 3..8) repeated, greedy: the model's continuation loops, as
// text that quotes itself does. random: random ids, seeded sampling at temperature 1: nothing
// repeats, so there is nothing to draft (the proposer's own cost). rejecting: the repetitive
// prompts sampled at temperature 0.2: tokens recur, so drafts are proposed, but the draws mostly
// leave the loop and reject them (the case the throttle must keep cheap).
std::vector<Request> workload(const std::string& name, int batch, int vocab, int prompt_len, int max_tokens) {
  std::vector<Request> reqs;
  for (int b = 0; b < batch; ++b) {
    Request r;
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;  // every run emits the same number of tokens
    r.params.logprobs = 0;       // the chosen token's logprob, so the bit check covers logprobs
    if (name == "repetitive" || name == "rejecting") {
      const int period = 3 + b % 6;
      std::vector<int32_t> pat;
      for (int i = 0; i < period; ++i) pat.push_back(int32_t(sample_uniform(21, uint64_t(b), i) * float(vocab)));
      for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(pat[size_t(i % period)]);
      r.params.temperature = name == "repetitive" ? 0.0f : 0.3f;
      r.params.seed = 2000 + uint64_t(b);
    } else if (name == "random") {
      for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(int32_t(sample_uniform(22, uint64_t(b), i) * float(vocab)));
      r.params.temperature = 1.0f;
      r.params.seed = 1000 + uint64_t(b);
    } else {
      throw Error("unknown workload '" + name + "' (choose: repetitive, random, rejecting)");
    }
    reqs.push_back(std::move(r));
  }
  return reqs;
}

// Decode phase: from the step that gave the last request its first token to the end. Its time
// over the tokens each sequence emitted in it (tokens / batch): time per output token.
struct RunResult {
  double tpot_ms = 0;      // wall clock
  double tpot_cpu_ms = 0;  // process CPU time
  double wall_ms = 0;
  std::vector<std::vector<uint32_t>> bits;  // per request: (id, logprob bits) per token
  EngineStats stats;
};

RunResult run_once(Backend& be, EngineOptions opts, const std::vector<Request>& reqs) {
  static int kv_shape[2] = {-1, -1};
  Engine e(std::make_unique<KvKeepingBackend>(be, kv_shape), opts);
  RunResult r;
  std::map<uint64_t, size_t> index;
  r.bits.resize(reqs.size());
  const double t0 = now_ms();
  for (size_t i = 0; i < reqs.size(); ++i) index[e.add(reqs[i].prompt, reqs[i].params)] = i;
  size_t started = 0, tokens = 0, tokens_at_start = 0;
  double wall_a = 0, cpu_a = 0;
  while (e.has_work()) {
    for (const RequestUpdate& u : e.step()) {
      const size_t i = index.at(u.id);
      if (!u.error.empty()) throw Error("spec-bench: request failed: " + u.error);
      if (!u.tokens.empty() && r.bits[i].empty()) ++started;
      tokens += u.tokens.size();
      for (const TokenLogprob& tl : u.tokens) {
        r.bits[i].push_back(uint32_t(tl.token));
        r.bits[i].push_back(f32_bits(tl.logprob));
      }
    }
    if (started == reqs.size() && wall_a == 0) {
      wall_a = now_ms();
      cpu_a = cpu_ms();
      tokens_at_start = tokens;
    }
  }
  const double wall_b = now_ms(), cpu_b = cpu_ms();
  r.wall_ms = wall_b - t0;
  const double per_seq = double(tokens - tokens_at_start) / double(reqs.size());
  r.tpot_ms = per_seq > 0 ? (wall_b - wall_a) / per_seq : 0.0;
  r.tpot_cpu_ms = per_seq > 0 ? (cpu_b - cpu_a) / per_seq : 0.0;
  r.stats = e.stats();
  return r;
}

const Registrar spec_bench_reg(85, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<SpecBenchArgs>();
  CLI::App* sub = app.add_subcommand("spec-bench", "Time per output token with and without n-gram speculative decoding");
  sub->add_option("--model", a->model, "Checkpoint folder")->required();
  sub->add_option("--device", a->device, "cpu | cuda | cuda:N")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "auto | bfloat16 | float16 | float32")->capture_default_str();
  sub->add_option("--workloads", a->workloads, "repetitive, random, rejecting")
      ->delimiter(',')
      ->check(CLI::IsMember({"repetitive", "random", "rejecting"}))
      ->capture_default_str();
  sub->add_option("--batches", a->batches, "Concurrent requests per run")->delimiter(',')->check(at_least(1, 4096))->capture_default_str();
  sub->add_option("--max-tokens", a->max_tokens, "Tokens generated per request")->capture_default_str()->check(at_least(1, 1 << 20));
  sub->add_option("--prompt-len", a->prompt_len, "Prompt tokens per request")->capture_default_str()->check(at_least(1, 1 << 20));
  sub->add_option("--reps", a->reps, "Off/on pairs per case (medians reported)")->capture_default_str()->check(at_least(1, 1000));
  sub->add_option("--num-speculative-tokens", a->ks, "K (a list runs each)")->delimiter(',')->check(at_least(1, 64))->capture_default_str();
  sub->add_option("--ngram-min", a->ngram_min, "Shortest n-gram looked up")->capture_default_str();
  sub->add_option("--ngram-max", a->ngram_max, "Longest n-gram looked up")->capture_default_str();
  sub->add_option("--json", a->json_out, "Write the results here")->check(writable_file());
  return [a]() -> int {
    if (a->batches.empty()) throw Error("--batches needs at least one batch size");
    if (a->ks.empty()) throw Error("--num-speculative-tokens needs at least one K");
    const DType dt = server::resolve_dtype(a->dtype, a->model);
    auto be = server::make_backend(a->device, a->model, dt);
    const ModelConfig& c = be->config();
    EngineOptions off;
    off.enable_prefix_caching = false;  // every run computes its prompts
    const int max_b = *std::max_element(a->batches.begin(), a->batches.end());
    off.max_num_seqs = max_b;
    off.max_model_len = a->prompt_len + a->max_tokens + 1;
    off.num_kv_blocks = max_b * ((off.max_model_len + off.block_size - 1) / off.block_size + 1);
    EngineOptions on = off;
    on.speculative = "ngram";
    on.ngram_min = a->ngram_min;
    on.ngram_max = a->ngram_max;

    nlohmann::json out;
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    out["date"] = date;
    out["model"] = a->model;
    out["config"] = {{"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size},
                     {"num_layers", c.num_layers}, {"vocab_size", c.vocab_size}};
    out["dtype"] = dtype_name(dt);
    out["device"] = be->device_name();
    out["kernel_config"] = be->kernel_config();
    out["speculative"] = {{"method", "ngram"}, {"num_speculative_tokens", a->ks}, {"ngram_min", a->ngram_min},
                          {"ngram_max", a->ngram_max},
                          {"throttle", {{"window_steps", SpecThrottle::kWindowSteps},
                                        {"min_acceptance", SpecThrottle::kMinAcceptance},
                                        {"first_pause", SpecThrottle::kFirstPause},
                                        {"max_pause", SpecThrottle::kMaxPause}}}};
    out["max_tokens"] = a->max_tokens;
    out["prompt_len"] = a->prompt_len;
    out["reps"] = a->reps;
    out["metric"] = "tpot: decode phase (from the step that gave the last request its first token to the end) "
                    "time over the tokens each sequence emitted in it; wall clock (tpot_ms) and process CPU time "
                    "(tpot_cpu_ms); median over reps. Off and on runs alternate (off-on, on-off, ...).";
    if (const char* t = std::getenv("OMP_NUM_THREADS")) out["omp_num_threads"] = t;
    for (const char* v : {"VERBATIM_GRAPH_MULTI_ROW", "VERBATIM_GEMM", "VERBATIM_DECODE_FOLD_MIN_BATCH"})
      if (const char* e = std::getenv(v)) out["env"][v] = e;
    nlohmann::json cases = nlohmann::json::array();
    std::printf("spec-bench %s %s on %s, n-gram %d..%d, %d tokens, %d reps\n", a->model.c_str(), dtype_name(dt),
                be->device_name().c_str(), a->ngram_min, a->ngram_max, a->max_tokens, a->reps);
    bool all_identical = true;
    struct Case {
      int k;
      std::string workload;
      int batch;
    };
    std::vector<Case> todo;
    for (int k : a->ks)
      for (const std::string& w : a->workloads)
        for (int B : a->batches) todo.push_back({k, w, B});
    auto write_json = [&](bool complete) {
      out["cases"] = cases;
      out["bit_identical"] = all_identical;
      out["complete"] = complete;
      if (a->json_out.empty()) return;
      std::ofstream f(a->json_out);
      if (!f) throw Error("cannot write " + a->json_out);
      f << out.dump(2) << "\n";
    };
    write_json(todo.empty());
    for (const Case& cs : todo) {
      const int k = cs.k, B = cs.batch;
      const std::string& w = cs.workload;
      on.num_speculative_tokens = k;
      const auto reqs = workload(w, B, c.vocab_size, a->prompt_len, a->max_tokens);
      run_once(*be, off, {reqs[0]});  // warm-up (page faults, scratch buffers)
      std::vector<double> t_off, t_on, c_off, c_on, w_off, w_on;
      uint64_t drafted = 0, accepted = 0, steps_on = 0, steps_off = 0, tokens = 0;
      bool identical = true;
      for (int rep = 0; rep < a->reps; ++rep) {
        // The order alternates too, so whatever favours the first (or second) run of a pair
        // favours each mode equally often.
        RunResult r_off, r_on;
        if (rep % 2 == 0) {
          r_off = run_once(*be, off, reqs);
          r_on = run_once(*be, on, reqs);
        } else {
          r_on = run_once(*be, on, reqs);
          r_off = run_once(*be, off, reqs);
        }
        identical = identical && r_off.bits == r_on.bits;
        t_off.push_back(r_off.tpot_ms);
        t_on.push_back(r_on.tpot_ms);
        c_off.push_back(r_off.tpot_cpu_ms);
        c_on.push_back(r_on.tpot_cpu_ms);
        w_off.push_back(r_off.wall_ms);
        w_on.push_back(r_on.wall_ms);
        drafted += r_on.stats.spec_draft_tokens;
        accepted += r_on.stats.spec_accepted_tokens;
        steps_on += r_on.stats.steps;
        steps_off += r_off.stats.steps;
        tokens += r_on.stats.generation_tokens;
      }
      all_identical = all_identical && identical;
      const double m_off = median(t_off), m_on = median(t_on), mc_off = median(c_off), mc_on = median(c_on);
      const double acc = drafted ? double(accepted) / double(drafted) : 0.0;
      cases.push_back({{"workload", w}, {"batch", B}, {"k", k}, {"tpot_ms_off", m_off}, {"tpot_ms_on", m_on},
                       {"speedup", m_on > 0 ? m_off / m_on : 0.0}, {"tpot_cpu_ms_off", mc_off},
                       {"tpot_cpu_ms_on", mc_on}, {"speedup_cpu", mc_on > 0 ? mc_off / mc_on : 0.0},
                       {"tpot_ms_off_all", t_off}, {"tpot_ms_on_all", t_on}, {"tpot_cpu_ms_off_all", c_off},
                       {"tpot_cpu_ms_on_all", c_on},
                       {"wall_ms_off_median", median(w_off)}, {"wall_ms_on_median", median(w_on)},
                       {"draft_tokens", drafted}, {"accepted_tokens", accepted}, {"acceptance", acc},
                       {"tokens_per_step_on", steps_on ? double(tokens) / double(steps_on) : 0.0},
                       {"steps_off", steps_off}, {"steps_on", steps_on}, {"bit_identical", identical}});
      std::printf("K %d %-10s batch %2d: wall off %8.3f on %8.3f ms/token (%.2fx), cpu off %8.3f on %8.3f ms/token (%.2fx), "
                  "acceptance %.1f%% (%llu/%llu), %s\n",
                  k, w.c_str(), B, m_off, m_on, m_on > 0 ? m_off / m_on : 0.0, mc_off, mc_on, mc_on > 0 ? mc_off / mc_on : 0.0,
                  100 * acc,
                  static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(drafted),
                  identical ? "bit-identical" : "OUTPUTS DIFFER");
      std::fflush(stdout);
      write_json(cases.size() == todo.size());  // after every case: a run cut short keeps what it measured
    }
    return all_identical ? 0 : 1;
  };
});

}  // namespace
}  // namespace verbatim::cli
