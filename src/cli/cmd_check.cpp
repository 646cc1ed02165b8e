// `verbatim check --url URL`: is this OpenAI-compatible server reproducible? The seed page's test,
// in one line. Exit 0: nothing differs; 1: something differs; 2: the check could not run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/validators.h"
#include "client/check.h"

namespace verbatim::cli {
namespace {

struct CheckArgs {
  std::string url, compare_url, prompts_file, model, api_key, json_file, record_file, against_file;
  int num_prompts = 0, max_tokens = 128, users = 64, retries = 4;
  double temperature = 0, timeout = 300;
  int64_t seed = 0;
  bool chat = false, ignore_eos = false, echo = false, quiet = false;
  CLI::App* app = nullptr;  // to tell which options were given (--seed; those --against overrides)
};

void write_json(const std::string& path, const client::json& j) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write " + path);
  out << j.dump(2, ' ', false, client::json::error_handler_t::replace) << "\n";
  if (!out) throw Error("cannot write " + path);
}

client::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open record " + path);
  try {
    return client::json::parse(in);
  } catch (const std::exception&) {
    throw Error("record " + path + " is not JSON");
  }
}

int run(const CheckArgs& a) {
  try {
    client::CheckOptions o;
    o.url = a.url;
    o.compare_url = a.compare_url;
    o.client.api_key = a.api_key;
    if (o.client.api_key.empty())
      if (const char* k = std::getenv("OPENAI_API_KEY")) o.client.api_key = k;
    o.client.timeout_s = a.timeout;
    o.client.retries = a.retries;
    o.client.tally = std::make_shared<client::RetryTally>();
    o.sampling.model = a.model;
    o.sampling.max_tokens = a.max_tokens;
    o.sampling.temperature = a.temperature;
    // A sampled run without a seed cannot repeat on any server: seed 0 unless told otherwise.
    if (a.app->count("--seed") > 0 || a.temperature > 0) o.sampling.seed = a.seed;
    o.sampling.chat = a.chat;
    o.sampling.ignore_eos = a.ignore_eos;
    o.sampling.echo = a.echo;
    o.users = a.users;
    if (!a.prompts_file.empty()) {
      o.prompts = client::load_prompts_jsonl(a.prompts_file);
      o.prompt_source = a.prompts_file;
    } else {
      o.prompts = client::builtin_prompts(a.chat);
    }
    if (!a.against_file.empty()) {
      const client::json rec = read_json(a.against_file);
      client::apply_record(rec, a.against_file, o);
      // The record's prompts (and its sampling, when it holds one) are what it is compared with:
      // say which given options lose.
      const bool has_sampling = rec.contains("sampling") && rec["sampling"].is_object();
      std::string ignored;
      for (const char* opt : {"--prompts", "--max-tokens", "--temperature", "--seed", "--chat", "--ignore-eos", "--echo"})
        if (a.app->count(opt) > 0 && (has_sampling || std::string(opt) == "--prompts"))
          ignored += std::string(ignored.empty() ? "" : ", ") + opt;
      if (!ignored.empty())
        std::fprintf(stderr, "note: --against uses the prompts and sampling of %s; ignored: %s\n", a.against_file.c_str(),
                     ignored.c_str());
    }
    if (a.num_prompts > 0 && static_cast<size_t>(a.num_prompts) < o.prompts.size()) o.prompts.resize(static_cast<size_t>(a.num_prompts));

    client::Progress progress(stderr, client::Progress::is_tty(stderr), a.quiet);
    client::CheckReport r = client::run_check(o, progress);
    std::printf("%s\n%s\n%s", r.header(o).c_str(), r.table().c_str(), r.summary().c_str());
    std::fflush(stdout);
    int code = r.any_difference() ? 1 : 0;
    if (!a.json_file.empty()) {
      client::json j = r.to_json(o);
      j["exit_code"] = code;
      write_json(a.json_file, j);
    }
    if (!a.record_file.empty()) write_json(a.record_file, client::make_record(o, r));
    return code;
  } catch (const Error& e) {
    std::fprintf(stderr, "verbatim check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verbatim check: unexpected failure: %s\n", e.what());
    return 2;
  }
}

Registrar reg(60, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand(
      "check", "Test whether an OpenAI-compatible server repeats its outputs token for token (any server)");
  sub->footer(
      "Runs the prompt set fresh after a cache reset, against the warm cache, after another reset, and from N users "
      "at once, then sends each differing prompt alone twice. Works with vLLM, SGLang, llama.cpp and verbatim.\n"
      "Exit 0: nothing differs; 1: something differs; 2: the server cannot be reached or answers badly.");
  sub->add_option("--url", a->url, "the server, e.g. http://127.0.0.1:8000")->required();
  sub->add_option("--compare-url", a->compare_url,
                  "a second server to compare with (cache on vs off, bf16 vs fp16, two versions, two GPUs)");
  sub->add_option("--prompts", a->prompts_file,
                  "JSONL prompts: strings, token-id lists, chat message lists, or {\"prompt\"|\"messages\": ...} "
                  "(default: the built-in set, a ~170-token system prompt and 72 questions)");
  sub->add_option("--num-prompts", a->num_prompts, "use only the first N prompts")->check(at_least(1));
  sub->add_option("--max-tokens", a->max_tokens, "tokens per answer")->capture_default_str()->check(at_least(1, 1 << 20));
  sub->add_option("--temperature", a->temperature, "0 is greedy; above 0 samples with --seed")
      ->capture_default_str()->check(finite_range(0.0, 100.0));
  sub->add_option("--seed", a->seed, "seed sent with every request (default 0 when sampling)")->check(decimal_seed<int64_t>());
  sub->add_flag("--chat", a->chat, "use /v1/chat/completions with enable_thinking off");
  sub->add_flag("--ignore-eos", a->ignore_eos, "send ignore_eos (vLLM's extension) so every answer is max-tokens long");
  sub->add_flag("--echo", a->echo,
                "send echo: true and compare every prompt token's logprob too, as loglikelihood evals "
                "(lm-evaluation-harness's multiple-choice tasks) read them; completions only");
  sub->add_option("--model", a->model, "model name (default: the first id of /v1/models)");
  sub->add_option("--api-key", a->api_key, "bearer key (default: $OPENAI_API_KEY)");
  sub->add_option("--users", a->users, "concurrent users for the batch run")->capture_default_str()->check(at_least(1, 4096));
  sub->add_option("--timeout", a->timeout, "seconds to wait for a whole answer before giving up")
      ->capture_default_str()->check(finite_range(0.1, 86400.0));
  sub->add_option("--retries", a->retries,
                  "times to send a request again that the server refused for now (HTTP 429 or 503), after its "
                  "Retry-After or 0.5, 1, 2, ... s; 0: the first refusal ends the check")
      ->capture_default_str()->check(at_least(0, 100));
  sub->add_option("--json", a->json_file, "write everything (runs, outputs, diffs, verdicts) to FILE")->check(writable_file());
  sub->add_option("--record", a->record_file, "save the fresh run's outputs and the server's fingerprint to FILE")
      ->check(writable_file());
  sub->add_option("--against", a->against_file, "compare a new run with a FILE saved by --record");
  sub->add_flag("--quiet", a->quiet, "no progress output");
  a->app = sub;
  return [a] { return run(*a); };
});

}  // namespace
}  // namespace verbatim::cli
