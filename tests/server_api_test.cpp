// The OpenAI / vLLM API of `verbatim serve` through real HTTP on loopback: every route's shape,
// streaming against non-streaming, logprobs, echo, stop strings and stop tokens, n, chat, and
// every bad-input answer (400 / 401 / 404 / 405) with OpenAI's error JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server_harness.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::test {
namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + n >= s.size() + (n == 0)) return false;
    for (int k = 1; k <= n; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n + 1;
  }
  return true;
}

class ServerApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    text_ = new ServerProcess({text_model_dir(), "--served-model-name", "tiny-text", "--max-model-len", "256"});
    ids_ = new ServerProcess({fixture("qwen3-tiny-tied"), "--api-key", "sekret", "--max-model-len", "64"});
    tok_ = Tokenizer::load(text_model_dir()).release();
  }
  static void TearDownTestSuite() {
    delete text_;
    delete ids_;
    delete tok_;
  }
  static int port() { return text_->port(); }
  static ServerProcess* text_;
  static ServerProcess* ids_;
  static Tokenizer* tok_;
};
ServerProcess* ServerApi::text_ = nullptr;
ServerProcess* ServerApi::ids_ = nullptr;
Tokenizer* ServerApi::tok_ = nullptr;

const httplib::Headers kKey = {{"Authorization", "Bearer sekret"}};

TEST_F(ServerApi, InfoRoutes) {
  auto models = get(port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.j["object"], "list");
  EXPECT_EQ(models.j["data"][0]["id"], "tiny-text");
  EXPECT_EQ(models.j["data"][0]["max_model_len"], 256);
  EXPECT_EQ(get(port(), "/v1/models/tiny-text").status, 200);
  EXPECT_EQ(get(port(), "/v1/models/other").status, 404);

  auto version = get(port(), "/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_TRUE(version.j["version"].is_string());
  for (const char* part : {"weights", "dtype", "engine", "device", "kernels"})
    EXPECT_TRUE(version.j["fingerprint_parts"].contains(part)) << part;
  EXPECT_EQ(version.j["fingerprint_parts"]["dtype"], "bfloat16");
  auto done = post(port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 1}});
  EXPECT_EQ(done.j["system_fingerprint"], version.j["system_fingerprint"]);

  EXPECT_EQ(get(port(), "/health").status, 200);
  EXPECT_EQ(post(port(), "/reset_prefix_cache", json::object()).status, 200);

  auto tk = post(port(), "/tokenize", {{"prompt", "Hello world, héllo"}, {"return_token_strs", true}});
  ASSERT_EQ(tk.status, 200) << tk.body;
  EXPECT_EQ(tk.j["tokens"].get<std::vector<int32_t>>(), tok_->encode("Hello world, héllo"));
  EXPECT_EQ(tk.j["count"], tk.j["tokens"].size());
  EXPECT_EQ(tk.j["max_model_len"], 256);
  EXPECT_EQ(tk.j["token_strs"].size(), tk.j["tokens"].size());
  auto dt = post(port(), "/detokenize", {{"tokens", tk.j["tokens"]}});
  ASSERT_EQ(dt.status, 200);
  EXPECT_EQ(dt.j["prompt"], "Hello world, héllo");
  auto chat_tk = post(port(), "/tokenize", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                            {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(chat_tk.status, 200);
  EXPECT_EQ(chat_tk.j["tokens"].get<std::vector<int32_t>>(),
            tok_->encode(render_chat({{"user", "Hi", std::nullopt}}, true, false)));

  auto info = get(port(), "/tokenizer_info");
  ASSERT_EQ(info.status, 200);
  EXPECT_EQ(info.j["model_max_length"], 256);
  EXPECT_TRUE(info.j.contains("tokenizer_class"));
  EXPECT_EQ(get(ids_->port(), "/tokenizer_info").status, 404) << "no tokenizer files in the fixture";

  std::string m = get(port(), "/metrics").body;
  for (const char* name :
       {"verbatim:num_requests_running", "verbatim:num_requests_waiting", "verbatim:num_preemptions_total",
        "verbatim:prefix_cache_queries_total", "verbatim:prefix_cache_hits_total", "verbatim:prompt_tokens_total",
        "verbatim:generation_tokens_total", "verbatim:time_to_first_token_seconds_bucket",
        "verbatim:inter_token_latency_seconds_bucket", "verbatim:e2e_request_latency_seconds_count"})
    EXPECT_GE(metric(m, name), 0) << name << " missing from /metrics";
  EXPECT_GE(metric(m, "verbatim:time_to_first_token_seconds_count"), 1);
  EXPECT_GE(metric(m, "verbatim:generation_tokens_total"), 1);
}

TEST_F(ServerApi, CompletionShapeTokenIdsAndPromptForms) {
  json b = {{"model", "tiny-text"}, {"prompt", "The weather today"}, {"max_tokens", 8}, {"temperature", 0},
            {"return_token_ids", true}};
  auto r = post(port(), "/v1/completions", b);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(r.j["object"], "text_completion");
  EXPECT_EQ(r.j["model"], "tiny-text");
  EXPECT_TRUE(r.j["created"].is_number_integer());
  const json& c = r.j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_TRUE(c["logprobs"].is_null());
  auto out = c["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(c["text"], tok_->decode(out, true));
  auto prompt_ids = tok_->encode("The weather today");
  EXPECT_EQ(c["prompt_token_ids"].get<std::vector<int32_t>>(), prompt_ids);
  EXPECT_EQ(r.j["usage"]["prompt_tokens"], prompt_ids.size());
  EXPECT_EQ(r.j["usage"]["completion_tokens"], 8);
  EXPECT_EQ(r.j["usage"]["total_tokens"], prompt_ids.size() + 8);

  // The same prompt as token ids, as a list of strings and as a list of id lists.
  json as_ids = b;
  as_ids["prompt"] = prompt_ids;
  EXPECT_EQ(post(port(), "/v1/completions", as_ids).j["choices"][0]["token_ids"], c["token_ids"]);
  json lists = b;
  lists["prompt"] = {"The weather today", "Another prompt"};
  auto two = post(port(), "/v1/completions", lists);
  ASSERT_EQ(two.j["choices"].size(), 2u);
  EXPECT_EQ(two.j["choices"][0]["index"], 0);
  EXPECT_EQ(two.j["choices"][1]["index"], 1);
  EXPECT_EQ(two.j["choices"][0]["token_ids"], c["token_ids"]);
  EXPECT_NE(two.j["choices"][1]["token_ids"], c["token_ids"]);
  json id_lists = b;
  id_lists["prompt"] = {prompt_ids, tok_->encode("Another prompt")};
  EXPECT_EQ(post(port(), "/v1/completions", id_lists).j["choices"], two.j["choices"]);
}

TEST_F(ServerApi, SeedsAndN) {
  json b = {{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 1.0}, {"seed", 11}, {"n", 3},
            {"return_token_ids", true}};
  auto a = post(port(), "/v1/completions", b);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(a.j["choices"].size(), 3u);
  EXPECT_NE(a.j["choices"][0]["token_ids"], a.j["choices"][1]["token_ids"]) << "n choices use different streams";
  EXPECT_EQ(post(port(), "/v1/completions", b).j["choices"], a.j["choices"]) << "same seed, same tokens";
  b["seed"] = 12;
  EXPECT_NE(post(port(), "/v1/completions", b).j["choices"][0]["token_ids"], a.j["choices"][0]["token_ids"]);
  b["n"] = 1;
  b["seed"] = 11;
  EXPECT_EQ(post(port(), "/v1/completions", b).j["choices"][0]["token_ids"], a.j["choices"][0]["token_ids"])
      << "choice 0 of n=3 equals the n=1 answer";
}

TEST_F(ServerApi, LogprobsAndEcho) {
  json b = {{"prompt", "Paris is"}, {"max_tokens", 5}, {"temperature", 0}, {"logprobs", 3}};
  auto r = post(port(), "/v1/completions", b);
  ASSERT_EQ(r.status, 200) << r.body;
  const json& lp = r.j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  size_t offset = 0;
  for (size_t i = 0; i < 5; ++i) {
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 3u);
    EXPECT_LE(top.size(), 4u);
    double best = -1e30;
    for (auto& [k, v] : top.items()) best = std::max(best, v.get<double>());
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(lp["token_logprobs"][i].get<double>(), best);
    EXPECT_EQ(lp["text_offset"][i], offset);
    std::string t = lp["tokens"][i];
    for (unsigned char ch : t) offset += (ch & 0xC0) != 0x80;
  }
  // Echo, as lm-evaluation-harness sends it: prompt logprobs with null first, then the generated one.
  json e = {{"prompt", "Paris is the capital"}, {"max_tokens", 1}, {"logprobs", 1}, {"echo", true}, {"temperature", 0}};
  auto er = post(port(), "/v1/completions", e);
  ASSERT_EQ(er.status, 200) << er.body;
  const json& elp = er.j["choices"][0]["logprobs"];
  size_t n = tok_->encode("Paris is the capital").size();
  ASSERT_EQ(elp["tokens"].size(), n + 1);
  EXPECT_TRUE(elp["token_logprobs"][0].is_null());
  EXPECT_TRUE(elp["top_logprobs"][0].is_null());
  for (size_t i = 1; i <= n; ++i) EXPECT_LT(elp["token_logprobs"][i].get<double>(), 0.0);
  EXPECT_EQ(er.j["choices"][0]["text"].get<std::string>().rfind("Paris is the capital", 0), 0u);
  // The prompt token after "Paris is" has the logprob it would get as the generated token.
  json two = {{"prompt", "Paris is"}, {"max_tokens", 1}, {"logprobs", 20}, {"temperature", 0}};
  auto tr = post(port(), "/v1/completions", two);
  std::string next = elp["tokens"][tok_->encode("Paris is").size()];
  if (tr.j["choices"][0]["logprobs"]["top_logprobs"][0].contains(next)) {
    EXPECT_EQ(tr.j["choices"][0]["logprobs"]["top_logprobs"][0][next], elp["token_logprobs"][tok_->encode("Paris is").size()]);
  }
}

// Echo of a token-id prompt holding special tokens (a chat-formatted prompt sent as ids): the
// echoed text keeps them, as vLLM's decode of the prompt does, so every text_offset points at its
// token in the text (with the special tokens skipped, "user" sat at offset 0 but was said to be at 12).
TEST_F(ServerApi, EchoedTokenPromptKeepsSpecialTokensSoTextOffsetsIndexTheText) {
  const std::vector<int32_t> ids = tok_->encode("<|im_start|>user\nHi there<|im_end|>\n");
  ASSERT_GE(ids.size(), 5u);
  const std::string prompt_text = tok_->decode(ids, false);
  ASSERT_EQ(prompt_text.rfind("<|im_start|>", 0), 0u) << "the special token is one id";
  for (bool stream : {false, true}) {
    json b = {{"prompt", ids}, {"echo", true}, {"max_tokens", 2}, {"logprobs", 0}, {"temperature", 0}, {"stream", stream}};
    std::string text;
    json offsets = json::array(), tokens = json::array();
    if (stream) {
      auto s = post_stream(port(), "/v1/completions", b);
      ASSERT_TRUE(s.done) << s.raw;
      for (const json& e : s.events) {
        text += e["choices"][0]["text"].get<std::string>();
        for (const json& o : e["choices"][0]["logprobs"]["text_offset"]) offsets.push_back(o);
        for (const json& t : e["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
      }
    } else {
      auto r = post(port(), "/v1/completions", b);
      ASSERT_EQ(r.status, 200) << r.body;
      text = r.j["choices"][0]["text"];
      offsets = r.j["choices"][0]["logprobs"]["text_offset"];
      tokens = r.j["choices"][0]["logprobs"]["tokens"];
    }
    EXPECT_EQ(text.rfind(prompt_text, 0), 0u) << "stream " << stream << ": " << text;
    ASSERT_EQ(offsets.size(), ids.size() + 2);
    // text_offset counts code points (Python's len); the text here is ASCII up to the prompt's end.
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string t = tokens[i];
      EXPECT_EQ(text.substr(offsets[i].get<size_t>(), t.size()), t) << "stream " << stream << ", token " << i;
    }
  }
}

// OpenAI's legacy loglikelihood call (lm-evaluation-harness's `echo=True, max_tokens=0`): the
// prompt and its logprobs alone, the same bits as the prompt part of an echo with max_tokens 1.
TEST_F(ServerApi, EchoWithMaxTokensZeroGivesThePromptAndItsLogprobsAlone) {
  for (const char* prompt : {"Paris is the capital of", "def f(x): return"}) {
    json one = {{"prompt", prompt}, {"max_tokens", 1}, {"logprobs", 2}, {"echo", true}, {"temperature", 0}};
    json zero = one;
    zero["max_tokens"] = 0;
    auto r1 = post(port(), "/v1/completions", one);
    auto r0 = post(port(), "/v1/completions", zero);
    ASSERT_EQ(r1.status, 200) << r1.body;
    ASSERT_EQ(r0.status, 200) << r0.body;
    const json& c0 = r0.j["choices"][0];
    const json& lp1 = r1.j["choices"][0]["logprobs"];
    const size_t n = tok_->encode(prompt).size();
    ASSERT_EQ(lp1["tokens"].size(), n + 1) << "the max_tokens 1 answer shows its generated token";
    EXPECT_EQ(c0["text"], prompt);
    EXPECT_EQ(c0["finish_reason"], "length");
    EXPECT_TRUE(c0["stop_reason"].is_null());
    for (const char* field : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
      json prompt_part(lp1[field].begin(), lp1[field].begin() + long(n));
      EXPECT_EQ(c0["logprobs"][field], prompt_part) << field;
    }
    EXPECT_EQ(r0.j["usage"]["prompt_tokens"], n);
    EXPECT_EQ(r0.j["usage"]["completion_tokens"], 0);
    // Streamed: one chunk with the same choice, then the usage chunk.
    zero["stream"] = true;
    zero["stream_options"] = {{"include_usage", true}};
    auto s = post_stream(port(), "/v1/completions", zero);
    ASSERT_EQ(s.status, 200);
    ASSERT_TRUE(s.done);
    ASSERT_EQ(s.events.size(), 2u) << s.raw;
    const json& sc = s.events[0]["choices"][0];
    EXPECT_EQ(sc["text"], prompt);
    EXPECT_EQ(sc["logprobs"], c0["logprobs"]);
    EXPECT_EQ(sc["finish_reason"], "length");
    EXPECT_EQ(s.events[1]["usage"]["completion_tokens"], 0);
  }
  // Not vacuous: the two prompts' logprobs differ; without echo, max_tokens 0 stays a 400.
  auto a = post(port(), "/v1/completions", {{"prompt", "Paris is"}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}});
  auto b = post(port(), "/v1/completions", {{"prompt", "Rome is"}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}});
  EXPECT_NE(a.j["choices"][0]["logprobs"]["token_logprobs"], b.j["choices"][0]["logprobs"]["token_logprobs"]);
  auto bad = post(port(), "/v1/completions", {{"prompt", "Paris is"}, {"max_tokens", 0}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.j["error"]["param"], "max_tokens");
}

// The engine samples one hidden token for echo with max_tokens 0; when that token is a stop token,
// the answer still says "length", and /metrics must count what the client was told.
TEST_F(ServerApi, EchoOnlyIsCountedByTheFinishReasonItShows) {
  json one = {{"prompt", "Paris is the capital of"}, {"max_tokens", 1}, {"temperature", 0}, {"return_token_ids", true}};
  auto probe = post(port(), "/v1/completions", one);
  ASSERT_EQ(probe.status, 200) << probe.body;
  const json hidden = probe.j["choices"][0]["token_ids"][0];
  one["stop_token_ids"] = json::array({hidden});
  json zero = one;
  zero["max_tokens"] = 0;
  zero["echo"] = true;
  const std::string stop = "finished_reason=\"stop\"", length = "finished_reason=\"length\"";
  const char* name = "verbatim:request_success_total";
  double stops = metric(port(), name, stop), lengths = metric(port(), name, length);
  // Not vacuous: with max_tokens 1 the same token ends the request as "stop", and is counted so.
  auto r1 = post(port(), "/v1/completions", one);
  ASSERT_EQ(r1.status, 200) << r1.body;
  EXPECT_EQ(r1.j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(metric(port(), name, stop), stops + 1);
  auto r0 = post(port(), "/v1/completions", zero);
  ASSERT_EQ(r0.status, 200) << r0.body;
  EXPECT_EQ(r0.j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(metric(port(), name, stop), stops + 1);
  EXPECT_EQ(metric(port(), name, length), lengths + 1);
}

TEST_F(ServerApi, StreamingEqualsNonStreamingAndNeverSplitsUtf8) {
  for (const char* prompt : {"Write a poem in Chinese: 春天", "Emoji party 🎉🎉", "def f(x):"}) {
    json b = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0.9}, {"seed", 3}, {"logprobs", 1},
              {"return_token_ids", true}};
    auto whole = post(port(), "/v1/completions", b);
    ASSERT_EQ(whole.status, 200);
    b["stream"] = true;
    b["stream_options"] = {{"include_usage", true}};
    auto s = post_stream(port(), "/v1/completions", b);
    ASSERT_EQ(s.status, 200);
    ASSERT_TRUE(s.done);
    std::string text;
    json ids = json::array(), lps = json::array();
    for (size_t i = 0; i + 1 < s.events.size(); ++i) {
      const json& c = s.events[i]["choices"][0];
      std::string piece = c["text"];
      EXPECT_TRUE(valid_utf8(piece)) << "chunk " << i;
      text += piece;
      for (auto& t : c["token_ids"]) ids.push_back(t);
      for (auto& l : c["logprobs"]["token_logprobs"]) lps.push_back(l);
      EXPECT_TRUE(s.events[i]["system_fingerprint"].is_string());
    }
    const json& wc = whole.j["choices"][0];
    EXPECT_EQ(text, wc["text"]) << prompt;
    EXPECT_EQ(ids, wc["token_ids"]);
    EXPECT_EQ(lps, wc["logprobs"]["token_logprobs"]);
    EXPECT_EQ(s.events[s.events.size() - 2]["choices"][0]["finish_reason"], "length");
    const json& last = s.events.back();  // include_usage: choices [] and the usage
    EXPECT_TRUE(last["choices"].empty());
    EXPECT_EQ(last["usage"], whole.j["usage"]);
    EXPECT_EQ(last["system_fingerprint"], whole.j["system_fingerprint"]);
  }
}

TEST_F(ServerApi, StopStringsAndStopTokens) {
  json b = {{"prompt", "List: one, two,"}, {"max_tokens", 20}, {"temperature", 0}, {"return_token_ids", true}};
  auto base = post(port(), "/v1/completions", b);
  std::string text = base.j["choices"][0]["text"];
  auto ids = base.j["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  std::string head = tok_->decode({ids.begin(), ids.begin() + 8}, true);
  ASSERT_GT(text.size(), head.size() + 2);
  size_t len = 2;
  std::string rest = text.substr(head.size());
  while (len < rest.size() && (static_cast<unsigned char>(rest[len]) & 0xC0) == 0x80) ++len;
  std::string stop = rest.substr(0, len);
  for (bool stream : {false, true}) {
    json sb = b;
    sb["stop"] = {"never-appears-xyz", stop};
    std::string got;
    json finish, reason;
    if (!stream) {
      auto r = post(port(), "/v1/completions", sb);
      got = r.j["choices"][0]["text"];
      finish = r.j["choices"][0]["finish_reason"];
      reason = r.j["choices"][0]["stop_reason"];
    } else {
      sb["stream"] = true;
      auto s = post_stream(port(), "/v1/completions", sb);
      for (auto& e : s.events) {
        got += e["choices"][0]["text"].get<std::string>();
        if (!e["choices"][0]["finish_reason"].is_null()) {
          finish = e["choices"][0]["finish_reason"];
          reason = e["choices"][0]["stop_reason"];
        }
      }
    }
    EXPECT_EQ(got, text.substr(0, text.find(stop))) << "stream=" << stream;
    EXPECT_EQ(finish, "stop");
    EXPECT_EQ(reason, stop);
  }
  // stop_token_ids: the token counts in token_ids, its text is left out, stop_reason names it.
  json tb = b;
  tb["stop_token_ids"] = {ids[5]};
  auto tr = post(port(), "/v1/completions", tb);
  auto tids = tr.j["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  size_t first = std::find(ids.begin(), ids.end(), ids[5]) - ids.begin();
  ASSERT_EQ(tids.size(), first + 1);
  EXPECT_EQ(tr.j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(tr.j["choices"][0]["stop_reason"], ids[5]);
  EXPECT_EQ(tr.j["choices"][0]["text"], tok_->decode({ids.begin(), ids.begin() + first}, true));
}

// vLLM's semantics: min_tokens holds stop strings off too, and include_stop_str_in_output keeps
// the text of a stop_token_ids token.
TEST_F(ServerApi, MinTokensHoldsOffStopStringsAndStopTokenTextIsKeptOnRequest) {
  json b = {{"prompt", "List: one, two,"}, {"max_tokens", 24}, {"temperature", 0}, {"return_token_ids", true}};
  auto base = post(port(), "/v1/completions", b);
  ASSERT_EQ(base.status, 200) << base.body;
  const std::string text = base.j["choices"][0]["text"];
  auto ids = base.j["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  // A stop string of one byte that occurs in the first 6 tokens' text and again after it.
  const std::string head = tok_->decode({ids.begin(), ids.begin() + 6}, true);
  std::string stop;
  for (char c : head)
    if (static_cast<unsigned char>(c) < 0x80 && text.find(c, head.size()) != std::string::npos) {
      stop = std::string(1, c);
      break;
    }
  ASSERT_FALSE(stop.empty()) << "no byte of the head recurs: " << text;
  json sb = b;
  sb["stop"] = stop;
  auto early = post(port(), "/v1/completions", sb);
  EXPECT_EQ(early.j["choices"][0]["text"], text.substr(0, text.find(stop)));
  sb["min_tokens"] = 6;
  for (bool stream : {false, true}) {
    std::string got;
    json ids_got = json::array();
    if (!stream) {
      auto r = post(port(), "/v1/completions", sb);
      got = r.j["choices"][0]["text"];
      ids_got = r.j["choices"][0]["token_ids"];
    } else {
      json st = sb;
      st["stream"] = true;
      for (auto& e : post_stream(port(), "/v1/completions", st).events) {
        got += e["choices"][0]["text"].get<std::string>();
        for (auto& t : e["choices"][0]["token_ids"]) ids_got.push_back(t);
      }
    }
    EXPECT_EQ(got, text.substr(0, text.find(stop, head.size()))) << "stream=" << stream;
    EXPECT_GT(ids_got.size(), 6u) << "at least min_tokens tokens, then the one completing the stop string";
  }
  // stop_token_ids with include_stop_str_in_output: the stopping token's text stays.
  json tb = b;
  tb["stop_token_ids"] = {ids[5]};
  tb["include_stop_str_in_output"] = true;
  auto tr = post(port(), "/v1/completions", tb);
  size_t first = std::find(ids.begin(), ids.end(), ids[5]) - ids.begin();
  EXPECT_EQ(tr.j["choices"][0]["stop_reason"], ids[5]);
  EXPECT_EQ(tr.j["choices"][0]["text"], tok_->decode({ids.begin(), ids.begin() + first + 1}, true));
}

// OpenAI's stream_options.include_usage: every chunk before the usage chunk says "usage": null.
TEST_F(ServerApi, IncludeUsageChunksCarryUsageNullUntilTheLast) {
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    json b = {{"max_tokens", 4}, {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    if (std::string(route) == "/v1/completions") b["prompt"] = "Hi";
    else b["messages"] = {{{"role", "user"}, {"content", "Hi"}}};
    auto s = post_stream(port(), route, b);
    ASSERT_TRUE(s.done) << route;
    ASSERT_GE(s.events.size(), 2u);
    for (size_t i = 0; i + 1 < s.events.size(); ++i) {
      ASSERT_TRUE(s.events[i].contains("usage")) << route << " chunk " << i;
      EXPECT_TRUE(s.events[i]["usage"].is_null()) << route << " chunk " << i;
    }
    EXPECT_TRUE(s.events.back()["usage"].is_object()) << route;
    EXPECT_TRUE(s.events.back()["choices"].empty()) << route;
    b.erase("stream_options");  // without it, no usage key at all
    for (auto& e : post_stream(port(), route, b).events) EXPECT_FALSE(e.contains("usage")) << route;
  }
}

// vLLM's stream_options.continuous_usage_stats: every chunk carries its choice's usage so far,
// growing to the final usage chunk's; a chat choice's opening role chunk counts no tokens.
TEST_F(ServerApi, ContinuousUsageStatsPutUsageOnEveryChunk) {
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    json b = {{"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true}, {"stream", true},
              {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
    if (std::string(route) == "/v1/completions") b["prompt"] = "Hi there";
    else b["messages"] = {{{"role", "user"}, {"content", "Hi there"}}};
    auto s = post_stream(port(), route, b);
    ASSERT_TRUE(s.done) << route;
    ASSERT_GE(s.events.size(), 3u) << route;
    const json& final_usage = s.events.back()["usage"];
    ASSERT_TRUE(final_usage.is_object()) << route;
    EXPECT_EQ(final_usage["completion_tokens"], 5) << route;
    int64_t last = -1;
    for (size_t i = 0; i + 1 < s.events.size(); ++i) {
      const json& u = s.events[i]["usage"];
      ASSERT_TRUE(u.is_object()) << route << " chunk " << i;
      EXPECT_EQ(u["prompt_tokens"], final_usage["prompt_tokens"]) << route << " chunk " << i;
      int64_t c = u["completion_tokens"];
      EXPECT_GE(c, last) << route << " chunk " << i;
      EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int64_t>() + c) << route;
      last = c;
    }
    EXPECT_EQ(last, 5) << route << ": the last content chunk counts every token";
    if (std::string(route) == "/v1/chat/completions") EXPECT_EQ(s.events[0]["usage"]["completion_tokens"], 0);
    else EXPECT_GE(s.events[0]["usage"]["completion_tokens"], 1);
  }
}

// A request that states no body length has none (RFC 9112): answered at once, not after the
// read timeout (httplib would wait 30 s for a body), with the route's status.
TEST_F(ServerApi, BodylessRequestsAreAnsweredAtOnce) {
  struct Case {
    const char* method;
    const char* path;
    const char* status;
  };
  for (const Case& c : {Case{"POST", "/reset_prefix_cache", " 200 "}, Case{"POST", "/health", " 405 "},
                        Case{"PUT", "/v1/chat/completions", " 405 "}, Case{"POST", "/v1/completions", " 400 "},
                        Case{"DELETE", "/nowhere", " 404 "}}) {
    RawConnection conn(port());
    auto t0 = std::chrono::steady_clock::now();
    conn.send_raw(std::string(c.method) + " " + c.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    std::string got = conn.read_until("\r\n\r\n", 1, 10);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(got.find(c.status), std::string::npos) << c.method << " " << c.path << ": " << got;
    EXPECT_LT(s, 5.0) << c.method << " " << c.path;
  }
  // A form-encoded body (curl -d without -H) past httplib's 8 KiB form limit: the message says why.
  json big = {{"prompt", std::string(9000, 'a')}, {"max_tokens", 1}};
  auto r = post_raw(port(), "/v1/completions", big.dump(), {}, "application/x-www-form-urlencoded");
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.j["error"]["message"].get<std::string>().find("Content-Type: application/json"), std::string::npos) << r.body;
}

TEST_F(ServerApi, ChatCompletions) {
  json b = {{"model", "tiny-text"},
            {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello!"}}}},
            {"max_completion_tokens", 6},
            {"temperature", 0},
            {"logprobs", true},
            {"top_logprobs", 2},
            {"return_token_ids", true},
            {"chat_template_kwargs", {{"enable_thinking", false}}}};
  auto r = post(port(), "/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["object"], "chat.completion");
  EXPECT_EQ(r.j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const json& c = r.j["choices"][0];
  EXPECT_EQ(c["message"]["role"], "assistant");
  auto ids = c["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(c["message"]["content"], tok_->decode(ids, true));
  ASSERT_EQ(c["logprobs"]["content"].size(), 6u);
  for (const auto& e : c["logprobs"]["content"]) {
    EXPECT_EQ(e["top_logprobs"].size(), 2u);
    EXPECT_TRUE(e["bytes"].is_array());
    EXPECT_EQ(e["logprob"], e["top_logprobs"][0]["logprob"]) << "greedy picks the top token";
  }
  std::vector<ChatMessage> msgs = {{"system", "Be brief.", std::nullopt}, {"user", "Hello!", std::nullopt}};
  EXPECT_EQ(r.j["prompt_token_ids"].get<std::vector<int32_t>>(), tok_->encode(render_chat(msgs, true, false)));
  b["chat_template_kwargs"]["enable_thinking"] = true;
  auto thinking = post(port(), "/v1/chat/completions", b);
  EXPECT_EQ(thinking.j["prompt_token_ids"].get<std::vector<int32_t>>(), tok_->encode(render_chat(msgs, true, true)));
  EXPECT_NE(thinking.j["prompt_token_ids"], r.j["prompt_token_ids"]);

  b["chat_template_kwargs"]["enable_thinking"] = false;
  b["stream"] = true;
  auto s = post_stream(port(), "/v1/chat/completions", b);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  json sids = json::array();
  for (auto& e : s.events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    for (auto& t : e["choices"][0]["token_ids"]) sids.push_back(t);
  }
  EXPECT_EQ(content, c["message"]["content"]);
  EXPECT_EQ(sids, c["token_ids"]);
  EXPECT_EQ(s.events.back()["choices"][0]["finish_reason"], "length");

  // No max_tokens: the rest of the context (--max-model-len 256) bounds the answer.
  json open = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"temperature", 0}, {"ignore_eos", true}};
  auto o = post(port(), "/v1/chat/completions", open);
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(o.j["usage"]["total_tokens"], 256);
}

struct BadCase {
  const char* route;
  std::string body;
  const char* param;  // expected error.param (nullptr: null)
};

TEST_F(ServerApi, BadInputIs400WithOpenAiErrorJson) {
  const std::string huge(20000, 'x');
  std::vector<BadCase> cases = {
      {"/v1/completions", "{not json", "body"},
      {"/v1/completions", "[1, 2, 3]", "body"},
      {"/v1/completions", "", "body"},
      {"/v1/completions", R"({"max_tokens": 5})", "prompt"},
      {"/v1/completions", R"({"prompt": ""})", "prompt"},
      {"/v1/completions", R"({"prompt": []})", "prompt"},
      {"/v1/completions", R"({"prompt": [[]]})", "prompt"},
      {"/v1/completions", R"({"prompt": 42})", "prompt"},
      {"/v1/completions", R"({"prompt": [1, "a"]})", "prompt"},
      {"/v1/completions", R"({"prompt": [1, 2, 999999]})", "prompt"},
      {"/v1/completions", R"({"prompt": [-1]})", "prompt"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": "ten"})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": 0})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": -3})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": 2.5})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": 100000})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "temperature": -0.5})", "temperature"},
      {"/v1/completions", R"({"prompt": "hi", "temperature": "hot"})", "temperature"},
      {"/v1/completions", R"({"prompt": "hi", "top_p": 0})", "top_p"},
      {"/v1/completions", R"({"prompt": "hi", "top_p": 1.5})", "top_p"},
      {"/v1/completions", R"({"prompt": "hi", "top_k": -7})", "top_k"},
      {"/v1/completions", R"({"prompt": "hi", "min_p": 2})", "min_p"},
      {"/v1/completions", R"({"prompt": "hi", "seed": "abc"})", "seed"},
      {"/v1/completions", R"({"prompt": "hi", "n": 0})", "n"},
      {"/v1/completions", R"({"prompt": "hi", "logprobs": 21})", "logprobs"},
      {"/v1/completions", R"({"prompt": "hi", "logprobs": true})", "logprobs"},
      {"/v1/completions", R"({"prompt": "hi", "stream": "yes"})", "stream"},
      {"/v1/completions", R"({"prompt": "hi", "stream_options": {"include_usage": true}})", "stream_options"},
      {"/v1/completions", R"({"prompt": "hi", "stop": 5})", "stop"},
      {"/v1/completions", R"({"prompt": "hi", "stop_token_ids": [9999999]})", "stop_token_ids"},
      {"/v1/completions", R"({"prompt": "hi", "min_tokens": 9, "max_tokens": 3})", "min_tokens"},
      {"/v1/completions", R"({"prompt": "hi", "echo": 1})", "echo"},
      {"/v1/completions", R"({"prompt": "hi", "frequency_penalty": 0.5})", "frequency_penalty"},
      {"/v1/completions", R"({"prompt": "hi", "model": 7})", "model"},
      {"/v1/completions", R"({"prompt": "hi", "stop": {"x": ")" + huge + R"("}})", "stop"},
      {"/v1/completions", R"({"prompt": "hi", "temperature": ")" + huge + R"("})", "temperature"},
      {"/v1/chat/completions", R"({"model": "tiny-text"})", "messages"},
      {"/v1/chat/completions", R"({"messages": []})", "messages"},
      {"/v1/chat/completions", R"({"messages": "hi"})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})", "top_logprobs"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 50})", "top_logprobs"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": "no"}})", "chat_template_kwargs.enable_thinking"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": -1})", "max_completion_tokens"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]})", "tools"},
      {"/tokenize", R"({"prompt": 5})", "prompt"},
      {"/detokenize", R"({"tokens": ["a"]})", "tokens"},
      {"/detokenize", R"({"tokens": [99999999]})", "tokens"},
  };
  for (const BadCase& c : cases) {
    auto r = post_raw(port(), c.route, c.body);
    std::string shown = c.body.substr(0, 80);
    ASSERT_EQ(r.status, 400) << c.route << " " << shown << " -> " << r.body.substr(0, 300);
    ASSERT_TRUE(r.j.is_object() && r.j.contains("error")) << r.body.substr(0, 300);
    const json& e = r.j["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["code"], 400);
    if (c.param) {
      EXPECT_EQ(e["param"], c.param) << shown << " -> " << e.dump();
    }
    EXPECT_LT(e["message"].get<std::string>().size(), 400u) << "never echo the whole input: " << shown;
  }
  EXPECT_EQ(get(port(), "/health").status, 200) << "the server survived every bad request";
  EXPECT_EQ(post(port(), "/v1/completions", {{"prompt", "ok"}, {"max_tokens", 1}}).status, 200);
}

TEST_F(ServerApi, ContextLimitsSayHowManyTokens) {
  std::vector<int> long_prompt(70, 5), fits(60, 5);
  auto r = post(ids_->port(), "/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 1}}, kKey);
  ASSERT_EQ(r.status, 400);
  EXPECT_NE(r.j["error"]["message"].get<std::string>().find("70"), std::string::npos) << r.body;
  EXPECT_NE(r.j["error"]["message"].get<std::string>().find("64"), std::string::npos) << r.body;
  auto m = post(ids_->port(), "/v1/completions", {{"prompt", fits}, {"max_tokens", 10}}, kKey);
  ASSERT_EQ(m.status, 400);
  EXPECT_EQ(m.j["error"]["param"], "max_tokens");
  EXPECT_NE(m.j["error"]["message"].get<std::string>().find("70"), std::string::npos) << m.body;
  EXPECT_EQ(post(ids_->port(), "/v1/completions", {{"prompt", fits}, {"max_tokens", 4}}, kKey).status, 200);
  auto text = post(ids_->port(), "/v1/completions", {{"prompt", "text"}}, kKey);
  EXPECT_EQ(text.status, 400) << "no tokenizer: text prompts are refused";
  auto chat = post(ids_->port(), "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}}, kKey);
  EXPECT_EQ(chat.status, 400);
  auto ok = post(ids_->port(), "/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 2}}, kKey);
  ASSERT_EQ(ok.status, 200);
  EXPECT_FALSE(ok.j["choices"][0].contains("text"));
  EXPECT_EQ(ok.j["choices"][0]["token_ids"].size(), 2u) << "without a tokenizer token_ids always come";
  // Chat names the field the client sent.
  for (const char* f : {"max_tokens", "max_completion_tokens"}) {
    auto c = post(port(), "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {f, 1000}});
    ASSERT_EQ(c.status, 400) << c.body;
    EXPECT_EQ(c.j["error"]["param"], f);
  }
}

// A text prompt is tokenized only as far as the length check needs: up to twice the context the
// message gives the exact count; past that it says "more than", so 32 MiB of text is refused
// without tokenizing it all (before, a 60 MiB prompt took a handler thread 28 s of CPU).
TEST_F(ServerApi, TextPromptsPastTheContextAreCountedOnlyAsFarAsNeeded) {
  std::string near;  // between the context (256) and twice it (512): the exact count
  while (tok_->encode(near).size() < 300) near += " word";
  const std::string exact = std::to_string(tok_->encode(near).size());
  auto r = post(port(), "/v1/completions", {{"prompt", near}, {"max_tokens", 1}});
  ASSERT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_NE(r.j["error"]["message"].get<std::string>().find("your prompt is " + exact + " tokens long"), std::string::npos)
      << r.body;
  std::string huge;
  while (huge.size() < (32u << 20)) huge += " word";
  for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
    const json body = std::string(route) == "/v1/completions"
                          ? json{{"prompt", huge}, {"max_tokens", 1}}
                          : json{{"messages", {{{"role", "user"}, {"content", huge}}}}, {"max_tokens", 1}};
    auto h = post(port(), route, body);
    ASSERT_EQ(h.status, 400) << route << ": " << h.body.substr(0, 300);
    EXPECT_NE(h.j["error"]["message"].get<std::string>().find("your prompt is more than 512 tokens long"),
              std::string::npos)
        << h.body;
    EXPECT_EQ(h.j["error"]["param"], std::string(route) == "/v1/completions" ? "prompt" : "messages");
  }
  EXPECT_EQ(post(port(), "/v1/completions", {{"prompt", "ok"}, {"max_tokens", 1}}).status, 200);
}

TEST_F(ServerApi, ApiKeyIs401AndOpenRoutesStayOpen) {
  int p = ids_->port();
  json b = {{"prompt", {1, 2}}, {"max_tokens", 1}};
  for (const httplib::Headers& h : {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong"}},
                                    httplib::Headers{{"Authorization", "sekret"}}}) {
    auto r = post(p, "/v1/completions", b, h);
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.j["error"]["code"], 401);
    EXPECT_EQ(get(p, "/v1/models", h).status, 401);
  }
  EXPECT_EQ(post(p, "/v1/completions", b, kKey).status, 200);
  EXPECT_EQ(get(p, "/v1/models", kKey).status, 200);
  EXPECT_EQ(get(p, "/health").status, 200);
  EXPECT_EQ(get(p, "/metrics").status, 200);
  EXPECT_EQ(get(p, "/version").status, 200);
  // Resetting the prefix cache changes server state: it needs the key too.
  EXPECT_EQ(post(p, "/reset_prefix_cache", json::object()).status, 401);
  EXPECT_EQ(post(p, "/reset_prefix_cache", json::object(), kKey).status, 200);
}

TEST_F(ServerApi, UnknownRoutesAndModelsAre404) {
  auto r = get(port(), "/v1/nothing-here");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.j["error"]["code"], 404);
  EXPECT_EQ(post(port(), "/v2/completions", {{"prompt", "x"}}).status, 404);
  auto m = post(port(), "/v1/completions", {{"model", "gpt-4"}, {"prompt", "x"}});
  EXPECT_EQ(m.status, 404);
  EXPECT_EQ(m.j["error"]["param"], "model");
  EXPECT_EQ(post(port(), "/v1/chat/completions", {{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}).status, 404);
  EXPECT_EQ(get(port(), "/v1/completions").status, 405);
}

// A `model` that is not a string is a 400 naming it, as vLLM's schema answers; it used to be
// ignored, so a client's bug ({"model": ["tiny-text"]}) went unseen. null means "not given".
TEST_F(ServerApi, ANonStringModelIs400) {
  for (const json& bad : {json(5), json::array({"tiny-text"}), json(true), json::object()}) {
    auto r = post(port(), "/v1/completions", {{"model", bad}, {"prompt", "x"}, {"max_tokens", 1}});
    EXPECT_EQ(r.status, 400) << bad.dump() << ": " << r.body;
    EXPECT_EQ(r.j["error"]["param"], "model") << r.body;
  }
  EXPECT_EQ(post(port(), "/v1/completions", {{"model", nullptr}, {"prompt", "x"}, {"max_tokens", 1}}).status, 200);
  EXPECT_EQ(post(port(), "/v1/completions", {{"model", "tiny-text"}, {"prompt", "x"}, {"max_tokens", 1}}).status, 200);
}

// --served-model-name with several names, as vLLM's scripts pass it: /v1/models lists each, a
// request may name any, answers and /metrics carry the first.
TEST(ServerApiNames, SeveralServedModelNames) {
  ServerProcess s({fixture("qwen3-tiny-tied"), "--served-model-name", "main-name", "alias"});
  auto models = get(s.port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  ASSERT_EQ(models.j["data"].size(), 2u) << models.j.dump();
  EXPECT_EQ(models.j["data"][0]["id"], "main-name");
  EXPECT_EQ(models.j["data"][1]["id"], "alias");
  EXPECT_EQ(get(s.port(), "/v1/models/alias").j["id"], "alias");
  EXPECT_EQ(get(s.port(), "/v1/models/other").status, 404);
  for (const char* name : {"main-name", "alias"}) {
    auto r = post(s.port(), "/v1/completions", {{"model", name}, {"prompt", {1, 2, 3}}, {"max_tokens", 2}});
    ASSERT_EQ(r.status, 200) << name << " " << r.j.dump();
    EXPECT_EQ(r.j["model"], "main-name");
  }
  EXPECT_EQ(post(s.port(), "/v1/completions", {{"model", "other"}, {"prompt", {1, 2, 3}}, {"max_tokens", 2}}).status, 404);
  EXPECT_EQ(metric(s.port(), "verbatim:generation_tokens_total", "model_name=\"main-name\""), 4);
}

}  // namespace
}  // namespace verbatim::test
