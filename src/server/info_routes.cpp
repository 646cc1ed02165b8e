// GET /v1/models, /version, /tokenizer_info; POST /tokenize, /detokenize (vLLM's shapes).
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "server/server_state.h"

namespace verbatim::server {
namespace {

const Tokenizer& tokenizer_of(Runtime& rt) {
  if (!rt.tokenizer) throw HttpError(404, "this model folder has no tokenizer files (token-id prompts only)");
  return *rt.tokenizer;
}

}  // namespace

json models_json(ServerState& st) {
  Runtime& rt = st.runtime();
  json data = json::array();  // a card per served name, as vLLM lists them
  for (const std::string& name : rt.model_names)
    data.push_back({{"id", name},              {"object", "model"},   {"created", st.started_at},
                    {"owned_by", "verbatim"}, {"root", rt.model_dir}, {"parent", nullptr},
                    {"max_model_len", rt.limits.max_model_len}});
  return {{"object", "list"}, {"data", data}};
}

json version_json(ServerState& st) {
  json j = {{"version", VERBATIM_VERSION}};
  if (st.ready) {
    Runtime& rt = st.runtime();
    j["system_fingerprint"] = rt.fingerprint;
    json parts = json::object();
    for (const auto& [k, v] : rt.fingerprint_parts.parts) parts[k] = v;
    j["fingerprint_parts"] = parts;
    j["model"] = rt.model_name();
  }
  return j;
}

json tokenize_json(ServerState& st, const request_json& body) {
  Runtime& rt = st.runtime();
  st.check_model(body);
  TokenizeRequest r = parse_tokenize_request(body);
  const Tokenizer& tok = tokenizer_of(rt);
  std::string text = r.prompt ? *r.prompt : render_chat(r.messages, r.add_generation_prompt, r.enable_thinking);
  std::vector<int32_t> ids = tok.encode(text);
  json j = {{"count", ids.size()}, {"max_model_len", rt.limits.max_model_len}, {"tokens", ids}};
  if (r.return_token_strs) {
    json strs = json::array();
    for (int32_t id : ids) strs.push_back(tok.token_text(id));
    j["token_strs"] = strs;
  } else {
    j["token_strs"] = nullptr;
  }
  return j;
}

json detokenize_json(ServerState& st, const request_json& body) {
  Runtime& rt = st.runtime();
  st.check_model(body);
  DetokenizeRequest r = parse_detokenize_request(body);
  const Tokenizer& tok = tokenizer_of(rt);
  for (int32_t id : r.tokens)
    if (id >= rt.limits.vocab_size && id >= tok.vocab_size())
      throw InvalidRequest("token id " + std::to_string(id) + " in 'tokens' is outside the vocabulary", "tokens");
  return {{"prompt", tok.decode(r.tokens, false)}};
}

// tokenizer_config.json as the model ships it (minus the long added-token table), plus what a
// client needs to count tokens.
json tokenizer_info_json(ServerState& st) {
  Runtime& rt = st.runtime();
  const Tokenizer& tok = tokenizer_of(rt);
  json j = json::object();
  std::ifstream f(rt.model_dir + "/tokenizer_config.json");
  if (f) {
    json cfg = json::parse(f, nullptr, false);
    if (cfg.is_object()) {
      cfg.erase("added_tokens_decoder");
      j = cfg;
    }
  }
  j["tokenizer_class"] = j.value("tokenizer_class", std::string("Qwen2TokenizerFast"));
  j["vocab_size"] = tok.vocab_size();
  j["model_max_length"] = rt.limits.max_model_len;
  json eos = json::array();
  for (int32_t id : tok.eos_token_ids()) eos.push_back(id);
  j["eos_token_ids"] = eos;
  return j;
}

}  // namespace verbatim::server
