// render_chat against the Qwen3 template: HF's own renderings (fixtures/chat_template_cases.json,
// text and ids) and, for the message kinds those lack, transformers' apply_chat_template on the
// reference machine (fixtures/chat_template_extra_cases.json, made by make_chat_template_extra_cases.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace verbatim {
namespace {
using nlohmann::json;

const Tokenizer& qwen() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::load(test::tokenizer_dir());
  return *tok;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<ChatMessage> messages_of(const json& list) {
  std::vector<ChatMessage> out;
  for (const json& m : list) {
    ChatMessage msg{m["role"], m["content"], std::nullopt};
    if (m.contains("reasoning_content")) msg.reasoning_content = m["reasoning_content"].get<std::string>();
    out.push_back(std::move(msg));
  }
  return out;
}

TEST(ChatTemplate, MatchesEveryHfCaseTextAndIds) {
  const json cases = read_json(test::fixture("chat_template_cases.json"));
  ASSERT_EQ(cases.size(), 8u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    const std::string text = render_chat(messages_of(c["messages"]), c["add_generation_prompt"], c["enable_thinking"]);
    EXPECT_EQ(text, c["text"].get<std::string>());
    EXPECT_EQ(qwen().encode(text), c["ids"].get<std::vector<int32_t>>());
  }
}

TEST(ChatTemplate, MatchesHfOnToolsReasoningAndOddRoles) {
  const json cases = read_json(test::fixture("chat_template_extra_cases.json"));
  ASSERT_GE(cases.size(), 80u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    SCOPED_TRACE("extra case " + std::to_string(i) + ": " + c["messages"].dump());
    const std::string text = render_chat(messages_of(c["messages"]), c["add_generation_prompt"], c["enable_thinking"]);
    EXPECT_EQ(text, c["text"].get<std::string>());
    ASSERT_TRUE(c.contains("ids"));
    EXPECT_EQ(qwen().encode(text), c["ids"].get<std::vector<int32_t>>());
  }
}

TEST(ChatTemplate, ThinkingSwitchOnlyTouchesTheGenerationPrompt) {
  const std::vector<ChatMessage> chat = {{"user", "Hi", std::nullopt}};
  EXPECT_EQ(render_chat(chat, true, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(chat, true, false), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(render_chat(chat, false, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(render_chat(chat, false, true), render_chat(chat, false, false));
}

TEST(ChatTemplate, EarlierAssistantReasoningIsStripped) {
  const std::vector<ChatMessage> chat = {
      {"user", "q1", std::nullopt}, {"assistant", "<think>\nsecret\n</think>\n\nanswer", std::nullopt}, {"user", "q2", std::nullopt}};
  const std::string text = render_chat(chat, true, true);
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
  EXPECT_NE(text.find("<|im_start|>assistant\nanswer<|im_end|>"), std::string::npos) << text;
  // The same turn as the last message keeps its reasoning.
  const std::string last = render_chat({chat[0], chat[1]}, false, true);
  EXPECT_NE(last.find("<think>\nsecret\n</think>\n\nanswer"), std::string::npos) << last;
}

TEST(ChatTemplate, EmptyMessagesAreRejected) {
  EXPECT_THROW(render_chat({}, true, true), InvalidRequest);
}

}  // namespace
}  // namespace verbatim
