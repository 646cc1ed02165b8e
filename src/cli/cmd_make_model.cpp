// `verbatim make-model`: write a random-weight Qwen3 checkpoint folder (HF layout).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/error.h"
#include "core/hash.h"
#include "model/make_model.h"
#include "model/weights.h"

namespace verbatim::cli {
namespace {

struct Args {
  std::string arch;
  uint64_t seed = 0;
  std::string dtype = "bfloat16";
  std::string out;
  std::string tokenizer;
  uint64_t max_shard_bytes = 4ull << 30;
  double init_std = 0;
};

const Registrar reg(50, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("make-model", "Write a Qwen3 checkpoint with random weights (Hugging Face layout)");
  sub->add_option("--arch", a->arch, "qwen3-0.6b | qwen3-1.7b | qwen3-4b | qwen3-8b | qwen3-32b | tiny")->required();
  sub->add_option("--seed", a->seed, "Seed of the random weights (default 0)")->check(decimal_seed<uint64_t>());
  sub->add_option("--dtype", a->dtype, "bfloat16 | float16 | float32 (default bfloat16)");
  sub->add_option("--out", a->out, "Output folder (created; its old weight files are replaced)")->required();
  sub->add_option("--tokenizer", a->tokenizer, "Folder with tokenizer.json to copy (default: the installed Qwen3 tokenizer)");
  sub->add_option("--max-shard-bytes", a->max_shard_bytes, "Shard the weights past this many bytes (default 4 GiB)")
      ->check(at_least(1, 1LL << 50));
  // 0 would mean "the arch's default" below (MakeModelOptions::init_std), so it is refused, not taken.
  sub->add_option("--init-std", a->init_std, "Std of the random linear/embedding weights (default: 0.05, tiny 0.1)")
      ->check(finite_range(0.0, 1e3, /*low_open=*/true));
  return [a]() -> int {
    MakeModelOptions o;
    o.arch = a->arch;
    o.seed = a->seed;
    if (a->dtype != "bfloat16" && a->dtype != "float16" && a->dtype != "float32")
      throw Error("unknown --dtype '" + a->dtype + "' (choose one of: bfloat16, float16, float32)");
    o.dtype = parse_dtype(a->dtype);
    o.out_dir = a->out;
    o.tokenizer_dir = a->tokenizer;
    o.max_shard_bytes = a->max_shard_bytes;
    o.init_std = a->init_std;
    arch_config(o.arch, o.dtype);  // an unknown --arch fails here, before any file is touched
    const auto t0 = std::chrono::steady_clock::now();
    MakeModelResult r = make_model(o);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.warning.empty()) std::fprintf(stderr, "verbatim: warning: %s\n", r.warning.c_str());
    const uint64_t digest = ModelWeights::load(o.out_dir).digest();
    std::printf("wrote %s: %s, %s, seed %llu, %.1fM parameters, %.1f MB in %zu file(s), %.1f s; weights digest %s\n",
                o.out_dir.c_str(), o.arch.c_str(), dtype_name(o.dtype), static_cast<unsigned long long>(o.seed),
                double(r.num_params) / 1e6, double(r.weight_bytes) / 1e6, r.weight_files.size(), secs, hex64(digest).c_str());
    return 0;
  };
});

}  // namespace
}  // namespace verbatim::cli
