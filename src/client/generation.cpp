#include "client/generation.h"

#include <chrono>
#include <cmath>
#include <limits>

namespace verbatim::client {

namespace {

bool is_chat(const Prompt& p, const SamplingOptions& s) {
  return p.kind == Prompt::Kind::Messages || (s.chat && p.kind == Prompt::Kind::Text);
}

std::string str_or_empty(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return "";
  return obj[key].get<std::string>();
}

// A chat message's or delta's reasoning text. vLLM names it "reasoning" now, "reasoning_content"
// before, and some versions send both (one a copy of the other): read one of them.
std::string reasoning_of(const json& m) {
  return m.contains("reasoning_content") && m["reasoning_content"].is_string() ? m["reasoning_content"].get<std::string>()
                                                                                 : str_or_empty(m, "reasoning");
}

ClientError bad(const std::string& where, const std::string& what) {
  return ClientError(FailureKind::BadAnswer, 0, "the answer to " + where + " " + what);
}

// A logprob that is not a number would compare equal to anything (as NaN): the answer is refused.
void read_logprob_value(const json& v, Output& o, const std::string& where) {
  if (!v.is_number()) throw bad(where, "has a logprob that is not a number (" + v.dump().substr(0, 40) + ")");
  o.logprobs.push_back(v.get<double>());
}

}  // namespace

std::string route_for(const Prompt& p, const SamplingOptions& s) {
  if (p.kind == Prompt::Kind::TokenIds && s.chat)
    throw Error("--chat cannot send token-id prompts; leave --chat out for /v1/completions");
  if (s.echo && is_chat(p, s))
    throw Error("--echo needs /v1/completions (chat completions have no echo): leave --chat out and use text or "
                "token-id prompts");
  return is_chat(p, s) ? "/v1/chat/completions" : "/v1/completions";
}

json request_body(const Prompt& p, const SamplingOptions& s, const ServerFeatures& f, bool stream) {
  json b;
  b["model"] = s.model;
  bool chat = route_for(p, s) == "/v1/chat/completions";
  if (chat) {
    b["messages"] = p.kind == Prompt::Kind::Messages ? p.messages
                                                      : json::array({json{{"role", "user"}, {"content", p.text}}});
    b["chat_template_kwargs"] = json{{"enable_thinking", false}};
  } else if (p.kind == Prompt::Kind::TokenIds) {
    b["prompt"] = p.ids;
  } else {
    b["prompt"] = p.text;
  }
  b["max_tokens"] = s.max_tokens;
  b["temperature"] = s.temperature;
  if (s.seed) b["seed"] = *s.seed;
  if (s.ignore_eos) b["ignore_eos"] = true;
  if (s.echo) b["echo"] = true;
  if (f.token_ids) b["return_token_ids"] = true;
  if (stream) {
    b["stream"] = true;
    b["stream_options"] = json{{"include_usage", true}};
  } else if (f.logprobs) {
    if (chat) b["logprobs"] = true;
    else b["logprobs"] = 1;
  }
  return b;
}

bool completed_finish_reason(const std::string& r) {
  return r == "stop" || r == "length" || r == "tool_calls" || r == "function_call" || r == "content_filter";
}

Output parse_answer(const json& answer, bool chat, const std::string& where, bool echo) {
  if (!answer.is_object()) throw bad(where, "is not a JSON object");
  if (!answer.contains("choices") || !answer["choices"].is_array() || answer["choices"].empty())
    throw bad(where, "has no \"choices\"");
  const json& c = answer["choices"][0];
  if (!c.is_object()) throw bad(where, "has a choice that is not an object");
  Output o;
  o.fingerprint = str_or_empty(answer, "system_fingerprint");
  o.finish_reason = str_or_empty(c, "finish_reason");
  if (!o.finish_reason.empty() && !completed_finish_reason(o.finish_reason))
    throw bad(where, "ended with finish_reason '" + o.finish_reason + "': the server did not complete the request");
  bool has_text = false;
  if (chat) {
    const json* m = c.contains("message") && c["message"].is_object() ? &c["message"] : nullptr;
    if (m) {
      auto is_str = [&](const char* k) { return m->contains(k) && (*m)[k].is_string(); };
      has_text = is_str("content") || is_str("reasoning_content") || is_str("reasoning");
      o.text = reasoning_of(*m) + str_or_empty(*m, "content");  // the order they are written in
    }
  } else {
    has_text = c.contains("text") && c["text"].is_string();
    o.text = str_or_empty(c, "text");
  }
  if (c.contains("token_ids") && c["token_ids"].is_array()) {
    o.has_token_ids = true;
    for (const auto& t : c["token_ids"]) {
      if (!t.is_number_integer()) throw bad(where, "has a token id that is not an integer");
      o.token_ids.push_back(t.get<int64_t>());
    }
  }
  if (c.contains("logprobs") && c["logprobs"].is_object()) {
    const json& lp = c["logprobs"];
    if (chat && lp.contains("content") && lp["content"].is_array()) {
      o.has_logprobs = true;
      bool every_token = true;
      for (const auto& e : lp["content"]) {
        if (!e.is_object()) throw bad(where, "has a logprobs entry that is not an object");
        every_token = every_token && e.contains("token") && e["token"].is_string();
        o.tokens.push_back(str_or_empty(e, "token"));
        read_logprob_value(e.contains("logprob") ? e["logprob"] : json(), o, where);
      }
      // Entries without their token string cannot identify the tokens (missing ones would all read
      // ""): then the text is what identifies them.
      if (!every_token) o.tokens.clear();
    } else if (!chat && lp.contains("token_logprobs") && lp["token_logprobs"].is_array()) {
      o.has_logprobs = true;
      for (const auto& v : lp["token_logprobs"]) {
        if (echo && o.logprobs.empty() && v.is_null()) o.logprobs.push_back(std::numeric_limits<double>::quiet_NaN());
        else read_logprob_value(v, o, where);
      }
      if (lp.contains("tokens") && lp["tokens"].is_array())
        for (const auto& t : lp["tokens"]) o.tokens.push_back(t.is_string() ? t.get<std::string>() : t.dump());
    }
  }
  // With neither token ids nor logprobs the text is all there is to compare: an answer without it
  // (null or missing) would pass as equal to anything.
  if (!has_text && !o.has_token_ids && !o.has_logprobs)
    throw bad(where, chat ? "has no text (message.content is missing or not a string) and no token ids or logprobs"
                          : "has no text (choices[0].text is missing or not a string) and no token ids or logprobs");
  if (answer.contains("usage") && answer["usage"].is_object()) {
    const json& u = answer["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      o.completion_tokens = u["completion_tokens"].get<int64_t>();
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      o.prompt_tokens = u["prompt_tokens"].get<int64_t>();
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object() &&
        u["prompt_tokens_details"].contains("cached_tokens") &&
        u["prompt_tokens_details"]["cached_tokens"].is_number_integer())
      o.cached_tokens = u["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  }
  return o;
}

Output generate(HttpClient& c, const Prompt& p, const SamplingOptions& s, const ServerFeatures& f) {
  std::string route = route_for(p, s);
  json answer = c.post_json(route, request_body(p, s, f, false));
  return parse_answer(answer, route == "/v1/chat/completions", "POST " + route + " on " + c.url().text(), s.echo);
}

StreamTiming generate_streaming(HttpClient& c, const Prompt& p, const SamplingOptions& s, const ServerFeatures& f) {
  using Clock = std::chrono::steady_clock;
  std::string route = route_for(p, s);
  bool chat = route == "/v1/chat/completions";
  std::string where = "POST " + route + " (streaming) on " + c.url().text();
  StreamTiming t;
  int64_t ids_seen = 0, output_chunks = 0;
  auto t0 = Clock::now();
  // token ids (when the server gives them) mark output chunks even when a server sends no text
  c.post_stream(route, request_body(p, s, f, true), [&](const std::string& data) {
    double now = std::chrono::duration<double>(Clock::now() - t0).count();
    json j;
    try {
      j = json::parse(data);
    } catch (const std::exception&) {
      throw bad(where, "has an event that is not JSON: '" + data.substr(0, 80) + "'");
    }
    if (!j.is_object()) throw bad(where, "has an event that is not a JSON object");
    if (j.contains("error")) {
      const json& e = j["error"];
      std::string msg = e.is_object() ? str_or_empty(e, "message") : e.is_string() ? e.get<std::string>() : e.dump();
      throw ClientError(FailureKind::ErrorEvent, 0, "the server reported an error during " + where + ": " + msg);
    }
    if (str_or_empty(j, "object") == "error")  // vLLM's older mid-stream error event
      throw ClientError(FailureKind::ErrorEvent, 0, "the server reported an error during " + where + ": " + str_or_empty(j, "message"));
    if (t.fingerprint.empty()) t.fingerprint = str_or_empty(j, "system_fingerprint");
    if (j.contains("usage") && j["usage"].is_object()) {
      const json& u = j["usage"];
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
        t.completion_tokens = u["completion_tokens"].get<int64_t>();
        if (t.completion_tokens < 0) throw bad(where, "reports a negative usage.completion_tokens");
        t.usage_reported = true;
      }
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
        t.prompt_tokens = u["prompt_tokens"].get<int64_t>();
    }
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
    const json& ch = j["choices"][0];
    if (!ch.is_object()) return;
    int64_t ids = ch.contains("token_ids") && ch["token_ids"].is_array() ? int64_t(ch["token_ids"].size()) : 0;
    std::string piece;
    const bool has_delta = chat && ch.contains("delta") && ch["delta"].is_object();
    if (has_delta)
      piece = str_or_empty(ch["delta"], "content") + reasoning_of(ch["delta"]);
    else if (!chat)
      piece = str_or_empty(ch, "text");
    std::string fr = str_or_empty(ch, "finish_reason");
    // Every event with a choice is timed, as vLLM's benchmark times them, empty ones included (an
    // EOS, held-back stop-string text, a finish): skipping them moved the last token's time and the
    // ITL gaps on servers that stream no token ids. Only a chat choice's opening role-only delta is
    // not output.
    const bool role_only = has_delta && ch["delta"].contains("role") && piece.empty() && ids == 0 && fr.empty();
    if (!role_only) {
      if (ids > 0 || !piece.empty()) ++output_chunks;
      ids_seen += ids;
      if (t.first_token_s < 0) t.first_token_s = now;
      t.last_token_s = now;
      t.chunk_s.push_back(now);
    }
    if (!fr.empty()) t.finish_reason = fr;
  });
  t.end_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (t.finish_reason.empty())
    throw ClientError(FailureKind::Disconnected, 0, "the stream of " + where + " ended without a finish_reason");
  // An aborted request's tokens are not a finished answer's. vLLM's `abort` / `error` finish is the
  // server failing the request it answered, as an error event is: bench counts both as failed.
  if (!completed_finish_reason(t.finish_reason))
    throw ClientError(FailureKind::ErrorEvent, 0,
                      "the stream of " + where + " ended with finish_reason '" + t.finish_reason +
                          "': the server did not complete the request");
  // The token ids streamed are what was seen; a usage that disagrees with them is not trusted.
  if (t.usage_reported && ids_seen > 0 && ids_seen != t.completion_tokens) {
    t.usage_disagrees = true;
    t.completion_tokens = ids_seen;
  }
  if (!t.usage_reported) {
    t.completion_tokens = ids_seen > 0 ? ids_seen : output_chunks;
    t.tokens_from_chunks = ids_seen == 0;
  }
  return t;
}

Output probe_features(HttpClient& c, const Prompt& p, const SamplingOptions& s, ServerFeatures& f) {
  for (int attempt = 0;; ++attempt) {
    try {
      Output o = generate(c, p, s, f);
      f.route = route_for(p, s);
      f.token_ids = f.token_ids && o.has_token_ids;
      f.logprobs = f.logprobs && o.has_logprobs;
      return o;
    } catch (const ClientError& e) {
      // A strict server rejects fields it does not know: drop the optional ones, once each.
      if (e.kind() != FailureKind::HttpStatus || e.status() != 400 || attempt >= 2) throw;
      const std::string& m = e.server_message.empty() ? std::string(e.what()) : e.server_message;
      if (f.token_ids && m.find("return_token_ids") != std::string::npos) f.token_ids = false;
      else if (f.logprobs && m.find("logprobs") != std::string::npos) f.logprobs = false;
      else throw;
    }
  }
}

json Output::to_json() const {
  json j;
  if (has_token_ids) j["token_ids"] = token_ids;
  if (!tokens.empty()) j["tokens"] = tokens;
  if (has_logprobs) {
    json lps = json::array();
    for (double v : logprobs) lps.push_back(std::isnan(v) ? json() : json(v));
    j["logprobs"] = lps;
  }
  j["text"] = text;
  j["finish_reason"] = finish_reason;
  j["system_fingerprint"] = fingerprint;
  if (prompt_tokens >= 0) j["prompt_tokens"] = prompt_tokens;
  if (cached_tokens >= 0) j["cached_tokens"] = cached_tokens;
  return j;
}

Output Output::from_json(const json& j) {
  Output o;
  if (!j.is_object()) throw Error("a recorded output is not a JSON object");
  if (j.contains("token_ids")) {
    o.has_token_ids = true;
    o.token_ids = j["token_ids"].get<std::vector<int64_t>>();
  }
  if (j.contains("tokens")) o.tokens = j["tokens"].get<std::vector<std::string>>();
  if (j.contains("logprobs")) {
    o.has_logprobs = true;
    for (const auto& v : j["logprobs"])  // null: a record of an older run that held a non-number
      o.logprobs.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
  o.text = str_or_empty(j, "text");
  o.finish_reason = str_or_empty(j, "finish_reason");
  o.fingerprint = str_or_empty(j, "system_fingerprint");
  return o;
}

}  // namespace verbatim::client
