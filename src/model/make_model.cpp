// make-model: random Qwen3 checkpoints in the Hugging Face layout.
#include "model/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/paths.h"
#include "model/safetensors.h"

namespace verbatim {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Counter-based normal numbers. Only IEEE basic operations (+ - * / sqrt, exact frexp/ldexp) are
// used, no libm log/cos, so the bits are the same on every machine and compiler, and each value
// depends only on (seed, tensor, element index), never on the thread that computes it.

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Natural log for x in (0, 1], to ~1 ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
// log m = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172, by its series (11 terms reach 1e-17).
double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double sum = 0.0;
  for (int k = 21; k >= 1; k -= 2) sum = sum * t2 + 1.0 / double(k);
  return double(e) * 0.69314718055994530942 + 2.0 * t * sum;
}

uint64_t tensor_key(uint64_t seed, uint64_t tensor) { return splitmix64(seed ^ splitmix64(tensor * 0x632BE59BD9B4E019ull + 1)); }

// Two independent N(0,1) values for pair `pair` of a tensor (Marsaglia's polar method; attempt k
// of the pair uses counter pair * 64 + k, so a rejection never shifts another pair's numbers).
void normal_pair(uint64_t key, uint64_t pair, double& z0, double& z1) {
  for (uint64_t k = 0; k < 64; ++k) {
    const uint64_t r = splitmix64(key + pair * 64 + k);
    const double u = double(int32_t(uint32_t(r >> 32))) * 0x1p-31;  // [-1, 1)
    const double v = double(int32_t(uint32_t(r))) * 0x1p-31;
    const double s = u * u + v * v;
    if (s >= 1.0 || s == 0.0) continue;
    const double f = std::sqrt(-2.0 * portable_log(s) / s);
    z0 = u * f;
    z1 = v * f;
    return;
  }
  z0 = z1 = 0.0;  // 64 rejections in a row: probability 0.215^64, never in practice
}

enum class Init { Normal, NormWeight };

struct PlannedTensor {
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  double std = 0.02;
};

// The fixed tensor order (also the RNG's tensor number): embed, layers 0..L-1, norm, lm_head.
std::vector<PlannedTensor> plan_tensors(const ModelConfig& c, double std) {
  const int64_t h = c.hidden_size, inter = c.intermediate_size, hd = c.head_dim;
  const int64_t q = int64_t(c.num_heads) * hd, kv = int64_t(c.num_kv_heads) * hd;
  std::vector<PlannedTensor> out;
  auto lin = [&](std::string n, int64_t r, int64_t k) { out.push_back({std::move(n), {r, k}, Init::Normal, std}); };
  auto norm = [&](std::string n, int64_t k) { out.push_back({std::move(n), {k}, Init::NormWeight, 0.2}); };
  lin("model.embed_tokens.weight", c.vocab_size, h);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    norm(p + "input_layernorm.weight", h);
    lin(p + "self_attn.q_proj.weight", q, h);
    lin(p + "self_attn.k_proj.weight", kv, h);
    lin(p + "self_attn.v_proj.weight", kv, h);
    lin(p + "self_attn.o_proj.weight", h, q);
    norm(p + "self_attn.q_norm.weight", hd);
    norm(p + "self_attn.k_norm.weight", hd);
    norm(p + "post_attention_layernorm.weight", h);
    lin(p + "mlp.gate_proj.weight", inter, h);
    lin(p + "mlp.up_proj.weight", inter, h);
    lin(p + "mlp.down_proj.weight", h, inter);
  }
  norm("model.norm.weight", h);
  if (!c.tie_word_embeddings) lin("lm_head.weight", c.vocab_size, h);
  return out;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Fills `out` (numel elements of dtype) with the tensor's values. Work is split by pairs across
// threads; each value is a function of its index only, so any split gives the same bytes.
void fill_tensor(const PlannedTensor& t, uint64_t seed, uint64_t tensor_index, DType dtype, int threads, uint8_t* out) {
  const int64_t n = numel(t.shape);
  const int64_t pairs = (n + 1) / 2;
  const uint64_t key = tensor_key(seed, tensor_index);
  auto store = [&](int64_t i, double z) {
    const float v = t.init == Init::NormWeight ? float(1.0 + t.std * z) : float(t.std * z);
    switch (dtype) {
      case DType::F32: std::memcpy(out + 4 * i, &v, 4); break;
      case DType::BF16: { uint16_t b = f32_to_bf16(v); std::memcpy(out + 2 * i, &b, 2); break; }
      case DType::F16: { uint16_t b = f32_to_f16(v); std::memcpy(out + 2 * i, &b, 2); break; }
    }
  };
  auto work = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      double z0, z1;
      normal_pair(key, uint64_t(p), z0, z1);
      store(2 * p, z0);
      if (2 * p + 1 < n) store(2 * p + 1, z1);
    }
  };
  const int64_t n_threads = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, pairs / 65536));
  if (n_threads == 1) return work(0, pairs);
  std::vector<std::thread> pool;
  for (int64_t k = 0; k < n_threads; ++k)
    pool.emplace_back(work, pairs * k / n_threads, pairs * (k + 1) / n_threads);
  for (std::thread& th : pool) th.join();
}

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot create");
  out << text;
  if (!out.flush()) throw Error(path.string() + ": write failed");
}

std::string generation_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = {151645, 151643};  // Qwen3's: <|im_end|>, <|endoftext|>
  j["pad_token_id"] = 151643;
  j["transformers_version"] = "5.17.0";
  return j.dump(2) + "\n";
}

void remove_old_weights(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const bool shard = n.rfind("model-", 0) == 0 && n.find("-of-") != std::string::npos &&
                       n.size() > 12 && n.substr(n.size() - 12) == ".safetensors";
    if (n == "model.safetensors" || n == "model.safetensors.index.json" || shard) fs::remove(e.path(), ec);
  }
}

}  // namespace

float random_normal(uint64_t seed, uint64_t tensor, uint64_t index) {
  double z0, z1;
  normal_pair(tensor_key(seed, tensor), index / 2, z0, z1);
  return float(index % 2 ? z1 : z0);
}

std::vector<std::string> known_archs() {
  return {"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-32b", "tiny"};
}

ModelConfig arch_config(const std::string& arch, DType dtype) {
  ModelConfig c;
  c.vocab_size = 151936;
  c.head_dim = 128;
  c.num_kv_heads = 8;
  c.rope_theta = 1e6;
  c.rms_norm_eps = 1e-6f;
  c.max_position_embeddings = 40960;
  c.tie_word_embeddings = true;
  c.eos_token_ids = {151645};
  c.bos_token_id = 151643;
  // HF's default 0.02 makes random Qwen3 shapes loop on one token within ~5 greedy steps
  // ("won won won"); 0.05 gives varied text for 12+ tokens (checked on the 0.6B shape).
  c.initializer_range = 0.05;
  c.dtype = dtype;
  auto shape = [&](int hidden, int inter, int layers, int heads) {
    c.hidden_size = hidden;
    c.intermediate_size = inter;
    c.num_layers = layers;
    c.num_heads = heads;
  };
  if (arch == "qwen3-0.6b") {
    shape(1024, 3072, 28, 16);
  } else if (arch == "qwen3-1.7b") {
    shape(2048, 6144, 28, 16);
  } else if (arch == "qwen3-4b") {
    shape(2560, 9728, 36, 32);
  } else if (arch == "qwen3-8b") {
    shape(4096, 12288, 36, 32);
    c.tie_word_embeddings = false;
  } else if (arch == "qwen3-32b") {  // Qwen/Qwen3-32B config.json: 64 q heads, 8 KV heads, untied
    shape(5120, 25600, 64, 64);
    c.tie_word_embeddings = false;
  } else if (arch == "tiny") {
    shape(128, 384, 4, 4);
    c.head_dim = 32;
    c.num_kv_heads = 2;
    c.max_position_embeddings = 4096;
    c.initializer_range = 0.1;  // like the reference fixtures: a tiny model needs larger weights to say anything
  } else {
    std::string all;
    for (const std::string& a : known_archs()) all += (all.empty() ? "" : ", ") + a;
    throw Error("unknown arch '" + arch + "' (choose one of: " + all + ")");
  }
  return c;
}

MakeModelResult make_model(const MakeModelOptions& opts) {
  if (opts.out_dir.empty()) throw Error("make-model: no output folder given");
  MakeModelResult res;
  res.config = arch_config(opts.arch, opts.dtype);
  if (opts.init_std > 0) res.config.initializer_range = opts.init_std;
  const ModelConfig& c = res.config;
  const fs::path out(opts.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out)) throw Error(opts.out_dir + ": cannot create the output folder" + (ec ? " (" + ec.message() + ")" : ""));

  // Tokenizer first: an explicit --tokenizer folder without one fails before any big write.
  fs::path tok = opts.tokenizer_dir.empty() ? fs::path(default_tokenizer_dir()) : fs::path(opts.tokenizer_dir);
  const bool have_tok = fs::is_regular_file(tok / "tokenizer.json");
  if (opts.copy_tokenizer && !have_tok) {
    if (!opts.tokenizer_dir.empty()) throw Error(opts.tokenizer_dir + ": no tokenizer.json in the --tokenizer folder");
    res.warning = "no tokenizer found at " + tok.string() + " (run scripts/deps.sh); wrote the model without tokenizer files";
  }

  const std::vector<PlannedTensor> plan = plan_tensors(c, c.initializer_range);
  const StDType st = to_st_dtype(opts.dtype);
  std::vector<TensorSpec> specs;
  for (const PlannedTensor& t : plan) {
    specs.push_back({t.name, st, t.shape});
    res.weight_bytes += specs.back().nbytes();
    res.num_params += uint64_t(numel(t.shape));
  }
  // HF's sharding: walk the tensors in model order, start a new shard when the next tensor would
  // push the current one past the limit.
  std::vector<std::vector<size_t>> shards(1);
  uint64_t shard_bytes = 0;
  if (res.weight_bytes > opts.max_shard_bytes) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const uint64_t n = specs[i].nbytes();
      if (!shards.back().empty() && shard_bytes + n > opts.max_shard_bytes) {
        shards.emplace_back();
        shard_bytes = 0;
      }
      shards.back().push_back(i);
      shard_bytes += n;
    }
  } else {
    for (size_t i = 0; i < specs.size(); ++i) shards[0].push_back(i);
  }

  const int threads = opts.threads > 0 ? opts.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  remove_old_weights(out);
  write_text_file(out / "config.json", c.to_json());
  write_text_file(out / "generation_config.json", generation_config_json(c));
  std::map<std::string, std::string> weight_map;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string file = "model.safetensors";
    if (shards.size() > 1) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
      file = buf;
    }
    std::vector<TensorSpec> local;
    for (size_t i : shards[s]) {
      local.push_back(specs[i]);
      weight_map[specs[i].name] = file;
    }
    write_safetensors((out / file).string(), local, [&](size_t li, uint8_t* buf) {
      const size_t gi = shards[s][li];
      fill_tensor(plan[gi], opts.seed, gi, opts.dtype, threads, buf);
    });
    res.weight_files.push_back(file);
  }
  if (shards.size() > 1) write_safetensors_index((out / "model.safetensors.index.json").string(), res.weight_bytes, weight_map);

  if (opts.copy_tokenizer && have_tok) {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      if (!fs::is_regular_file(tok / f)) continue;
      fs::copy_file(tok / f, out / f, fs::copy_options::overwrite_existing, ec);
      if (ec) throw Error((out / f).string() + ": cannot copy the tokenizer (" + ec.message() + ")");
    }
    res.tokenizer_copied = true;
  }
  return res;
}

}  // namespace verbatim
