// The server's pieces without HTTP: request parsing (types, ranges, defaults) and ChoiceState
// (UTF-8-safe streaming text, stop strings across token boundaries, stop tokens), with the real
// Qwen3 tokenizer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/choice_state.h"
#include "server/protocol.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::server {
namespace {

json parse(const std::string& s) { return parse_body(s); }

// True when every UTF-8 sequence in s is complete (no character split at either end).
bool whole_characters(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(Protocol, CompletionDefaultsAndLaxIntegers) {
  SamplingDefaults d;
  auto r = parse_completion_request(parse(R"({"prompt": "x"})"), d);
  EXPECT_EQ(*r.max_tokens, 16);
  EXPECT_EQ(r.params.temperature, 1.0f);
  EXPECT_EQ(r.params.logprobs, -1);
  EXPECT_FALSE(r.params.seed.has_value());
  auto f = parse_completion_request(parse(R"({"prompt": [1, 2], "max_tokens": 16.0, "top_k": -1, "seed": -1})"), d);
  EXPECT_EQ(*f.max_tokens, 16);
  EXPECT_EQ(f.params.top_k, 0) << "-1 means off";
  EXPECT_EQ(*f.params.seed, ~uint64_t(0)) << "negative seeds wrap, as in vLLM";
  d.temperature = 0.6f;
  d.top_k = 20;
  auto g = parse_completion_request(parse(R"({"prompt": "x"})"), d);
  EXPECT_EQ(g.params.temperature, 0.6f) << "generation_config.json defaults apply";
  EXPECT_EQ(g.params.top_k, 20);
  auto e = parse_completion_request(parse(R"({"prompt": "x", "echo": true, "logprobs": 0})"), SamplingDefaults{});
  EXPECT_TRUE(e.params.prompt_logprobs);
  EXPECT_EQ(e.params.logprobs, 0);
  EXPECT_FALSE(e.echo_only);
  // Echo with max_tokens 0 (OpenAI's legacy loglikelihood call): the engine samples one hidden token.
  auto z = parse_completion_request(parse(R"({"prompt": "x", "echo": true, "logprobs": 1, "max_tokens": 0})"), d);
  EXPECT_TRUE(z.echo_only);
  EXPECT_EQ(*z.max_tokens, 1);
  EXPECT_EQ(z.params.max_tokens, 1);
  EXPECT_TRUE(z.params.prompt_logprobs);
  for (const char* body : {R"({"prompt": "x", "max_tokens": 0})", R"({"prompt": "x", "echo": false, "max_tokens": 0})",
                           R"({"prompt": "x", "echo": true, "max_tokens": 0, "min_tokens": 1})"}) {
    try {
      parse_completion_request(parse(body), d);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const InvalidRequest& err) {
      EXPECT_NE(std::string(err.what()).find(std::string(body).find("min_tokens") != std::string::npos
                                                 ? "must be <= max_tokens (got 1 > 0)"
                                                 : "must be at least 1 unless 'echo' is true (got 0)"),
                std::string::npos)
          << err.what();
    }
  }
}

// Ranges are checked on the value sent, then narrowed to float keeping its meaning: a tiny top_p is
// still > 0 (the top token only), a huge temperature is still finite; out-of-range values still fail.
TEST(Protocol, SamplingValuesAreCheckedBeforeNarrowingToFloat) {
  auto r = parse_completion_request(parse(R"({"prompt": "x", "top_p": 1e-300, "temperature": 1e300, "min_p": 1e-300})"),
                                    SamplingDefaults{});
  EXPECT_GT(r.params.top_p, 0.0f);
  EXPECT_EQ(r.params.top_p, std::numeric_limits<float>::min());
  EXPECT_TRUE(std::isfinite(r.params.temperature));
  EXPECT_EQ(r.params.temperature, std::numeric_limits<float>::max());
  EXPECT_GT(r.params.min_p, 0.0f);
  auto plain = parse_completion_request(parse(R"({"prompt": "x", "top_p": 0.9, "temperature": 0.7})"), SamplingDefaults{});
  EXPECT_EQ(plain.params.top_p, 0.9f);
  EXPECT_EQ(plain.params.temperature, 0.7f);
  for (const char* body : {R"({"prompt": "x", "top_p": 0})", R"({"prompt": "x", "top_p": 1.0000001})",
                           R"({"prompt": "x", "temperature": -1e-300})", R"({"prompt": "x", "min_p": 1.0000001})"}) {
    try {
      parse_completion_request(parse(body), SamplingDefaults{});
      ADD_FAILURE() << "accepted: " << body;
    } catch (const InvalidRequest&) {
    }
  }
}

// Content as a list of text parts: the non-empty parts joined by newlines, as vLLM does (an empty
// part added a separator, so the prompt differed from vLLM's); a text part without "text" is a 400.
TEST(Protocol, ContentPartsJoinTheirNonEmptyTexts) {
  // Built as JSON values (GCC 12's -Wrestrict misfires on chains of std::string + here).
  auto content_of = [](const std::vector<json>& parts) {
    json body = {{"messages", {{{"role", "user"}, {"content", parts}}}}};
    return parse_chat_request(body, SamplingDefaults{}).messages.at(0).content;
  };
  auto part = [](const char* t) { return json{{"type", "text"}, {"text", t}}; };
  EXPECT_EQ(content_of({part("A"), part(""), part("B")}), "A\nB");
  EXPECT_EQ(content_of({part("A"), part("")}), "A");
  EXPECT_EQ(content_of({part(""), part("B")}), "B");
  EXPECT_EQ(content_of({part("A"), part("B")}), "A\nB");
  EXPECT_EQ(content_of({}), "");
  try {
    content_of({json{{"type", "text"}}});
    ADD_FAILURE() << "a text part without text accepted";
  } catch (const InvalidRequest& e) {
    EXPECT_EQ(e.param(), "messages[0].content");
  }
}

// stream_options as vLLM reads it: its StreamOptions defaults include_usage to true, so an object
// that leaves it out (only continuous_usage_stats, or {}) asks for usage; {} without streaming is
// accepted (vLLM's check is on a truthy value), a non-empty one is still refused.
TEST(Protocol, StreamOptionsDefaultToIncludeUsageAsInVllm) {
  auto req = [](const char* body) { return parse_completion_request(parse(body), SamplingDefaults{}); };
  EXPECT_TRUE(req(R"({"prompt": "x", "stream": true, "stream_options": {}})").include_usage);
  auto c = req(R"({"prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": true}})");
  EXPECT_TRUE(c.include_usage);
  EXPECT_TRUE(c.continuous_usage_stats);
  EXPECT_FALSE(req(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": false}})").include_usage);
  EXPECT_FALSE(req(R"({"prompt": "x", "stream": true})").include_usage);
  EXPECT_FALSE(req(R"({"prompt": "x", "stream": true, "stream_options": null})").include_usage);
  EXPECT_FALSE(req(R"({"prompt": "x", "stream_options": {}})").include_usage);
  auto chat = parse_chat_request(
      parse(R"({"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": {}})"), SamplingDefaults{});
  EXPECT_TRUE(chat.include_usage);
  try {
    req(R"({"prompt": "x", "stream_options": {"include_usage": false}})");
    ADD_FAILURE() << "non-empty stream_options without stream accepted";
  } catch (const InvalidRequest& e) {
    EXPECT_EQ(e.param(), "stream_options");
  }
}

// Chat's top_logprobs: vLLM refuses only a value above 0 without logprobs; 0 is the neutral
// value (some clients always send it) and asks for no logprobs at all.
TEST(Protocol, ChatTopLogprobsZeroNeedsNoLogprobs) {
  auto chat = [](const std::string& extra) {
    return parse_chat_request(parse(R"({"messages": [{"role": "user", "content": "x"}], )" + extra + "}"),
                              SamplingDefaults{});
  };
  auto z = chat(R"("top_logprobs": 0)");
  EXPECT_FALSE(z.logprobs);
  EXPECT_EQ(z.params.logprobs, -1) << "no logprobs asked for";
  auto f = chat(R"("logprobs": false, "top_logprobs": 0)");
  EXPECT_EQ(f.params.logprobs, -1);
  auto t = chat(R"("logprobs": true, "top_logprobs": 0)");
  EXPECT_EQ(t.params.logprobs, 0);
  try {
    chat(R"("top_logprobs": 1)");
    ADD_FAILURE() << "top_logprobs 1 without logprobs accepted";
  } catch (const InvalidRequest& e) {
    EXPECT_EQ(e.param(), "top_logprobs");
  }
}

TEST(Protocol, ErrorsNameTheParam) {
  auto param_of = [](const std::string& body) {
    try {
      parse_chat_request(parse(body), SamplingDefaults{});
    } catch (const InvalidRequest& e) {
      return e.param();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "n": 1.5})"), "n");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"), "messages[0].content");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]})"), "(accepted)");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 0})"), "(accepted)");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 1})"), "presence_penalty");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "unknown_field": 1})"), "(accepted)");
  // vLLM's extensions that would change the output are refused, not ignored; neutral values pass.
  for (const char* f : {R"("guided_choice": ["a", "b"])", R"("guided_json": {})", R"("prompt_logprobs": 1)",
                        R"("allowed_token_ids": [1])", R"("bad_words": ["x"])", R"("tool_choice": "required")",
                        R"("chat_template": "{{ x }}")", R"("truncate_prompt_tokens": 8)", R"("echo": true)",
                        R"("priority": 1)", R"("return_tokens_as_token_ids": true)", R"("prompt_embeds": "AAAA")"}) {
    std::string name = std::string(f).substr(1, std::string(f).find('"', 1) - 1);
    EXPECT_EQ(param_of(std::string(R"({"messages": [{"role": "user", "content": "x"}], )") + f + "}"), name) << f;
  }
  for (const char* f : {R"("guided_choice": null)", R"("allowed_token_ids": [])", R"("tool_choice": "none")",
                        R"("priority": 0)", R"("echo": false)"})
    EXPECT_EQ(param_of(std::string(R"({"messages": [{"role": "user", "content": "x"}], )") + f + "}"), "(accepted)") << f;
  // A history with tool calls would be rendered without them: refused as tools are.
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                         {"role": "tool", "content": "sunny"}]})"),
            "messages[1].tool_calls");
  // Integers past int64 are refused, not wrapped; the range message names both ends.
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "seed": 18446744073709551615})"), "seed");
  try {
    parse_completion_request(parse(R"({"prompt": "x", "max_tokens": 2147483648})"), SamplingDefaults{});
    ADD_FAILURE() << "max_tokens past int32 accepted";
  } catch (const InvalidRequest& e) {
    EXPECT_NE(std::string(e.what()).find("between 0 and 2147483647"), std::string::npos) << e.what();
  }
  EXPECT_EQ(excerpt(std::string(500, 'a')).size(), 43u);
  // Stray UTF-8 continuation bytes count too (fuzz_protocol finding): at most 4 bytes a character.
  EXPECT_LE(excerpt(std::string(500, '\x82')).size(), 4u * 40 + 3);
  EXPECT_EQ(excerpt(std::string(500, '\x82')).substr(160), "...");
  EXPECT_EQ(excerpt(std::string(30, 'a') + std::string(500, '\x82')).size(), 30u + 3 + 10 * 4 + 3);
  EXPECT_EQ(excerpt("\xe2\x82\xac" + std::string(60, 'b')), "\xe2\x82\xac" + std::string(39, 'b') + "...");
}

class ChoiceStateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = Tokenizer::load(verbatim::test::tokenizer_dir()).release(); }
  static void TearDownTestSuite() { delete tok_; }
  static RequestUpdate update(const std::vector<int32_t>& ids, bool finished = false,
                              FinishReason reason = FinishReason::None) {
    RequestUpdate u;
    for (int32_t id : ids) u.tokens.push_back({id, -1.0f, {}});
    u.finished = finished;
    u.reason = reason;
    return u;
  }
  static Tokenizer* tok_;
};
Tokenizer* ChoiceStateTest::tok_ = nullptr;

TEST_F(ChoiceStateTest, StreamedTextIsWholeCharactersAndEqualsTheWholeText) {
  std::string text = "Snow 雪 and 🎉 emoji, naïve café, done.";
  std::vector<int32_t> ids = tok_->encode(text);
  ChoiceState one(0, tok_, {});
  one.apply(update(ids, true, FinishReason::Length));
  EXPECT_EQ(one.text(), text);
  ChoiceState streamed(0, tok_, {});
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto d = streamed.apply(update({ids[i]}, i + 1 == ids.size(), FinishReason::Length));
    EXPECT_TRUE(whole_characters(d.text)) << "chunk " << i << " splits a character";
    joined += d.text;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(streamed.finish_reason(), FinishReason::Length);
}

TEST_F(ChoiceStateTest, StopStringAcrossTokensCutsTheSameWhateverTheGrouping) {
  std::string text = "alpha beta gamma delta epsilon";
  std::vector<int32_t> ids = tok_->encode(text);
  ChoiceConfig cfg;
  cfg.stop = {"ma del"};  // spans the tokens of "gamma" and " delta"
  for (size_t group : {size_t(1), size_t(2), ids.size()}) {
    ChoiceState s(0, tok_, cfg);
    std::string joined;
    for (size_t i = 0; i < ids.size(); i += group) {
      std::vector<int32_t> part(ids.begin() + i, ids.begin() + std::min(ids.size(), i + group));
      joined += s.apply(update(part)).text;
    }
    EXPECT_TRUE(s.finished());
    EXPECT_TRUE(s.needs_abort()) << "the engine still runs it";
    EXPECT_EQ(s.text(), "alpha beta gam");
    EXPECT_EQ(joined, "alpha beta gam") << "group " << group;
    EXPECT_EQ(*s.stop_string(), "ma del");
    EXPECT_EQ(s.finish_reason(), FinishReason::Stop);
    size_t upto = tok_->encode("alpha beta gamma delta").size();
    EXPECT_EQ(s.token_ids().size(), upto) << "tokens up to the one completing the stop string";
  }
  cfg.include_stop_str_in_output = true;
  ChoiceState inc(0, tok_, cfg);
  inc.apply(update(ids));
  EXPECT_EQ(inc.text(), "alpha beta gamma del");
}

TEST_F(ChoiceStateTest, StopTokenCountsButItsTextIsLeftOut) {
  std::vector<int32_t> ids = tok_->encode("Hello there");
  int32_t eos = *tok_->token_id("<|im_end|>");
  ids.push_back(eos);
  ChoiceConfig cfg;
  cfg.skip_special_tokens = false;
  cfg.stop_token_ids = {eos};
  ChoiceState s(0, tok_, cfg);
  s.apply(update(ids, true, FinishReason::Stop));
  EXPECT_EQ(s.text(), "Hello there");
  EXPECT_EQ(s.token_ids().back(), eos);
  EXPECT_EQ(*s.stop_token(), eos);
  EXPECT_FALSE(s.needs_abort());
  // include_stop_str_in_output keeps the stopping token's text too (vLLM).
  cfg.include_stop_str_in_output = true;
  ChoiceState inc(0, tok_, cfg);
  inc.apply(update(ids, true, FinishReason::Stop));
  EXPECT_EQ(inc.text(), "Hello there<|im_end|>");
  EXPECT_EQ(*inc.stop_token(), eos);
}

// min_tokens holds stop strings off: a match must end after the first min_tokens tokens' text
// (it may start inside it), as vLLM's stop_check_offset; whatever the grouping of the updates.
TEST_F(ChoiceStateTest, MinTokensHoldsOffStopStringsUntilTheirTextIsPast) {
  const std::string text = "alpha beta gamma delta epsilon";
  std::vector<int32_t> ids = tok_->encode(text);
  ASSERT_GE(ids.size(), 5u);
  const std::string head = tok_->decode({ids.begin(), ids.begin() + 2}, true);
  ASSERT_EQ(head, "alpha beta") << "the cases below assume these two tokens";
  struct Case {
    std::string stop;
    int min_tokens;
    std::string want;
  };
  const std::vector<Case> cases = {
      {" ", 0, "alpha"},                                           // the first space
      {" ", 2, text.substr(0, text.find(' ', head.size()))},       // the first space past the head
      {"a g", 2, text.substr(0, text.find("a g"))},                // starts in the head, ends past it
      {"lpha", 2, text},                                           // only inside the head: never
  };
  for (const Case& c : cases)
    for (size_t group : {size_t(1), size_t(3), ids.size()}) {
      ChoiceConfig cfg;
      cfg.stop = {c.stop};
      cfg.min_tokens = c.min_tokens;
      ChoiceState s(0, tok_, cfg);
      std::string joined;
      for (size_t i = 0; i < ids.size() && !s.finished(); i += group) {
        std::vector<int32_t> part(ids.begin() + i, ids.begin() + std::min(ids.size(), i + group));
        joined += s.apply(update(part, i + group >= ids.size(), FinishReason::Length)).text;
      }
      EXPECT_EQ(s.text(), c.want) << "stop '" << c.stop << "', min_tokens " << c.min_tokens << ", group " << group;
      EXPECT_EQ(joined, c.want) << "streamed, group " << group;
    }
}

}  // namespace
}  // namespace verbatim::server
