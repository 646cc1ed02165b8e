// config.json (+ generation_config.json) of a Qwen3ForCausalLM checkpoint, both the
// transformers-4 spelling (rope_theta, rope_scaling, torch_dtype) and the transformers-5 one
// (rope_parameters {rope_theta, rope_type}, dtype).
#include "model/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace verbatim {
namespace {

using nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON");
  if (!j.is_object()) throw Error(path + ": expected a JSON object at the top level");
  return j;
}

// Field readers: every failure names the file and the field.
struct Fields {
  const json& j;
  const std::string& file;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file + ": field '" + field + "' " + what);
  }
  bool has(const std::string& k) const { return j.contains(k) && !j.at(k).is_null(); }
  const json& need(const std::string& k) const {
    if (!j.contains(k)) fail(k, "is missing");
    if (j.at(k).is_null()) fail(k, "is null");
    return j.at(k);
  }
  int positive_int(const std::string& k) const { return positive_int_of(need(k), k); }
  int positive_int_of(const json& v, const std::string& k) const {
    if (!v.is_number_integer()) fail(k, "must be an integer, got " + std::string(v.type_name()));
    int64_t x = v.get<int64_t>();
    if (x <= 0 || x > std::numeric_limits<int32_t>::max()) fail(k, "must be a positive 32-bit integer, got " + v.dump());
    return int(x);
  }
  double positive_number(const std::string& k) const { return positive_number_of(need(k), k); }
  double positive_number_of(const json& v, const std::string& k) const {
    if (!v.is_number()) fail(k, "must be a number, got " + std::string(v.type_name()));
    double x = v.get<double>();
    if (!(x > 0) || !std::isfinite(x)) fail(k, "must be a positive number, got " + v.dump());
    return x;
  }
  bool boolean(const std::string& k, bool dflt) const {
    if (!has(k)) return dflt;
    if (!j.at(k).is_boolean()) fail(k, "must be true or false, got " + j.at(k).dump());
    return j.at(k).get<bool>();
  }
  // A token id field: an int, a list of ints, or null / absent (nothing).
  std::vector<int32_t> token_ids(const std::string& k) const {
    std::vector<int32_t> out;
    if (!has(k)) return out;
    const json& v = j.at(k);
    auto one = [&](const json& e) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail(k, "must be a non-negative integer or a list of them, got " + v.dump());
      out.push_back(int32_t(e.get<int64_t>()));
    };
    if (v.is_array()) {
      for (const json& e : v) one(e);
    } else {
      one(v);
    }
    return out;
  }
};

void read_rope(const Fields& f, ModelConfig& c) {
  // transformers 5: rope_parameters {rope_theta, rope_type}; transformers 4: rope_theta + rope_scaling.
  if (f.has("rope_parameters")) {
    const json& rp = f.j.at("rope_parameters");
    if (!rp.is_object()) f.fail("rope_parameters", "must be an object, got " + rp.dump());
    if (!rp.contains("rope_theta") || rp.at("rope_theta").is_null()) f.fail("rope_parameters.rope_theta", "is missing");
    c.rope_theta = f.positive_number_of(rp.at("rope_theta"), "rope_parameters.rope_theta");
    if (rp.contains("rope_type") && !rp.at("rope_type").is_null()) {
      const json& t = rp.at("rope_type");
      if (!t.is_string()) f.fail("rope_parameters.rope_type", "must be a string, got " + t.dump());
      if (t.get<std::string>() != "default")
        f.fail("rope_parameters.rope_type", "is '" + t.get<std::string>() + "': only 'default' RoPE is supported");
    }
  } else {
    if (!f.j.contains("rope_theta")) f.fail("rope_theta", "is missing (and there is no 'rope_parameters')");
    c.rope_theta = f.positive_number("rope_theta");
  }
  if (f.has("rope_scaling")) {
    const json& rs = f.j.at("rope_scaling");
    if (!rs.is_object()) f.fail("rope_scaling", "must be an object or null, got " + rs.dump());
    for (const char* key : {"rope_type", "type"}) {
      if (!rs.contains(key) || rs.at(key).is_null()) continue;
      const json& t = rs.at(key);
      if (!t.is_string() || t.get<std::string>() != "default")
        f.fail(std::string("rope_scaling.") + key, "is " + t.dump() + ": only 'default' RoPE (or null rope_scaling) is supported");
    }
  }
}

void read_dtype(const Fields& f, ModelConfig& c) {
  const char* key = f.has("dtype") ? "dtype" : f.has("torch_dtype") ? "torch_dtype" : nullptr;
  if (!key) f.fail("dtype", "is missing (neither 'dtype' nor 'torch_dtype' is set)");
  const json& v = f.j.at(key);
  if (!v.is_string()) f.fail(key, "must be a string, got " + v.dump());
  try {
    c.dtype = parse_dtype(v.get<std::string>());
  } catch (const Error&) {
    f.fail(key, "is '" + v.get<std::string>() + "': expected bfloat16, float16 or float32");
  }
}

void read_architecture(const Fields& f, ModelConfig& c) {
  const json& a = f.need("architectures");
  if (!a.is_array()) f.fail("architectures", "must be a list of strings, got " + a.dump());
  for (const json& e : a)
    if (e.is_string() && e.get<std::string>() == "Qwen3ForCausalLM") {
      c.architecture = "Qwen3ForCausalLM";
      return;
    }
  f.fail("architectures", "is " + a.dump() + ": unsupported architecture (only Qwen3ForCausalLM is supported)");
}

void check_unsupported_features(const Fields& f) {
  if (f.boolean("attention_bias", false)) f.fail("attention_bias", "is true: Qwen3 attention without bias is the only supported form");
  if (f.boolean("use_sliding_window", false)) f.fail("use_sliding_window", "is true: sliding-window attention is not supported");
  if (f.has("hidden_act")) {
    const json& v = f.j.at("hidden_act");
    if (!v.is_string() || v.get<std::string>() != "silu") f.fail("hidden_act", "is " + v.dump() + ": only 'silu' is supported");
  }
}

// The double whose shortest spelling is the float's shortest spelling (1e-6f -> 1e-06, not
// 9.99999997e-07), so config.json reads like HF's.
double float_as_written(float x) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

void append_unique(std::vector<int32_t>& out, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
}

}  // namespace

ModelConfig ModelConfig::load(const std::string& dir) {
  const std::string file = dir + "/config.json";
  const json j = read_json_file(file);
  const Fields f{j, file};
  ModelConfig c;
  read_architecture(f, c);
  c.hidden_size = f.positive_int("hidden_size");
  c.intermediate_size = f.positive_int("intermediate_size");
  c.num_layers = f.positive_int("num_hidden_layers");
  c.num_heads = f.positive_int("num_attention_heads");
  c.num_kv_heads = f.positive_int("num_key_value_heads");
  c.head_dim = f.has("head_dim") ? f.positive_int("head_dim") : c.hidden_size / c.num_heads;
  if (!f.has("head_dim") && c.hidden_size % c.num_heads != 0)
    f.fail("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  if (c.head_dim % 2 != 0) f.fail("head_dim", "must be even for RoPE, got " + std::to_string(c.head_dim));
  if (c.num_heads % c.num_kv_heads != 0) f.fail("num_key_value_heads", "must divide num_attention_heads");
  c.vocab_size = f.positive_int("vocab_size");
  c.max_position_embeddings = f.positive_int("max_position_embeddings");
  c.rms_norm_eps = float(f.positive_number("rms_norm_eps"));
  read_rope(f, c);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);  // HF Qwen3Config's default
  read_dtype(f, c);
  check_unsupported_features(f);
  if (f.has("initializer_range")) c.initializer_range = f.positive_number("initializer_range");
  std::vector<int32_t> bos = f.token_ids("bos_token_id");
  c.bos_token_id = bos.empty() ? -1 : bos.front();
  // End of sequence: config.json's ids first, then any further ones from generation_config.json
  // (HF generate stops on generation_config's list, which for Qwen3 is a superset).
  c.eos_token_ids = f.token_ids("eos_token_id");
  const std::string gen_file = dir + "/generation_config.json";
  if (std::filesystem::exists(gen_file)) {
    const json g = read_json_file(gen_file);
    const Fields gf{g, gen_file};
    append_unique(c.eos_token_ids, gf.token_ids("eos_token_id"));
    if (c.bos_token_id < 0) {
      std::vector<int32_t> gb = gf.token_ids("bos_token_id");
      if (!gb.empty()) c.bos_token_id = gb.front();
    }
  }
  return c;
}

std::string ModelConfig::to_json() const {
  json j = json::object();  // nlohmann's object keeps keys sorted, as HF's to_json_string does
  j["architectures"] = json::array({architecture});
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = bos_token_id >= 0 ? json(bos_token_id) : json(nullptr);
  j["dtype"] = dtype_name(dtype);
  if (eos_token_ids.empty())
    j["eos_token_id"] = nullptr;
  else if (eos_token_ids.size() == 1)
    j["eos_token_id"] = eos_token_ids.front();
  else
    j["eos_token_id"] = eos_token_ids;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["hidden_size"] = hidden_size;
  j["initializer_range"] = initializer_range;
  j["intermediate_size"] = intermediate_size;
  j["layer_types"] = std::vector<std::string>(size_t(num_layers), "full_attention");
  j["max_position_embeddings"] = max_position_embeddings;
  j["max_window_layers"] = num_layers;
  j["model_type"] = "qwen3";
  j["num_attention_heads"] = num_heads;
  j["num_hidden_layers"] = num_layers;
  j["num_key_value_heads"] = num_kv_heads;
  j["pad_token_id"] = nullptr;
  j["rms_norm_eps"] = float_as_written(rms_norm_eps);
  j["rope_parameters"] = {{"rope_theta", rope_theta}, {"rope_type", "default"}};
  j["sliding_window"] = nullptr;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["transformers_version"] = "5.17.0";
  j["use_cache"] = true;
  j["use_sliding_window"] = false;
  j["vocab_size"] = vocab_size;
  return j.dump(2) + "\n";
}

}  // namespace verbatim
