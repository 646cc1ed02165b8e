// Parity with a template engine no one here wrote: random conversations (system anywhere, tool
// turns, <tool_response> users, assistant turns with inline <think> blocks or reasoning_content,
// hostile text in every field) rendered by @huggingface/jinja on the real chat_template of
// tokenizer_config.json and by our native render_chat: the same text, and the same ids after
// tokenizing it. (The oracle's str.strip/lstrip/rstrip are given Python's meaning: see
// tests/oracle/common.mjs; checked against transformers 5.17 apply_chat_template.)
#include <gtest/gtest.h>

#include "oracle/oracle_cases.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace verbatim {
namespace {

std::vector<ChatMessage> messages_of(const nlohmann::json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) {
    ChatMessage msg;
    msg.role = m["role"].get<std::string>();
    msg.content = m["content"].get<std::string>();
    if (m.contains("reasoning_content")) msg.reasoning_content = m["reasoning_content"].get<std::string>();
    out.push_back(std::move(msg));
  }
  return out;
}

int check_chat_cases(const Tokenizer& tok, const std::vector<nlohmann::json>& cases, const std::string& what) {
  int bad = 0, shown = 0;
  for (const auto& c : cases) {
    const bool agp = c["add_generation_prompt"].get<bool>(), think = c["enable_thinking"].get<bool>();
    const std::string want = c["text"].get<std::string>();
    std::string got;
    try {
      got = render_chat(messages_of(c["messages"]), agp, think);
    } catch (const std::exception& e) {
      got = std::string("<threw: ") + e.what() + ">";
    }
    if (got != want) {
      ++bad;
      if (shown++ < 5)
        ADD_FAILURE() << what << " render_chat(" << c["messages"].dump(-1, ' ', true) << ", add_generation_prompt="
                      << agp << ", enable_thinking=" << think << ")\n  expected " << test::quoted(want)
                      << "\n  got      " << test::quoted(got);
      continue;
    }
    const auto want_ids = c["ids"].get<std::vector<int32_t>>();
    const auto got_ids = tok.encode(got);
    if (got_ids != want_ids) {
      ++bad;
      if (shown++ < 5)
        ADD_FAILURE() << what << " encode(rendered " << test::quoted(got) << ")\n  expected " << test::ids_str(want_ids)
                      << "\n  got      " << test::ids_str(got_ids);
    }
  }
  return bad;
}

TEST(OracleChatTemplate, RandomConversationsRenderLikeJinja) {
  auto tok = Tokenizer::load(test::tokenizer_dir());
  const int seed = test::oracle_seed(20261131), count = test::oracle_count(2000);
  auto cases = test::oracle_cases("chat", seed, count);
  int bad = check_chat_cases(*tok, cases, "seed " + std::to_string(seed) + ":");
  EXPECT_EQ(bad, 0) << bad << " of " << cases.size() << " conversations differ from @huggingface/jinja";
  // Not vacuous: the cases reach the template's branches (think stripping, tool groups, system later).
  int think_blocks = 0, tools = 0, late_system = 0;
  for (const auto& c : cases) {
    const auto& m = c["messages"];
    for (size_t i = 0; i < m.size(); i++) {
      tools += m[i]["role"] == "tool";
      late_system += i > 0 && m[i]["role"] == "system";
    }
    think_blocks += c["text"].get<std::string>().find("<think>\n") != std::string::npos;
  }
  EXPECT_GT(think_blocks, count / 10);
  EXPECT_GT(tools, count / 10);
  EXPECT_GT(late_system, count / 50);
}

TEST(OracleChatTemplate, RegressionCases) {
  auto tok = Tokenizer::load(test::tokenizer_dir());
  auto cases = test::regression_cases("regressions_chat.jsonl");
  EXPECT_EQ(check_chat_cases(*tok, cases, "regression:"), 0);
}

}  // namespace
}  // namespace verbatim
