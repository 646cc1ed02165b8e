// `verbatim generate`: JSON lines of /v1/completions bodies on stdin, one /v1/completions response
// per line on stdout, in input order. Every line is submitted before the engine runs, so the lines
// share batches; by the numeric contract each result is the same as if it ran alone.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/stdio_checks.h"
#include "cli/validators.h"
#include "core/error.h"
#include "server/job.h"
#include "server/runtime.h"

namespace verbatim::cli {
namespace {

using server::json;

struct GenerateArgs {
  std::string model;
  std::string dtype = "auto";
  std::string device = "cpu";
  std::string mode = "contract";           // cuda: contract | fast (checked in make_backend)
  double gpu_memory_utilization = 0.9;     // cuda: share of the device's memory
  int tensor_parallel_size = 1;            // cuda: GPUs (checked in make_backend)
  uint64_t seed = 0;
  int max_model_len = 0;
  int max_num_batched_tokens = 2048;
  std::string speculative = "none";  // speculative decoding: same bits, only speed
  int num_speculative_tokens = 3, ngram_min = 2, ngram_max = 4;
};

struct Line {
  std::optional<server::Job> job;
  json error;  // set when the line was rejected, or the engine failed one of its choices
};

int run_generate(const GenerateArgs& a) {
  server::RuntimeOptions ro;
  ro.model_dir = a.model;
  ro.device = a.device;
  ro.dtype = a.dtype;
  ro.backend.kernels = a.mode;
  ro.backend.gpu_memory_utilization = a.gpu_memory_utilization;
  ro.backend.tensor_parallel_size = a.tensor_parallel_size;
  ro.engine.seed = a.seed;
  ro.engine.max_model_len = a.max_model_len;
  ro.engine.max_num_batched_tokens = a.max_num_batched_tokens;
  ro.engine.max_waiting = 1 << 30;  // every line is queued up front
  ro.engine.speculative = a.speculative;
  ro.engine.num_speculative_tokens = a.num_speculative_tokens;
  ro.engine.ngram_min = a.ngram_min;
  ro.engine.ngram_max = a.ngram_max;
  server::Runtime rt = server::Runtime::load(ro);
  std::fprintf(stderr, "verbatim generate: %s\n", rt.describe().c_str());
  if (std::string w = rt.capacity_warning(); !w.empty()) std::fprintf(stderr, "verbatim generate: %s\n", w.c_str());

  std::vector<Line> lines;
  std::map<uint64_t, std::pair<size_t, size_t>> owner;  // engine id -> (line, choice)
  std::string text;
  while (std::getline(std::cin, text)) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    Line line;
    std::vector<uint64_t> added;
    try {
      server::request_json body = server::parse_body(text);
      line.job = server::Job::completion(server::parse_completion_request(body, rt.defaults), rt.limits);
      line.job->always_include_token_ids();
      for (size_t c = 0; c < line.job->choices().size(); ++c) {
        auto& ch = line.job->choices()[c];
        ch.engine_id = rt.engine->add(line.job->prompts()[ch.prompt].ids, line.job->params(ch));
        added.push_back(ch.engine_id);
        owner[ch.engine_id] = {lines.size(), c};
      }
    } catch (const InvalidRequest& e) {
      for (uint64_t id : added) rt.engine->abort(id);
      line.job.reset();
      line.error = server::error_json(400, e.what(), e.param());
    } catch (const QueueFull& e) {
      line.job.reset();
      line.error = server::error_json(503, e.what());
    }
    lines.push_back(std::move(line));
  }
  check_stdin_read("generate");

  size_t next_out = 0;
  bool failed = false;
  auto flush_ready = [&] {  // input order: a line goes out once it and every line before it are done
    for (; next_out < lines.size(); ++next_out) {
      Line& l = lines[next_out];
      if (l.job && !l.job->all_finished()) return;
      json out;
      if (l.job && l.error.is_null()) {
        server::ResponseMeta meta{"cmpl-" + std::to_string(next_out), rt.now(), rt.model_name(), rt.fingerprint};
        out = l.job->response(meta);
      } else {
        out = l.error;
        failed = true;
      }
      std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
      check_stdout_written("generate");
      l.job.reset();
    }
  };
  flush_ready();
  while (rt.engine->has_work()) {
    for (const RequestUpdate& u : rt.engine->step()) {
      auto it = owner.find(u.id);
      if (it == owner.end()) continue;
      Line& l = lines[it->second.first];
      if (!l.job) continue;
      auto& ch = l.job->choices()[it->second.second];
      ch.state.apply(u);
      // A failed request must not pass for a short answer (finish_reason "abort"): the line says
      // why, as the server's 500 does, and the exit status is 1.
      if (!u.error.empty() && l.error.is_null())
        l.error = server::error_json(500, "the engine failed this request: " + u.error);
      if (ch.state.needs_abort()) {  // a stop string ended it: free its KV now
        rt.engine->abort(ch.engine_id);
        ch.state.engine_done();
      }
    }
    flush_ready();
  }
  flush_ready();
  return failed ? 1 : 0;
}

Registrar reg(20, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand(
      "generate", "Read /v1/completions bodies as JSON lines on stdin; write one response per line");
  sub->add_option("--model", a->model, "Checkpoint folder (default: the embedded default model)");
  sub->add_option("--dtype", a->dtype, "auto|bfloat16|float16|float32")->capture_default_str();
  sub->add_option("--device", a->device, "cpu (or cuda, cuda:N in CUDA builds)")->capture_default_str();
  sub->add_option("--mode", a->mode, "contract | fast (cuda only: the contract off, to measure its cost)")
      ->capture_default_str();
  sub->add_option("--gpu-memory-utilization", a->gpu_memory_utilization,
                  "cuda: share of the device's memory for weights, KV cache and scratch, in (0, 1]")
      ->capture_default_str();
  sub->add_option("--tensor-parallel-size", a->tensor_parallel_size,
                  "cuda: GPUs from cuda:N on (1, 2, 4, 8), one thread each; the same bits at every size")
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed of requests that name none")->capture_default_str()->check(decimal_seed<uint64_t>());
  sub->add_option("--max-model-len", a->max_model_len, "Context length (default: the model's)")->check(at_least(1, 1 << 24));
  sub->add_option("--max-num-batched-tokens", a->max_num_batched_tokens, "Tokens per engine step")
      ->capture_default_str();
  sub->add_option("--speculative", a->speculative, "none | ngram: drafts copied from the sequence's own text")
      ->check(CLI::IsMember({"none", "ngram"}))
      ->capture_default_str();
  sub->add_option("--num-speculative-tokens", a->num_speculative_tokens, "Most drafts verified per step and sequence")
      ->check(at_least(1, 64))
      ->capture_default_str();
  sub->add_option("--ngram-min", a->ngram_min, "Shortest n-gram looked up")->check(at_least(1, 64))->capture_default_str();
  sub->add_option("--ngram-max", a->ngram_max, "Longest n-gram looked up")->check(at_least(1, 64))->capture_default_str();
  return [a] { return run_generate(*a); };
});

}  // namespace
}  // namespace verbatim::cli
