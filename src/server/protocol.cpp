#include "server/protocol.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "core/error.h"

namespace verbatim::server {
namespace {

std::string type_name(const request_json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

std::string shown(const request_json& v) { return excerpt(v.is_string() ? v.get<std::string>() : v.dump()); }

[[noreturn]] void bad(const std::string& param, const std::string& what) {
  throw InvalidRequest("'" + param + "' " + what, param);
}
[[noreturn]] void wrong_type(const std::string& param, const char* want, const request_json& v) {
  bad(param, std::string("must be ") + want + ", got " + type_name(v));
}

// A field of the body: nullptr when absent or null (pydantic treats both as "use the default").
const request_json* field(const request_json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const request_json& v, const std::string& param) {
  if (v.is_number_unsigned()) {  // first: is_number_integer() is true for unsigned numbers too
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) bad(param, "is out of range (got " + shown(v) + ")");
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {  // pydantic's lax mode: 16.0 is the integer 16, 16.5 is not
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return int64_t(d);
    bad(param, "must be an integer, got " + shown(v));
  }
  wrong_type(param, "an integer", v);
}

int get_int(const request_json& body, const char* name, int dflt, int64_t lo, int64_t hi, const char* range_msg) {
  const request_json* v = field(body, name);
  if (!v) return dflt;
  int64_t x = as_int(*v, name);
  if (x < lo || x > hi) bad(name, std::string(range_msg) + " (got " + std::to_string(x) + ")");
  return int(x);
}

std::optional<int> get_opt_int(const request_json& body, const char* name, int64_t lo, int64_t hi, const char* range_msg) {
  if (!field(body, name)) return std::nullopt;
  return get_int(body, name, 0, lo, hi, range_msg);
}

double get_number(const request_json& body, const char* name, double dflt) {
  const request_json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  double d = v->get<double>();
  if (!std::isfinite(d)) bad(name, "must be a finite number");
  return d;
}

// A checked sampling value narrowed to the float the sampler runs on, keeping what it means: past
// float's range it becomes the largest float (temperature 1e300 stays finite, not inf), and a
// positive value below the smallest normal float becomes that (top_p 1e-300 stays > 0: the top
// token only), never 0 or a denormal a GPU might flush.
float narrow_sampling_value(double x) {
  constexpr float kMax = std::numeric_limits<float>::max(), kMin = std::numeric_limits<float>::min();
  if (x >= double(kMax)) return kMax;
  if (x > 0 && x < double(kMin)) return kMin;
  return float(x);
}

bool get_bool(const request_json& body, const char* name, bool dflt) {
  const request_json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::string get_string(const request_json& body, const char* name, const std::string& dflt = "") {
  const request_json* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

void check_object(const request_json& body) {
  if (!body.is_object()) throw InvalidRequest("the request body must be a JSON object, got " + type_name(body), "body");
}

// Fields vLLM knows but verbatim does not implement: accepted only at their neutral value, so a
// client never silently gets something other than what it asked for.
void reject_unsupported(const request_json& body) {
  auto neutral_number = [&](const char* name, double neutral) {
    double x = get_number(body, name, neutral);
    if (x != neutral) bad(name, "is not supported by verbatim (only " + request_json(neutral).dump() + ")");
  };
  neutral_number("frequency_penalty", 0.0);
  neutral_number("presence_penalty", 0.0);
  neutral_number("repetition_penalty", 1.0);
  neutral_number("length_penalty", 1.0);
  if (const request_json* v = field(body, "logit_bias"); v && !(v->is_object() && v->empty()))
    bad("logit_bias", "is not supported by verbatim");
  if (get_bool(body, "use_beam_search", false)) bad("use_beam_search", "is not supported by verbatim");
  if (const request_json* v = field(body, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    bad("suffix", "is not supported by verbatim");
  if (const request_json* v = field(body, "tools"); v && !(v->is_array() && v->empty()))
    bad("tools", "(tool calling) is not supported by verbatim");
  if (const request_json* v = field(body, "response_format")) {
    if (!v->is_object()) wrong_type("response_format", "an object", *v);
    if (get_string(*v, "type", "text") != "text") bad("response_format", "supports only {\"type\": \"text\"}");
  }
  if (get_bool(body, "continue_final_message", false))
    bad("continue_final_message", "is not supported by verbatim");
  // vLLM's extensions that change the output: refused unless absent, null or their neutral value.
  for (const char* name : {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
                           "logits_processors", "truncate_prompt_tokens", "chat_template", "documents",
                           "functions", "mm_processor_kwargs", "prompt_embeds"})
    if (field(body, name)) bad(name, "is not supported by verbatim");
  for (const char* name : {"allowed_token_ids", "bad_words"})
    if (const request_json* v = field(body, name); v && !(v->is_array() && v->empty())) bad(name, "is not supported by verbatim");
  if (field(body, "prompt_logprobs"))
    bad("prompt_logprobs", "is not supported by verbatim (completions: 'echo' with 'logprobs' gives the prompt's logprobs)");
  if (get_bool(body, "return_tokens_as_token_ids", false)) bad("return_tokens_as_token_ids", "is not supported by verbatim");
  neutral_number("priority", 0.0);
  // With no tools, only the choices that call none mean anything.
  if (const request_json* v = field(body, "tool_choice"); v && !(v->is_string() && (*v == "none" || *v == "auto")))
    bad("tool_choice", "(tool calling) is not supported by verbatim");
  if (const request_json* v = field(body, "function_call"); v && !(v->is_string() && (*v == "none" || *v == "auto")))
    bad("function_call", "(tool calling) is not supported by verbatim");
}

std::vector<int32_t> parse_id_list(const request_json& arr, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const request_json& t : arr) {
    if (!t.is_number_integer() && !t.is_number_unsigned())
      bad(param, "must hold integer token ids, got " + type_name(t));
    int64_t x = as_int(t, param);
    if (x < 0 || x > std::numeric_limits<int32_t>::max()) bad(param, "holds a token id out of range (" + std::to_string(x) + ")");
    ids.push_back(int32_t(x));
  }
  return ids;
}

std::vector<PromptInput> parse_prompts(const request_json& body) {
  const request_json* p = field(body, "prompt");
  if (!p) bad("prompt", "is required");
  std::vector<PromptInput> out;
  if (p->is_string()) {
    out.push_back({p->get<std::string>(), {}});
  } else if (p->is_array()) {
    if (p->empty()) bad("prompt", "must not be empty");
    const request_json& first = (*p)[0];
    if (first.is_string()) {
      for (const request_json& s : *p) {
        if (!s.is_string()) bad("prompt", "mixes strings with " + type_name(s));
        out.push_back({s.get<std::string>(), {}});
      }
    } else if (first.is_number()) {
      out.push_back({std::nullopt, parse_id_list(*p, "prompt")});
    } else if (first.is_array()) {
      for (const request_json& ids : *p) {
        if (!ids.is_array()) bad("prompt", "mixes token-id lists with " + type_name(ids));
        if (ids.empty()) bad("prompt", "must not contain an empty token-id list");
        out.push_back({std::nullopt, parse_id_list(ids, "prompt")});
      }
    } else {
      bad("prompt", "must be a string, a list of strings, a list of token ids or a list of token-id lists");
    }
  } else {
    wrong_type("prompt", "a string or a list", *p);
  }
  for (const auto& pr : out)
    if (pr.text && pr.text->empty()) bad("prompt", "must not be empty");
  return out;
}

std::vector<std::string> parse_stop(const request_json& body) {
  const request_json* v = field(body, "stop");
  std::vector<std::string> stop;
  if (!v) return stop;
  if (v->is_string()) {
    stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const request_json& s : *v) {
      if (!s.is_string()) bad("stop", "must be a string or a list of strings, got a list holding " + type_name(s));
      stop.push_back(s.get<std::string>());
    }
  } else {
    wrong_type("stop", "a string or a list of strings", *v);
  }
  std::erase_if(stop, [](const std::string& s) { return s.empty(); });  // an empty stop string matches nothing
  return stop;
}

// The fields both endpoints share.
void parse_generation(const request_json& body, const SamplingDefaults& d, GenerationRequest& r) {
  reject_unsupported(body);
  r.model = get_string(body, "model");
  SamplingParams& p = r.params;
  // Ranges are checked on the double the client sent, then narrowed (narrow_sampling_value).
  double temperature = get_number(body, "temperature", d.temperature);
  if (!(temperature >= 0)) bad("temperature", "must be >= 0 (got " + shown(body.at("temperature")) + ")");
  p.temperature = narrow_sampling_value(temperature);
  double top_p = get_number(body, "top_p", d.top_p);
  if (!(top_p > 0 && top_p <= 1)) bad("top_p", "must be in (0, 1] (got " + shown(body.at("top_p")) + ")");
  p.top_p = narrow_sampling_value(top_p);
  p.top_k = get_int(body, "top_k", d.top_k, -1, std::numeric_limits<int32_t>::max(),
                    "must be -1 (off), 0 (off) or a positive 32-bit integer");
  if (p.top_k < 0) p.top_k = 0;
  double min_p = get_number(body, "min_p", d.min_p);
  if (!(min_p >= 0 && min_p <= 1)) bad("min_p", "must be in [0, 1] (got " + shown(body.at("min_p")) + ")");
  p.min_p = narrow_sampling_value(min_p);
  if (const request_json* s = field(body, "seed")) p.seed = uint64_t(as_int(*s, "seed"));  // negative seeds wrap, as in vLLM
  p.ignore_eos = get_bool(body, "ignore_eos", false);
  p.min_tokens = get_int(body, "min_tokens", 0, 0, std::numeric_limits<int32_t>::max(), "must be between 0 and 2147483647");
  if (const request_json* v = field(body, "stop_token_ids")) {
    if (!v->is_array()) wrong_type("stop_token_ids", "a list of token ids", *v);
    p.stop_token_ids = parse_id_list(*v, "stop_token_ids");
  }
  r.n = get_int(body, "n", 1, 1, kMaxN, "must be between 1 and 128");
  if (const request_json* b = field(body, "best_of"); b && as_int(*b, "best_of") != r.n)
    bad("best_of", "is not supported by verbatim (only equal to n)");
  r.stop = parse_stop(body);
  r.include_stop_str_in_output = get_bool(body, "include_stop_str_in_output", false);
  r.skip_special_tokens = get_bool(body, "skip_special_tokens", true);
  r.stream = get_bool(body, "stream", false);
  if (const request_json* so = field(body, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    // vLLM refuses only a non-empty one ({} is falsy in its check) without streaming.
    if (!r.stream && !so->empty()) bad("stream_options", "is only allowed when 'stream' is true");
    // vLLM's StreamOptions defaults include_usage to true: stream_options present means usage
    // unless it says include_usage false (so {"continuous_usage_stats": true} alone gives usage).
    r.include_usage = get_bool(*so, "include_usage", true) && r.stream;
    r.continuous_usage_stats = get_bool(*so, "continuous_usage_stats", false) && r.stream;
  }
  r.return_token_ids = get_bool(body, "return_token_ids", false);
  get_string(body, "user");  // accepted and ignored, as OpenAI documents it
}

void check_min_tokens(GenerationRequest& r) {
  if (r.max_tokens && r.params.min_tokens > *r.max_tokens)
    bad("min_tokens", "must be <= max_tokens (got " + std::to_string(r.params.min_tokens) + " > " +
                          std::to_string(*r.max_tokens) + ")");
}

std::string message_content(const request_json& content, size_t i) {
  std::string param = "messages[" + std::to_string(i) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(param, "a string or a list of content parts", content);
  // The non-empty text parts joined by newlines, as vLLM does (empty parts add no separator).
  std::string text;
  bool first = true;
  for (const request_json& part : content) {
    if (!part.is_object()) wrong_type(param, "a list of content parts", part);
    std::string type = get_string(part, "type");
    if (type != "text") bad(param, "holds a part of type '" + excerpt(type) + "'; only 'text' is supported");
    if (!field(part, "text")) bad(param, "holds a text part without 'text'");
    const std::string t = get_string(part, "text");
    if (t.empty()) continue;
    if (!first) text += "\n";
    text += t;
    first = false;
  }
  return text;
}

std::vector<ChatMessage> parse_messages(const request_json& body) {
  const request_json* v = field(body, "messages");
  if (!v) bad("messages", "is required");
  if (!v->is_array()) wrong_type("messages", "a list", *v);
  if (v->empty()) bad("messages", "must not be empty");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const request_json& m = (*v)[i];
    std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(param, "an object", m);
    const request_json* role = field(m, "role");
    if (!role || !role->is_string()) bad(param + ".role", "must be a string");
    ChatMessage msg;
    msg.role = role->get<std::string>();
    if (!roles.count(msg.role)) bad(param + ".role", "must be system, user, assistant or tool (got '" + excerpt(msg.role) + "')");
    if (msg.role == "developer") msg.role = "system";  // OpenAI's newer name for the system role
    const request_json* content = field(m, "content");
    if (content) msg.content = message_content(*content, i);
    else if (msg.role != "assistant") bad(param + ".content", "is required");
    // Tool calling is refused ('tools'); a history holding calls would be rendered without them.
    if (const request_json* tc = field(m, "tool_calls"); tc && !(tc->is_array() && tc->empty()))
      bad(param + ".tool_calls", "(tool calling) is not supported by verbatim");
    if (const request_json* rc = field(m, "reasoning_content")) {
      if (!rc->is_string()) wrong_type(param + ".reasoning_content", "a string", *rc);
      msg.reasoning_content = rc->get<std::string>();
    }
    out.push_back(std::move(msg));
  }
  return out;
}

void parse_template_kwargs(const request_json& body, bool& enable_thinking) {
  if (const request_json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) wrong_type("chat_template_kwargs", "an object", *k);
    if (const request_json* t = field(*k, "enable_thinking")) {
      if (!t->is_boolean()) wrong_type("chat_template_kwargs.enable_thinking", "a boolean", *t);
      enable_thinking = t->get<bool>();
    }
  }
}

// Number of Unicode code points (Python's len), which is how vLLM counts text_offset.
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

json float_json(float f) { return std::isfinite(f) ? json(double(f)) : json(f < 0 ? -9999.0 : 9999.0); }

}  // namespace

std::string excerpt(const std::string& s, size_t max_chars) {
  std::string out;
  size_t chars = 0, continuation = 3;  // 3: a continuation byte first is a character of its own
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    // A character is a lead byte and at most 3 continuation bytes; a longer run of stray
    // continuation bytes (invalid UTF-8) counts as characters too, so the excerpt stays bounded
    // (fuzz_protocol finding: 0x82 x 200 gave an excerpt of the whole run).
    if ((c & 0xC0) != 0x80 || continuation == 3) {
      if (chars == max_chars) return out + "...";
      ++chars;
      continuation = 0;
    } else {
      ++continuation;
    }
    out += (c < 0x20 || c == 0x7f) ? ' ' : char(c);
  }
  return out;
}

SamplingDefaults SamplingDefaults::from_model_dir(const std::string& dir) {
  SamplingDefaults d;
  std::string path = dir + "/generation_config.json";
  if (!std::filesystem::exists(path)) return d;
  std::ifstream f(path);
  json g = json::parse(f, nullptr, false);
  if (!g.is_object()) throw Error(path + ": not a JSON object");
  // A default outside its range would make every request fail, so it is refused at startup.
  auto take = [&](const char* name, double lo, double hi, bool lo_open, auto& out) {
    auto it = g.find(name);
    if (it == g.end() || !it->is_number()) return;
    const double v = it->template get<double>();
    if (!(v >= lo && v <= hi) || (lo_open && v == lo))
      throw Error(path + ": field '" + name + "' is " + it->dump() + ", outside " + (lo_open ? "(" : "[") +
                  json(lo).dump() + ", " + json(hi).dump() + "]");
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    d.from_model.push_back(name);
  };
  take("temperature", 0.0, 1e6, false, d.temperature);
  take("top_p", 0.0, 1.0, true, d.top_p);
  take("top_k", -1.0, 1e9, false, d.top_k);
  take("min_p", 0.0, 1.0, false, d.min_p);
  if (d.top_k < 0) d.top_k = 0;
  return d;
}

request_json parse_body(const std::string& body) {
  request_json j = request_json::parse(body, nullptr, false);
  if (j.is_discarded()) throw InvalidRequest("the request body is not valid JSON", "body");
  check_object(j);
  return j;
}

CompletionRequest parse_completion_request(const request_json& body, const SamplingDefaults& defaults) {
  check_object(body);
  CompletionRequest r;
  parse_generation(body, defaults, r);
  r.prompts = parse_prompts(body);
  r.echo = get_bool(body, "echo", false);
  r.max_tokens = get_opt_int(body, "max_tokens", 0, std::numeric_limits<int32_t>::max(), "must be between 0 and 2147483647");
  if (!r.max_tokens) r.max_tokens = 16;  // OpenAI's and vLLM's default for completions
  if (*r.max_tokens == 0 && !r.echo) bad("max_tokens", "must be at least 1 unless 'echo' is true (got 0)");
  if (const request_json* v = field(body, "logprobs"); v && v->is_boolean()) wrong_type("logprobs", "an integer", *v);
  r.logprobs = get_opt_int(body, "logprobs", 0, kMaxLogprobs, "must be between 0 and 20");
  r.params.logprobs = r.logprobs ? *r.logprobs : -1;
  r.params.prompt_logprobs = r.echo && r.logprobs.has_value();
  r.params.max_tokens = *r.max_tokens;
  check_min_tokens(r);
  // OpenAI's legacy echo-only call (lm-evaluation-harness's loglikelihood): the prompt and its
  // logprobs, no completion. The engine still samples one token (as vLLM), which no answer shows.
  r.echo_only = *r.max_tokens == 0;
  if (r.echo_only) r.max_tokens = r.params.max_tokens = 1;
  return r;
}

ChatRequest parse_chat_request(const request_json& body, const SamplingDefaults& defaults) {
  check_object(body);
  ChatRequest r;
  parse_generation(body, defaults, r);
  r.messages = parse_messages(body);
  r.max_tokens = get_opt_int(body, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(), "must be between 1 and 2147483647");
  if (r.max_tokens) r.max_tokens_param = "max_completion_tokens";
  if (!r.max_tokens)
    r.max_tokens = get_opt_int(body, "max_tokens", 1, std::numeric_limits<int32_t>::max(), "must be between 1 and 2147483647");
  r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  parse_template_kwargs(body, r.enable_thinking);
  if (get_bool(body, "echo", false)) bad("echo", "is not supported by verbatim on chat completions");
  r.logprobs = get_bool(body, "logprobs", false);
  if (field(body, "top_logprobs")) {
    r.top_logprobs = get_int(body, "top_logprobs", 0, 0, kMaxLogprobs, "must be between 0 and 20");
    // As vLLM: only a top_logprobs above 0 needs logprobs (0, the neutral value, asks for nothing).
    if (r.top_logprobs > 0 && !r.logprobs) bad("top_logprobs", "needs 'logprobs' set to true");
  }
  r.params.logprobs = r.logprobs ? r.top_logprobs : -1;
  if (r.max_tokens) r.params.max_tokens = *r.max_tokens;
  check_min_tokens(r);
  return r;
}

TokenizeRequest parse_tokenize_request(const request_json& body) {
  check_object(body);
  TokenizeRequest r;
  r.model = get_string(body, "model");
  if (field(body, "messages")) {
    r.messages = parse_messages(body);
    r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
    parse_template_kwargs(body, r.enable_thinking);
  } else {
    const request_json* p = field(body, "prompt");
    if (!p) bad("prompt", "is required (or 'messages')");
    if (!p->is_string()) wrong_type("prompt", "a string", *p);
    r.prompt = p->get<std::string>();
  }
  r.return_token_strs = get_bool(body, "return_token_strs", false);
  return r;
}

DetokenizeRequest parse_detokenize_request(const request_json& body) {
  check_object(body);
  DetokenizeRequest r;
  r.model = get_string(body, "model");
  const request_json* t = field(body, "tokens");
  if (!t) bad("tokens", "is required");
  if (!t->is_array()) wrong_type("tokens", "a list of token ids", *t);
  r.tokens = parse_id_list(*t, "tokens");
  return r;
}

// ---- responses -------------------------------------------------------------------------------

std::string TokenNamer::name(int32_t id) const {
  if (!tok_) return "token_id:" + std::to_string(id);
  return tok_->decode({id}, false);
}

std::vector<uint8_t> TokenNamer::bytes(int32_t id) const {
  if (!tok_) {
    std::string s = name(id);
    return {s.begin(), s.end()};
  }
  return tok_->token_bytes(id);
}

json usage_json(const Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"completion_tokens", u.completion_tokens}};
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

json completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t text_offset, int top_k,
                              const TokenNamer& namer) {
  json offsets = json::array(), token_logprobs = json::array(), tokens = json::array(), tops = json::array();
  for (const LogprobEntry& e : entries) {
    std::string name = namer.name(e.token);
    offsets.push_back(text_offset);
    text_offset += code_points(name);
    tokens.push_back(name);
    if (!e.logprob) {  // the first prompt token under echo: nothing predicts it
      token_logprobs.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    token_logprobs.push_back(float_json(*e.logprob));
    // vLLM's shape: the top k alternatives plus the chosen token.
    json top = json::object();
    int shown_k = 0;
    for (const auto& [id, lp] : e.top) {
      if (shown_k++ >= top_k) break;
      std::string n = namer.name(id);
      if (!top.contains(n)) top[n] = float_json(lp);
    }
    if (!top.contains(name)) top[name] = float_json(*e.logprob);
    tops.push_back(std::move(top));
  }
  return {{"text_offset", offsets}, {"token_logprobs", token_logprobs}, {"tokens", tokens}, {"top_logprobs", tops}};
}

json chat_logprobs_json(const std::vector<LogprobEntry>& entries, int top_k, const TokenNamer& namer) {
  auto one = [&](int32_t id, float lp) {
    return json{{"token", namer.name(id)}, {"logprob", float_json(lp)}, {"bytes", namer.bytes(id)}};
  };
  json content = json::array();
  for (const LogprobEntry& e : entries) {
    json item = one(e.token, e.logprob.value_or(0.0f));
    json top = json::array();
    for (size_t i = 0; i < e.top.size() && int(i) < top_k; ++i) top.push_back(one(e.top[i].first, e.top[i].second));
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return {{"content", content}};
}

namespace {
json header(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
          {"system_fingerprint", meta.fingerprint}};
}
json stop_reason_json(const ChoiceJson& c) { return c.stop_reason ? *c.stop_reason : json(nullptr); }
json finish_json(const ChoiceJson& c) { return c.finish_reason ? json(*c.finish_reason) : json(nullptr); }
}  // namespace

json completion_response(const ResponseMeta& meta, const std::vector<ChoiceJson>& choices, int top_k,
                         const TokenNamer& namer, const std::optional<Usage>& usage, bool chunk) {
  json j = header(meta, "text_completion");
  json arr = json::array();
  for (const ChoiceJson& c : choices) {
    json o = {{"index", c.index}};
    if (c.text) o["text"] = *c.text;
    o["logprobs"] = c.logprobs ? completion_logprobs_json(*c.logprobs, c.text_offset, top_k, namer) : json(nullptr);
    o["finish_reason"] = finish_json(c);
    o["stop_reason"] = stop_reason_json(c);
    if (c.prompt_token_ids) o["prompt_token_ids"] = *c.prompt_token_ids;
    if (c.include_token_ids) o["token_ids"] = c.token_ids;
    arr.push_back(std::move(o));
  }
  j["choices"] = std::move(arr);
  if (usage) j["usage"] = usage_json(*usage);
  else if (!chunk) j["usage"] = nullptr;
  return j;
}

json chat_response(const ResponseMeta& meta, const std::vector<ChoiceJson>& choices, int top_k,
                   const TokenNamer& namer, const std::optional<Usage>& usage,
                   const std::optional<std::vector<int32_t>>& prompt_token_ids) {
  json j = header(meta, "chat.completion");
  json arr = json::array();
  for (const ChoiceJson& c : choices) {
    json msg = {{"role", "assistant"}};
    msg["content"] = c.text ? json(*c.text) : json(nullptr);
    json o = {{"index", c.index}, {"message", std::move(msg)}};
    o["logprobs"] = c.logprobs ? chat_logprobs_json(*c.logprobs, top_k, namer) : json(nullptr);
    o["finish_reason"] = finish_json(c);
    o["stop_reason"] = stop_reason_json(c);
    if (c.include_token_ids) o["token_ids"] = c.token_ids;
    arr.push_back(std::move(o));
  }
  j["choices"] = std::move(arr);
  j["usage"] = usage ? usage_json(*usage) : json(nullptr);
  if (prompt_token_ids) j["prompt_token_ids"] = *prompt_token_ids;
  return j;
}

json chat_chunk(const ResponseMeta& meta, const ChoiceJson& c, bool first, int top_k, const TokenNamer& namer) {
  json j = header(meta, "chat.completion.chunk");
  json delta = json::object();
  if (first) delta["role"] = "assistant";
  if (c.text) delta["content"] = *c.text;
  json o = {{"index", c.index}, {"delta", std::move(delta)}};
  o["logprobs"] = c.logprobs ? chat_logprobs_json(*c.logprobs, top_k, namer) : json(nullptr);
  o["finish_reason"] = finish_json(c);
  o["stop_reason"] = stop_reason_json(c);
  if (c.include_token_ids) o["token_ids"] = c.token_ids;
  j["choices"] = json::array({std::move(o)});
  if (c.prompt_token_ids) j["prompt_token_ids"] = *c.prompt_token_ids;
  return j;
}

json usage_chunk(const ResponseMeta& meta, const char* object, const Usage& usage) {
  json j = header(meta, object);
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

json error_json(int status, const std::string& message, const std::string& param) {
  const char* type = "invalid_request_error";
  switch (status) {
    case 401: type = "authentication_error"; break;
    case 404: type = "not_found_error"; break;
    case 500: type = "internal_server_error"; break;
    case 503: type = "service_unavailable_error"; break;
    default: break;
  }
  json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  e["code"] = status;
  return {{"error", std::move(e)}};
}

}  // namespace verbatim::server
