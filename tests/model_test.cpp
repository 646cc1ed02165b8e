// config.json parsing, the safetensors reader/writer, Qwen3 weight binding and their error paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <thread>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "model/config.h"
#include "model/default_model.h"
#include "model/make_model.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "support/paths.h"

namespace verbatim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Runs f, expects an Error, and returns its message (empty and a test failure otherwise).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected verbatim::Error, got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an Error, got none";
  return "";
}

// Every temporary folder of this binary, removed when the run ends (make-model writes ~40 MB each).
std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
std::string temp_dir(const std::string& tag) {
  temp_dirs().push_back(test::temp_dir(tag));
  return temp_dirs().back();
}
struct RemoveTempDirs : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    for (const std::string& d : temp_dirs()) fs::remove_all(d, ec);
  }
};
const auto* const remove_temp_dirs = ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

#define EXPECT_HAS(msg, part) EXPECT_NE(std::string(msg).find(part), std::string::npos) << "message: " << (msg)

json tied_config() { return json::parse(read_text(test::fixture("qwen3-tiny-tied/config.json"))); }

std::string dir_with_config(const std::string& tag, const json& cfg) {
  std::string d = temp_dir(tag);
  write_text(d + "/config.json", cfg.dump(2));
  return d;
}

// ---------------------------------------------------------------------------------------------
// config.json

TEST(ModelConfig, ReadsTransformers5FixtureTied) {
  ModelConfig c = ModelConfig::load(test::fixture("qwen3-tiny-tied"));
  EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);  // q width 128 != hidden 64
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_TRUE(c.eos_token_ids.empty());  // null in config.json, absent in generation_config.json
  EXPECT_EQ(c.bos_token_id, -1);
}

TEST(ModelConfig, ReadsTransformers5FixtureUntied) {
  ModelConfig c = ModelConfig::load(test::fixture("qwen3-tiny-untied"));
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 1024);
  EXPECT_EQ(c.rope_theta, 1e4);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ModelConfig, ReadsTransformers4Spelling) {
  json j = tied_config();
  j.erase("rope_parameters");
  j.erase("dtype");
  j.erase("head_dim");  // then hidden / heads = 16
  j["rope_theta"] = 5e5;
  j["rope_scaling"] = nullptr;
  j["torch_dtype"] = "float16";
  j["eos_token_id"] = json::array({7, 9});
  j["bos_token_id"] = 3;
  ModelConfig c = ModelConfig::load(dir_with_config("cfg-tf4", j));
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.dtype, DType::F16);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(c.bos_token_id, 3);

  j["rope_scaling"] = {{"rope_type", "default"}};  // explicit default scaling is fine too
  EXPECT_EQ(ModelConfig::load(dir_with_config("cfg-tf4b", j)).rope_theta, 5e5);
}

TEST(ModelConfig, EosFromConfigThenGenerationConfig) {
  json j = tied_config();
  j["eos_token_id"] = 151645;
  std::string d = dir_with_config("cfg-eos", j);
  write_text(d + "/generation_config.json", R"({"eos_token_id": [151645, 151643], "bos_token_id": 151643})");
  ModelConfig c = ModelConfig::load(d);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(c.bos_token_id, 151643);
  write_text(d + "/generation_config.json", R"({"eos_token_id": "x"})");
  std::string msg = error_of([&] { ModelConfig::load(d); });
  EXPECT_HAS(msg, d + "/generation_config.json: field 'eos_token_id'");
}

TEST(ModelConfig, UnsupportedRopeIsAnError) {
  json j = tied_config();
  j["rope_parameters"]["rope_type"] = "yarn";
  std::string d = dir_with_config("cfg-rope5", j);
  std::string msg = error_of([&] { ModelConfig::load(d); });
  EXPECT_HAS(msg, d + "/config.json: field 'rope_parameters.rope_type'");
  EXPECT_HAS(msg, "yarn");

  j = tied_config();
  j.erase("rope_parameters");
  j["rope_theta"] = 1e6;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  d = dir_with_config("cfg-rope4", j);
  msg = error_of([&] { ModelConfig::load(d); });
  EXPECT_HAS(msg, d + "/config.json: field 'rope_scaling.type'");
  EXPECT_HAS(msg, "linear");
}

TEST(ModelConfig, UnsupportedArchitectureNamesIt) {
  json j = tied_config();
  j["architectures"] = {"LlamaForCausalLM"};
  std::string d = dir_with_config("cfg-arch", j);
  std::string msg = error_of([&] { ModelConfig::load(d); });
  EXPECT_HAS(msg, d + "/config.json: field 'architectures'");
  EXPECT_HAS(msg, "LlamaForCausalLM");
  EXPECT_HAS(msg, "Qwen3ForCausalLM");
}

TEST(ModelConfig, MissingAndIllTypedFieldsNameFileAndField) {
  struct Case {
    const char* field;
    json value;  // null: erase the field
    const char* expect;
  };
  const Case cases[] = {
      {"hidden_size", nullptr, "field 'hidden_size' is missing"},
      {"hidden_size", "64", "field 'hidden_size' must be an integer"},
      {"num_hidden_layers", -1, "field 'num_hidden_layers' must be a positive"},
      {"num_key_value_heads", 3, "field 'num_key_value_heads' must divide"},
      {"vocab_size", 1.5, "field 'vocab_size' must be an integer"},
      {"rms_norm_eps", "tiny", "field 'rms_norm_eps' must be a number"},
      {"dtype", "int8", "field 'dtype' is 'int8'"},
      {"dtype", nullptr, "field 'dtype' is missing"},
      {"tie_word_embeddings", "yes", "field 'tie_word_embeddings' must be true or false"},
      {"rope_parameters", nullptr, "field 'rope_theta' is missing"},
      {"architectures", nullptr, "field 'architectures' is missing"},
      {"architectures", "Qwen3ForCausalLM", "field 'architectures' must be a list"},
      {"eos_token_id", -5, "field 'eos_token_id' must be a non-negative integer"},
      {"head_dim", 31, "field 'head_dim' must be even"},
      {"use_sliding_window", true, "field 'use_sliding_window' is true"},
  };
  for (const Case& k : cases) {
    json j = tied_config();
    if (k.value.is_null())
      j.erase(k.field);
    else
      j[k.field] = k.value;
    std::string d = dir_with_config("cfg-bad", j);
    std::string msg = error_of([&] { ModelConfig::load(d); });
    EXPECT_HAS(msg, d + "/config.json: " + k.expect);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ModelConfig, MissingOrBrokenFile) {
  std::string d = temp_dir("cfg-none");
  EXPECT_HAS(error_of([&] { ModelConfig::load(d); }), d + "/config.json: cannot open");
  write_text(d + "/config.json", "{ not json");
  EXPECT_HAS(error_of([&] { ModelConfig::load(d); }), d + "/config.json: not valid JSON");
}

TEST(ModelConfig, ToJsonRoundTrips) {
  ModelConfig c = ModelConfig::load(test::fixture("qwen3-tiny-untied"));
  c.eos_token_ids = {151645, 151643};
  c.bos_token_id = 151643;
  c.dtype = DType::F16;
  std::string d = temp_dir("cfg-rt");
  write_text(d + "/config.json", c.to_json());
  ModelConfig r = ModelConfig::load(d);
  EXPECT_EQ(r.hidden_size, c.hidden_size);
  EXPECT_EQ(r.intermediate_size, c.intermediate_size);
  EXPECT_EQ(r.num_layers, c.num_layers);
  EXPECT_EQ(r.num_heads, c.num_heads);
  EXPECT_EQ(r.num_kv_heads, c.num_kv_heads);
  EXPECT_EQ(r.head_dim, c.head_dim);
  EXPECT_EQ(r.vocab_size, c.vocab_size);
  EXPECT_EQ(r.rope_theta, c.rope_theta);
  EXPECT_EQ(r.rms_norm_eps, c.rms_norm_eps);
  EXPECT_EQ(r.tie_word_embeddings, c.tie_word_embeddings);
  EXPECT_EQ(r.dtype, DType::F16);
  EXPECT_EQ(r.eos_token_ids, c.eos_token_ids);
  EXPECT_EQ(r.bos_token_id, c.bos_token_id);
  json j = json::parse(read_text(d + "/config.json"));
  EXPECT_EQ(j["rms_norm_eps"].dump(), "1e-06");  // written like HF, not 9.99999997e-07
  EXPECT_EQ(j["rope_parameters"]["rope_type"], "default");
  EXPECT_EQ(j["dtype"], "float16");
}

// ---------------------------------------------------------------------------------------------
// safetensors

std::vector<uint8_t> bytes_of(const TensorInfo& t) { return std::vector<uint8_t>(t.data, t.data + t.nbytes); }

TEST(Safetensors, WriterReproducesHFFileByteForByte) {
  for (const char* fx : {"qwen3-tiny-tied/model.safetensors", "qwen3-tiny-untied/model.safetensors",
                         "qwen3-tiny-untied/golden_logits.safetensors"}) {
    const std::string src = test::fixture(fx);
    SafetensorsFile f(src);
    std::vector<TensorData> all;
    for (const TensorInfo& t : f.tensors()) all.push_back({{t.name, t.dtype, t.shape}, bytes_of(t)});
    std::string out = temp_dir("st-hf") + "/copy.safetensors";
    if (f.metadata().empty()) {
      std::vector<TensorSpec> specs;
      for (auto& t : all) specs.push_back(t.spec);
      write_safetensors(out, specs, [&](size_t i, uint8_t* o) { std::memcpy(o, all[i].bytes.data(), all[i].bytes.size()); }, {});
    } else {
      write_safetensors(out, all);
    }
    EXPECT_EQ(read_text(out), read_text(src)) << fx;
  }
}

TEST(Safetensors, RoundTripAllDtypes) {
  std::vector<TensorData> ts;
  auto add = [&](std::string name, StDType dt, std::vector<int64_t> shape) {
    TensorSpec s{name, dt, shape};
    std::vector<uint8_t> b(s.nbytes());
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 31 + name.size());
    ts.push_back({s, b});
  };
  add("b.f16", StDType::F16, {3, 5});
  add("a.bf16", StDType::BF16, {7});
  add("c.f32", StDType::F32, {2, 3, 4});
  add("d.i32", StDType::I32, {5});
  add("e.i64", StDType::I64, {1, 3});
  add("z.empty", StDType::F32, {0, 4});
  std::string path = temp_dir("st-rt") + "/x.safetensors";
  write_safetensors(path, ts);
  const std::string raw = read_text(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.substr(8, 31), R"({"__metadata__":{"format":"pt"})");
  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), ts.size());
  // File order: safetensors' dtype rank (I64, F32, I32, BF16, F16) then name.
  std::vector<std::string> order;
  for (const TensorInfo& t : f.tensors()) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"e.i64", "c.f32", "z.empty", "d.i32", "a.bf16", "b.f16"}));
  for (const TensorData& t : ts) {
    const TensorInfo& r = f.get(t.spec.name);
    EXPECT_EQ(r.dtype, t.spec.dtype);
    EXPECT_EQ(r.shape, t.spec.shape);
    EXPECT_EQ(bytes_of(r), t.bytes) << t.spec.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r.data) % st_dtype_size(r.dtype), 0u);
  }
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_HAS(error_of([&] { f.get("nope"); }), path + ": tensor 'nope' is missing");
}

// A file with a hand-written header, for malformed cases.
void write_raw(const std::string& path, uint64_t header_len, const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char(header_len >> (8 * i));
  s += header;
  s += std::string(data_bytes, '\x01');
  write_text(path, s);
}

TEST(Safetensors, MalformedFilesAreErrorsNamingFileAndTensor) {
  const std::string d = temp_dir("st-bad");
  const std::string p = d + "/bad.safetensors";
  auto open_error = [&] { return error_of([&] { SafetensorsFile f(p); }); };
  auto hdr = [](const std::string& body) { return std::string("{") + body + "}"; };

  write_text(p, "abc");
  EXPECT_HAS(open_error(), p + ": truncated safetensors file");

  std::string h = hdr(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})");
  write_raw(p, h.size() + 100, h, 8);  // claims more header than there is
  EXPECT_HAS(open_error(), p + ": truncated safetensors file (header length");

  write_raw(p, (200ull << 20), h, 8);  // > 100 MB header
  EXPECT_HAS(open_error(), "exceeds the 104857600-byte limit");

  write_raw(p, h.size(), h, 4);  // data cut short
  std::string msg = open_error();
  EXPECT_HAS(msg, p + ": tensor 'w': data_offsets [0,8] run past the end of the file");

  h = hdr(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]})");
  write_raw(p, h.size(), h, 12);
  msg = open_error();
  EXPECT_HAS(msg, p + ": tensor 'v' overlaps tensor 'w'");

  h = hdr(R"("w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})");
  write_raw(p, h.size(), h, 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': shape [3] of F32 needs 12 bytes");

  h = hdr(R"("w":{"dtype":"U8","shape":[8],"data_offsets":[0,8]})");
  write_raw(p, h.size(), h, 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': unsupported dtype U8");

  h = hdr(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})");
  write_raw(p, h.size(), h, 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': data_offsets [8,0] end before they begin");

  h = hdr(R"("w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})");
  write_raw(p, h.size(), h, 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': bad shape");

  h = hdr(R"("w":{"dtype":"F32","shape":[4611686018427387904, 4],"data_offsets":[0,8]})");
  write_raw(p, h.size(), h, 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': shape");

  h = "{\"w\": [1,2";
  write_raw(p, h.size(), h, 0);
  EXPECT_HAS(open_error(), p + ": header is not valid JSON");

  h = hdr(R"("w":{"dtype":"F32","shape":[1],"data_offsets":[2,6]})");
  write_raw(p, h.size() + (8 - h.size() % 8) % 8, h + std::string((8 - h.size() % 8) % 8, ' '), 8);
  EXPECT_HAS(open_error(), p + ": tensor 'w': data is not aligned");

  EXPECT_HAS(error_of([&] { SafetensorsFile f(d + "/absent.safetensors"); }), d + "/absent.safetensors: cannot open");
}

// ---------------------------------------------------------------------------------------------
// Qwen3 weights

TEST(ModelWeights, LoadsTiedFixture) {
  ModelWeights w = ModelWeights::load(test::fixture("qwen3-tiny-tied"));
  EXPECT_EQ(w.embed.rows, 512);
  EXPECT_EQ(w.embed.cols, 64);
  EXPECT_EQ(w.embed.dtype, DType::BF16);
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.layers[1].q_proj.rows, 128);
  EXPECT_EQ(w.layers[1].q_proj.cols, 64);
  EXPECT_EQ(w.layers[1].k_proj.rows, 64);
  EXPECT_EQ(w.layers[1].o_proj.rows, 64);
  EXPECT_EQ(w.layers[1].o_proj.cols, 128);
  EXPECT_EQ(w.layers[1].q_norm.rows, 1);
  EXPECT_EQ(w.layers[1].q_norm.cols, 32);
  EXPECT_EQ(w.layers[0].down_proj.cols, 160);
  EXPECT_EQ(w.layers[0].gate_proj.name, "model.layers.0.mlp.gate_proj.weight");
  EXPECT_EQ(w.final_norm.cols, 64);
  EXPECT_EQ(w.lm_head.data, w.embed.data);  // tied
  EXPECT_EQ(w.tensors().size(), 1u + 2 * 11 + 1);
  // The mapping holds the file's bytes: the first embedding value read through the header.
  SafetensorsFile f(test::fixture("qwen3-tiny-tied/model.safetensors"));
  EXPECT_EQ(std::memcmp(w.embed.data, f.get("model.embed_tokens.weight").data, 512 * 64 * 2), 0);
  // Norm weights are 1 + 0.2 N(0,1) in the reference: near 1, not all equal.
  const uint16_t* n = static_cast<const uint16_t*>(w.final_norm.data);
  EXPECT_GT(bf16_to_f32(n[0]), 0.0f);
  EXPECT_NE(n[0], n[1]);
}

TEST(ModelWeights, LoadsUntiedFixture) {
  ModelWeights w = ModelWeights::load(test::fixture("qwen3-tiny-untied"));
  EXPECT_EQ(w.layers.size(), 3u);
  EXPECT_EQ(w.lm_head.rows, 1024);
  EXPECT_EQ(w.lm_head.cols, 128);
  EXPECT_EQ(w.lm_head.name, "lm_head.weight");
  EXPECT_NE(w.lm_head.data, w.embed.data);
  EXPECT_EQ(w.layers[2].q_proj.rows, 128);
  EXPECT_EQ(w.layers[2].k_proj.rows, 64);
  EXPECT_EQ(w.tensors().size(), 1u + 3 * 11 + 1 + 1);
}

TEST(ModelWeights, DigestDependsOnEveryByte) {
  const uint64_t tied = ModelWeights::load(test::fixture("qwen3-tiny-tied")).digest();
  EXPECT_EQ(tied, ModelWeights::load(test::fixture("qwen3-tiny-tied")).digest());
  EXPECT_NE(tied, ModelWeights::load(test::fixture("qwen3-tiny-untied")).digest());
  // Flip one bit of the last tensor: a different digest.
  std::string d = temp_dir("digest");
  fs::copy_file(test::fixture("qwen3-tiny-tied/config.json"), d + "/config.json");
  std::string raw = read_text(test::fixture("qwen3-tiny-tied/model.safetensors"));
  raw[raw.size() - 1] ^= 1;
  write_text(d + "/model.safetensors", raw);
  EXPECT_NE(ModelWeights::load(d).digest(), tied);
}

// A copy of a fixture checkpoint with its tensors edited by `edit` before being written back.
std::string edited_fixture(const std::string& tag, const std::string& fx,
                           const std::function<void(std::vector<TensorData>&)>& edit) {
  std::string d = temp_dir(tag);
  fs::copy_file(test::fixture(fx + "/config.json"), d + "/config.json");
  SafetensorsFile f(test::fixture(fx + "/model.safetensors"));
  std::vector<TensorData> all;
  for (const TensorInfo& t : f.tensors()) all.push_back({{t.name, t.dtype, t.shape}, bytes_of(t)});
  edit(all);
  write_safetensors(d + "/model.safetensors", all);
  return d;
}

TensorData& find_in(std::vector<TensorData>& all, const std::string& name) {
  for (TensorData& t : all)
    if (t.spec.name == name) return t;
  throw std::runtime_error("no " + name);
}

TEST(ModelWeights, BadCheckpointsAreErrorsNamingFileAndTensor) {
  const std::string up = "model.layers.1.mlp.up_proj.weight";
  std::string d = edited_fixture("w-missing", "qwen3-tiny-tied", [&](auto& all) {
    std::erase_if(all, [&](const TensorData& t) { return t.spec.name == up; });
  });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), d + "/model.safetensors: tensor '" + up + "' is missing");

  d = edited_fixture("w-shape", "qwen3-tiny-tied", [&](auto& all) { find_in(all, up).spec.shape = {64, 160}; });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }),
             d + "/model.safetensors: tensor '" + up + "' has shape [64, 160], expected [160, 64]");

  const std::string qn = "model.layers.0.self_attn.q_norm.weight";
  d = edited_fixture("w-rank", "qwen3-tiny-tied", [&](auto& all) { find_in(all, qn).spec.shape = {1, 32}; });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), "tensor '" + qn + "' has shape [1, 32], expected [32]");

  d = edited_fixture("w-dtype", "qwen3-tiny-tied", [&](auto& all) {
    TensorData& t = find_in(all, qn);
    t.spec.dtype = StDType::F32;
    t.spec.shape = {16};  // same bytes, F32
  });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }),
             d + "/model.safetensors: tensor '" + qn + "' is F32 but config.json says dtype bfloat16");

  d = edited_fixture("w-i32", "qwen3-tiny-tied", [&](auto& all) {
    TensorData& t = find_in(all, qn);
    t.spec.dtype = StDType::I32;
    t.spec.shape = {16};
  });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), "tensor '" + qn + "' has unsupported dtype I32");

  d = edited_fixture("w-lmhead", "qwen3-tiny-untied", [&](auto& all) {
    std::erase_if(all, [&](const TensorData& t) { return t.spec.name == "lm_head.weight"; });
  });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), d + "/model.safetensors: tensor 'lm_head.weight' is missing");

  // A tensor the model would not read: config.json and the weights disagree, so refused (vLLM too).
  d = edited_fixture("w-extra", "qwen3-tiny-tied", [&](auto& all) {
    TensorData extra = find_in(all, qn);
    extra.spec.name = "model.layers.0.self_attn.q_scale.weight";
    all.push_back(extra);
  });
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }),
             d + "/model.safetensors: tensor 'model.layers.0.self_attn.q_scale.weight' is not part of the model config.json describes");
  {  // num_hidden_layers lowered below the checkpoint's layers: the last layer's tensors are left over
    d = edited_fixture("w-fewer-layers", "qwen3-tiny-tied", [](auto&) {});
    json cfg = tied_config();
    const int layers = cfg["num_hidden_layers"];
    cfg["num_hidden_layers"] = layers - 1;
    write_text(d + "/config.json", cfg.dump());
    EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), "tensor 'model.layers." + std::to_string(layers - 1) + ".");
    // ... and raised far past them: the first missing tensor, not an allocation of 10^8 layers.
    cfg["num_hidden_layers"] = 100000000;
    write_text(d + "/config.json", cfg.dump());
    EXPECT_HAS(error_of([&] { ModelWeights::load(d); }),
               "tensor 'model.layers." + std::to_string(layers) + ".input_layernorm.weight' is missing");
  }
  // The extras HF and vLLM skip load: a tied model's lm_head.weight, rotary buffers, an extra bias.
  d = edited_fixture("w-harmless", "qwen3-tiny-tied", [&](auto& all) {
    TensorData lm = find_in(all, "model.embed_tokens.weight");
    lm.spec.name = "lm_head.weight";
    all.push_back(lm);
    for (const char* name : {"model.layers.0.self_attn.rotary_emb.inv_freq", "model.rotary_emb.cos_cached",
                             "model.layers.1.self_attn.q_proj.bias"}) {
      TensorData extra = find_in(all, qn);
      extra.spec.name = name;
      all.push_back(extra);
    }
  });
  EXPECT_EQ(ModelWeights::load(d).digest(), ModelWeights::load(test::fixture("qwen3-tiny-tied")).digest());

  // Truncated: every cut point gives an Error, never a crash.
  std::string raw = read_text(test::fixture("qwen3-tiny-tied/model.safetensors"));
  d = temp_dir("w-trunc");
  fs::copy_file(test::fixture("qwen3-tiny-tied/config.json"), d + "/config.json");
  for (size_t cut : {size_t(0), size_t(5), size_t(8), size_t(100), size_t(2496), raw.size() / 2, raw.size() - 1}) {
    write_text(d + "/model.safetensors", raw.substr(0, cut));
    std::string msg = error_of([&] { ModelWeights::load(d); });
    EXPECT_HAS(msg, d + "/model.safetensors: ");
    if (cut > 2496) {
      EXPECT_HAS(msg, "run past the end of the file");
    }
  }

  d = edited_fixture("w-arch", "qwen3-tiny-tied", [](auto&) {});
  json cfg = tied_config();
  cfg["architectures"] = {"MistralForCausalLM"};
  write_text(d + "/config.json", cfg.dump());
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), "MistralForCausalLM");

  d = temp_dir("w-empty");
  fs::copy_file(test::fixture("qwen3-tiny-tied/config.json"), d + "/config.json");
  EXPECT_HAS(error_of([&] { ModelWeights::load(d); }), d + ": no model.safetensors or model.safetensors.index.json");
  EXPECT_HAS(error_of([&] { ModelWeights::load(d + "/nowhere"); }), d + "/nowhere");
}

// A sharded copy of the tied fixture: tensors split over two shards by the index.
std::string sharded_fixture(const std::string& tag, std::map<std::string, std::string>* weight_map_out = nullptr) {
  std::string d = temp_dir(tag);
  fs::copy_file(test::fixture("qwen3-tiny-tied/config.json"), d + "/config.json");
  SafetensorsFile f(test::fixture("qwen3-tiny-tied/model.safetensors"));
  std::vector<TensorData> a, b;
  std::map<std::string, std::string> wm;
  uint64_t total = 0;
  for (const TensorInfo& t : f.tensors()) {
    bool first = t.name.find("layers.1.") == std::string::npos;
    (first ? a : b).push_back({{t.name, t.dtype, t.shape}, bytes_of(t)});
    wm[t.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    total += t.nbytes;
  }
  write_safetensors(d + "/model-00001-of-00002.safetensors", a);
  write_safetensors(d + "/model-00002-of-00002.safetensors", b);
  write_safetensors_index(d + "/model.safetensors.index.json", total, wm);
  if (weight_map_out) *weight_map_out = wm;
  return d;
}

TEST(ModelWeights, ShardedEqualsSingleFile) {
  std::string d = sharded_fixture("w-shard");
  auto ck = Checkpoint::open(d);
  EXPECT_TRUE(ck->sharded());
  EXPECT_EQ(ck->file_for("model.layers.1.mlp.up_proj.weight"), fs::canonical(d + "/model-00002-of-00002.safetensors").string());
  ModelWeights s = ModelWeights::load(d);
  ModelWeights u = ModelWeights::load(test::fixture("qwen3-tiny-tied"));
  EXPECT_EQ(s.digest(), u.digest());
  auto ts = s.tensors(), tu = u.tensors();
  ASSERT_EQ(ts.size(), tu.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(ts[i]->name, tu[i]->name);
    EXPECT_EQ(std::memcmp(ts[i]->data, tu[i]->data, size_t(ts[i]->rows * ts[i]->cols) * 2), 0) << ts[i]->name;
  }
}

TEST(ModelWeights, IndexMayNotLeaveTheFolder) {
  std::map<std::string, std::string> wm;
  std::string d = sharded_fixture("w-escape", &wm);
  const std::string victim = "model.norm.weight";
  auto with_shard = [&](const std::string& shard) {
    auto m = wm;
    m[victim] = shard;
    write_safetensors_index(d + "/model.safetensors.index.json", 0, m);
    return error_of([&] { ModelWeights::load(d); });
  };
  const std::string index = d + "/model.safetensors.index.json";
  std::string msg = with_shard("../model-00001-of-00002.safetensors");
  EXPECT_HAS(msg, index + ": tensor '" + victim + "'");
  EXPECT_HAS(msg, "must not contain '..'");
  msg = with_shard(d + "/model-00001-of-00002.safetensors");
  EXPECT_HAS(msg, index + ": tensor '" + victim + "'");
  EXPECT_HAS(msg, "relative path");
  // A symlink inside the folder that points outside it.
  std::string outside = temp_dir("w-escape-outside");
  fs::copy_file(d + "/model-00001-of-00002.safetensors", outside + "/stolen.safetensors");
  fs::create_symlink(outside + "/stolen.safetensors", d + "/link.safetensors");
  msg = with_shard("link.safetensors");
  EXPECT_HAS(msg, index + ": tensor '" + victim + "' shard 'link.safetensors'");
  EXPECT_HAS(msg, "outside the checkpoint folder");
  msg = with_shard("absent.safetensors");
  EXPECT_HAS(msg, index + ": tensor '" + victim + "' shard 'absent.safetensors'");
  // A name from the file with control bytes is quoted escaped: the message stays one line.
  msg = with_shard("absent\n\x01.safetensors");
  EXPECT_HAS(msg, "shard 'absent\\n\\x01.safetensors'");
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // The index names a tensor its shard lacks.
  msg = with_shard("model-00002-of-00002.safetensors");
  EXPECT_HAS(msg, "model-00002-of-00002.safetensors: tensor '" + victim + "' is missing");
  // A symlink that stays inside the folder is fine.
  fs::create_symlink(d + "/model-00001-of-00002.safetensors", d + "/inside.safetensors");
  auto m = wm;
  m[victim] = "inside.safetensors";
  write_safetensors_index(index, 0, m);
  EXPECT_EQ(ModelWeights::load(d).final_norm.cols, 64);
}

// ---------------------------------------------------------------------------------------------
// make-model

MakeModelResult make(const std::string& dir, const std::string& arch, uint64_t seed, DType dt = DType::BF16,
                     int threads = 0, uint64_t shard = 4ull << 30) {
  MakeModelOptions o;
  o.arch = arch;
  o.seed = seed;
  o.dtype = dt;
  o.out_dir = dir;
  o.copy_tokenizer = false;
  o.threads = threads;
  o.max_shard_bytes = shard;
  return make_model(o);
}

TEST(MakeModel, RandomNormalsAreStandardNormal) {
  double sum = 0, sq = 0;
  int beyond3 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double z = random_normal(42, 7, uint64_t(i));
    sum += z;
    sq += z * z;
    beyond3 += std::abs(z) > 3;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sq / n), 1.0, 0.01);
  EXPECT_NEAR(double(beyond3) / n, 0.0027, 0.001);  // real tails, not a bounded approximation
  EXPECT_NE(random_normal(42, 7, 0), random_normal(43, 7, 0));
  EXPECT_NE(random_normal(42, 7, 0), random_normal(42, 8, 0));
  EXPECT_NE(random_normal(42, 7, 0), random_normal(42, 7, 1));
}

TEST(MakeModel, ArchConfigsAreTheRealQwen3Shapes) {
  ModelConfig c = arch_config("qwen3-0.6b", DType::BF16);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.intermediate_size, 3072);
  EXPECT_EQ(c.num_layers, 28);
  EXPECT_EQ(c.num_heads, 16);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.initializer_range, 0.05);
  c = arch_config("qwen3-8b", DType::F16);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 12288);
  EXPECT_EQ(c.num_layers, 36);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.dtype, DType::F16);
  for (const std::string& a : known_archs()) {
    ModelConfig k = arch_config(a, DType::BF16);
    EXPECT_EQ(k.vocab_size, 151936) << a;
    EXPECT_EQ(k.rope_theta, 1e6) << a;
    EXPECT_EQ(k.eos_token_ids, std::vector<int32_t>{151645}) << a;
  }
  std::string msg = error_of([] { arch_config("qwen3-70b", DType::BF16); });
  EXPECT_HAS(msg, "unknown arch 'qwen3-70b'");
  EXPECT_HAS(msg, "qwen3-0.6b");
}

TEST(MakeModel, TinyIsDeterministicAcrossThreadsAndSeedDependent) {
  const std::string a = temp_dir("mm-a"), b = temp_dir("mm-b"), c = temp_dir("mm-c");
  MakeModelResult r = make(a, "tiny", 0, DType::BF16, 1);
  make(b, "tiny", 0, DType::BF16, 3);
  make(c, "tiny", 1, DType::BF16, 2);
  EXPECT_EQ(r.weight_files, std::vector<std::string>{"model.safetensors"});
  ModelWeights wa = ModelWeights::load(a);
  EXPECT_EQ(wa.config.vocab_size, 151936);
  EXPECT_EQ(wa.config.hidden_size, 128);
  EXPECT_EQ(wa.config.num_layers, 4);
  EXPECT_EQ(wa.config.head_dim, 32);
  EXPECT_EQ(wa.config.num_kv_heads, 2);
  EXPECT_EQ(wa.config.eos_token_ids, (std::vector<int32_t>{151645, 151643}));  // + generation_config.json
  EXPECT_EQ(wa.layers[3].q_proj.rows, 128);
  EXPECT_EQ(wa.lm_head.data, wa.embed.data);
  EXPECT_EQ(read_text(a + "/model.safetensors"), read_text(b + "/model.safetensors"));
  const uint64_t da = wa.digest();
  EXPECT_EQ(da, ModelWeights::load(b).digest());
  EXPECT_NE(da, ModelWeights::load(c).digest());
  // Pinned: the generator uses only IEEE basic operations, so these bits hold on every machine.
  // (If this changes on purpose, the default model changes too: bump default-tiny-v1.)
  EXPECT_EQ(hex64(da), "6de3e7e69ad67b81");

  // Values: linear weights N(0, 0.1), norm weights 1 + 0.2 N(0, 1).
  auto stats = [](const WeightRef& w) {
    const uint16_t* p = static_cast<const uint16_t*>(w.data);
    const int64_t n = w.rows * w.cols;
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; ++i) {
      double x = bf16_to_f32(p[i]);
      s += x;
      q += x * x;
    }
    double mean = s / double(n);
    return std::pair{mean, std::sqrt(q / double(n) - mean * mean)};
  };
  auto [em, es] = stats(wa.embed);
  EXPECT_NEAR(em, 0.0, 0.001);
  EXPECT_NEAR(es, 0.1, 0.002);
  auto [gm, gs] = stats(wa.layers[0].gate_proj);
  EXPECT_NEAR(gs, 0.1, 0.003);
  auto [nm, ns] = stats(wa.layers[1].input_norm);
  EXPECT_NEAR(nm, 1.0, 0.06);
  EXPECT_NEAR(ns, 0.2, 0.05);
  EXPECT_EQ(wa.config.initializer_range, 0.1);

  // --init-std overrides the std of the linear weights (and is recorded in config.json).
  const std::string s = temp_dir("mm-std");
  MakeModelOptions o;
  o.arch = "tiny";
  o.out_dir = s;
  o.copy_tokenizer = false;
  o.init_std = 0.03;
  make_model(o);
  ModelWeights ws = ModelWeights::load(s);
  EXPECT_EQ(ws.config.initializer_range, 0.03);
  EXPECT_NEAR(stats(ws.layers[0].up_proj).second, 0.03, 0.001);
}

TEST(MakeModel, DtypesHoldTheSameValues) {
  const std::string a = temp_dir("mm-bf16"), f = temp_dir("mm-f32"), h = temp_dir("mm-f16");
  make(a, "tiny", 5, DType::BF16);
  make(f, "tiny", 5, DType::F32);
  make(h, "tiny", 5, DType::F16);
  ModelWeights wa = ModelWeights::load(a), wf = ModelWeights::load(f), wh = ModelWeights::load(h);
  EXPECT_EQ(wf.config.dtype, DType::F32);
  EXPECT_EQ(wh.config.dtype, DType::F16);
  EXPECT_EQ(wf.embed.dtype, DType::F32);
  EXPECT_NE(wa.digest(), wf.digest());  // the dtype is part of the digest
  // Each dtype stores the same float, rounded: bf16(f32 value) == the bf16 file's bits.
  auto* pf = static_cast<const float*>(wf.layers[2].down_proj.data);
  auto* pa = static_cast<const uint16_t*>(wa.layers[2].down_proj.data);
  auto* ph = static_cast<const uint16_t*>(wh.layers[2].down_proj.data);
  for (int64_t i = 0; i < wf.layers[2].down_proj.rows * wf.layers[2].down_proj.cols; ++i) {
    ASSERT_EQ(pa[i], f32_to_bf16(pf[i])) << i;
    ASSERT_EQ(ph[i], f32_to_f16(pf[i])) << i;
  }
}

TEST(MakeModel, ShardedEqualsSingleFile) {
  const std::string one = temp_dir("mm-one"), many = temp_dir("mm-many");
  make(one, "tiny", 9);
  MakeModelResult r = make(many, "tiny", 9, DType::BF16, 0, 1u << 20);  // 1 MB shards: the 39 MB embedding alone, then layers
  ASSERT_GT(r.weight_files.size(), 2u);
  const std::string n = std::to_string(r.weight_files.size());
  EXPECT_EQ(r.weight_files[0], "model-00001-of-0000" + n + ".safetensors");
  EXPECT_FALSE(fs::exists(many + "/model.safetensors"));
  json index = json::parse(read_text(many + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), r.weight_bytes);
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-0000" + n + ".safetensors");
  EXPECT_EQ(index["weight_map"]["model.norm.weight"], r.weight_files.back());
  ModelWeights s = ModelWeights::load(many), u = ModelWeights::load(one);
  EXPECT_TRUE(s.checkpoint->sharded());
  EXPECT_EQ(s.digest(), u.digest());
  // Writing a single-file model over the sharded folder removes the old shards and index.
  make(many, "tiny", 9);
  EXPECT_FALSE(fs::exists(many + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(many + "/" + r.weight_files[0]));
  EXPECT_EQ(ModelWeights::load(many).digest(), u.digest());
}

TEST(MakeModel, CopiesTheTokenizer) {
  const std::string d = temp_dir("mm-tok");
  MakeModelOptions o;
  o.arch = "tiny";
  o.out_dir = d;
  o.tokenizer_dir = test::tokenizer_dir();
  MakeModelResult r = make_model(o);
  EXPECT_TRUE(r.tokenizer_copied);
  EXPECT_TRUE(r.warning.empty());
  EXPECT_EQ(read_text(d + "/tokenizer.json"), read_text(test::tokenizer_dir() + "/tokenizer.json"));
  EXPECT_EQ(read_text(d + "/tokenizer_config.json"), read_text(test::tokenizer_dir() + "/tokenizer_config.json"));
  o.tokenizer_dir = temp_dir("mm-notok");
  EXPECT_HAS(error_of([&] { make_model(o); }), o.tokenizer_dir + ": no tokenizer.json");
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const char* n, const std::string& v) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    setenv(n, v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(DefaultModel, CreatedOnceAtomicallyWithTokenizer) {
  const std::string home = temp_dir("default-home");
  ScopedEnv env("VERBATIM_HOME", home);
  std::string p1, p2;
  std::thread t1([&] { p1 = ensure_default_model(); });
  std::thread t2([&] { p2 = ensure_default_model(); });
  t1.join();
  t2.join();
  EXPECT_EQ(p1, home + "/default-tiny-v1");
  EXPECT_EQ(p1, p2);
  EXPECT_TRUE(fs::exists(p1 + "/tokenizer.json"));
  int entries = 0;
  for (auto& e : fs::directory_iterator(home)) entries += 1 + 0 * e.path().empty();
  EXPECT_EQ(entries, 1);  // no temporary folder left behind
  const std::string ref = temp_dir("default-ref");
  make(ref, "tiny", 0);
  EXPECT_EQ(ModelWeights::load(p1).digest(), ModelWeights::load(ref).digest());
  EXPECT_EQ(ensure_default_model(), p1);  // second use: the same folder

  ScopedEnv env2("VERBATIM_HOME", temp_dir("default-home2"));
  ScopedEnv env3("VERBATIM_TOKENIZER_DIR", temp_dir("default-notok"));
  EXPECT_HAS(error_of([] { ensure_default_model(); }), "run scripts/deps.sh");
}

// ---------------------------------------------------------------------------------------------
// The real binary

struct RunResult {
  int rc;
  std::string out, err;
};

RunResult run_binary(const std::string& args, const std::string& tag) {
  const std::string d = temp_dir(tag);
  const std::string cmd = test::binary() + " " + args + " >" + d + "/out 2>" + d + "/err";
  int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_text(d + "/out"), read_text(d + "/err")};
}

TEST(MakeModelCli, WritesALoadableModel) {
  ASSERT_TRUE(fs::exists(test::binary())) << test::binary();
  const std::string d = temp_dir("cli-mm") + "/model";
  RunResult r = run_binary("make-model --arch tiny --seed 3 --dtype float16 --out " + d, "cli-mm-run");
  ASSERT_EQ(r.rc, 0) << r.err;
  ModelWeights w = ModelWeights::load(d);
  EXPECT_EQ(w.config.dtype, DType::F16);
  EXPECT_TRUE(fs::exists(d + "/tokenizer.json"));
  EXPECT_HAS(r.out, "weights digest " + hex64(w.digest()));
  const std::string ref = temp_dir("cli-mm-ref");
  make(ref, "tiny", 3, DType::F16);
  EXPECT_EQ(w.digest(), ModelWeights::load(ref).digest());
}

TEST(MakeModelCli, BadArgumentsFailWithOneLine) {
  ASSERT_TRUE(fs::exists(test::binary())) << test::binary();
  const std::string d = temp_dir("cli-bad");
  RunResult r = run_binary("make-model --arch qwen9 --out " + d + "/m", "cli-bad-run");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.err, "verbatim: unknown arch 'qwen9' (choose one of: qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b, qwen3-32b, tiny)\n");
  EXPECT_FALSE(fs::exists(d + "/m"));
  r = run_binary("make-model --arch tiny --dtype int4 --out " + d + "/m", "cli-bad-run2");
  EXPECT_NE(r.rc, 0);
  EXPECT_HAS(r.err, "unknown --dtype 'int4'");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  // 0 would silently mean the default std; negative, hex or overflowing shard sizes were taken.
  for (const char* bad : {"--init-std 0", "--max-shard-bytes=-5000000", "--max-shard-bytes 99999999999999999999",
                          "--max-shard-bytes 0x100000", "--max-shard-bytes 0"}) {
    r = run_binary(std::string("make-model --arch tiny ") + bad + " --out " + d + "/m", "cli-bad-run3");
    EXPECT_NE(r.rc, 0) << bad;
    EXPECT_FALSE(fs::exists(d + "/m")) << bad;
  }
}

}  // namespace
}  // namespace verbatim
