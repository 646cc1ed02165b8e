// `verbatim bench --url URL`: latency and throughput at 1, 8, 32, 64 users, optionally against a
// second server (--vs) in A, B, A order; the seed page's speed table, JSON and an SVG plot.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/validators.h"
#include "client/bench.h"

namespace verbatim::cli {
namespace {

struct BenchArgs {
  std::string url, vs, prompts_file, model, api_key, json_file, plot_file;
  std::vector<int> users = {1, 8, 32, 64};
  int max_tokens = 128, input_len = 0, num_prompts = 0, seeds = 2;
  double temperature = 0, timeout = 300;
  int64_t seed = 0;
  bool chat = false, ignore_eos = false, quiet = false;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write " + path);
  out << text;
  if (!out) throw Error("cannot write " + path);
}

int run(const BenchArgs& a) {
  try {
    client::BenchOptions o;
    o.url = a.url;
    o.vs_url = a.vs;
    o.client.api_key = a.api_key;
    if (o.client.api_key.empty())
      if (const char* k = std::getenv("OPENAI_API_KEY")) o.client.api_key = k;
    o.client.timeout_s = a.timeout;
    o.sampling.model = a.model;
    o.sampling.max_tokens = a.max_tokens;
    o.sampling.temperature = a.temperature;
    if (a.temperature > 0) o.sampling.seed = a.seed;
    o.sampling.chat = a.chat;
    o.sampling.ignore_eos = a.ignore_eos;
    o.users = a.users;
    o.input_len = a.input_len;
    o.num_prompts = a.num_prompts;
    o.seeds = a.seeds;
    if (a.input_len > 0 && !a.prompts_file.empty()) throw Error("--input-len and --prompts exclude each other");
    if (!a.prompts_file.empty()) {
      o.prompts = client::load_prompts_jsonl(a.prompts_file);
      o.prompt_source = a.prompts_file;
    } else if (a.input_len <= 0) {
      o.prompts = client::builtin_prompts(a.chat);
    }
    client::Progress progress(stderr, client::Progress::is_tty(stderr), a.quiet);
    client::BenchReport r = client::run_bench(o, progress);
    std::printf("%s\n%s", r.header(o).c_str(), r.table().c_str());
    std::fflush(stdout);
    if (!a.json_file.empty()) write_file(a.json_file, r.to_json(o).dump(2, ' ', false, client::json::error_handler_t::replace) + "\n");
    if (!a.plot_file.empty()) write_file(a.plot_file, r.svg());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "verbatim bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verbatim bench: unexpected failure: %s\n", e.what());
    return 2;
  }
}

Registrar reg(61, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure TPOT, ITL, TTFT and throughput of an OpenAI-compatible server at each number of users");
  sub->footer(
      "Streams every answer: median and p99 time per output token (first token excluded), inter-token latency, "
      "time to first token, output tok/s and requests/s. With --vs, runs go A, B, A and the table shows ratios.\n"
      "Exit 0 when every run completed; 2 when a server cannot be reached or answers badly.");
  sub->add_option("--url", a->url, "server A, e.g. http://127.0.0.1:8000")->required();
  sub->add_option("--vs", a->vs, "server B: runs go A, B, A and the table shows B against A");
  sub->add_option("--users", a->users, "concurrent users, comma-separated")->delimiter(',')->capture_default_str()
      ->check(at_least(1, 4096));
  sub->add_option("--max-tokens", a->max_tokens, "tokens per answer")->capture_default_str()->check(at_least(1, 1 << 20));
  sub->add_option("--input-len", a->input_len, "synthetic prompts of N token ids (ids 100..499) instead of text")
      ->check(at_least(1));
  sub->add_option("--prompts", a->prompts_file, "JSONL prompts (default: the built-in set)");
  sub->add_option("--num-prompts", a->num_prompts, "requests per run (default: max(16, 4 x users))")
      ->check(at_least(1));
  sub->add_option("--seeds", a->seeds, "runs per server and number of users, each in its own prompt order")
      ->capture_default_str()->check(at_least(1, 100));
  sub->add_option("--temperature", a->temperature, "0 is greedy")->capture_default_str()->check(finite_range(0.0, 100.0));
  sub->add_option("--seed", a->seed, "base sampling seed when --temperature > 0")->check(decimal_seed<int64_t>());
  sub->add_flag("--chat", a->chat, "use /v1/chat/completions with enable_thinking off");
  sub->add_flag("--ignore-eos", a->ignore_eos, "send ignore_eos so every answer is max-tokens long");
  sub->add_option("--model", a->model, "model name (default: the first id of /v1/models)");
  sub->add_option("--api-key", a->api_key, "bearer key (default: $OPENAI_API_KEY)");
  sub->add_option("--timeout", a->timeout, "seconds to wait for any answer or stream event")
      ->capture_default_str()->check(finite_range(0.1, 86400.0));
  sub->add_option("--json", a->json_file, "write every run's figures and samples to FILE")->check(writable_file());
  sub->add_option("--plot", a->plot_file, "write an SVG of TPOT and output tok/s against users to FILE.svg")
      ->check(writable_file());
  sub->add_flag("--quiet", a->quiet, "no progress output");
  return [a] { return run(*a); };
});

}  // namespace
}  // namespace verbatim::cli
