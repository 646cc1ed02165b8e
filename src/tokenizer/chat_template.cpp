// The Qwen3 chat template (tokenizer_config.json "chat_template"), rendered natively without
// tools: each branch below mirrors one branch of the Jinja text, quoted in the comments.
#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace verbatim {
namespace {
std::string_view lstrip_nl(std::string_view s) {  // Python s.lstrip('\n')
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_nl(std::string_view s) {  // Python s.rstrip('\n')
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
std::string_view after_last(std::string_view s, std::string_view sep) {  // s.split(sep)[-1]
  const size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + sep.size());
}
std::string_view before_first(std::string_view s, std::string_view sep) {  // s.split(sep)[0]
  const size_t at = s.find(sep);
  return at == std::string_view::npos ? s : s.substr(0, at);
}
bool is_tool_response(std::string_view s) {
  // message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')
  return s.starts_with("<tool_response>") && s.ends_with("</tool_response>");
}
}  // namespace

std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt, bool enable_thinking) {
  // The template reads messages[0].role unconditionally; HF fails on an empty list, and so do we.
  if (messages.empty()) throw InvalidRequest("messages must not be empty", "messages");
  const int n = static_cast<int>(messages.size());
  std::string out;

  // {%- if messages[0].role == 'system' %} '<|im_start|>system\n' + content + '<|im_end|>\n'
  if (messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";

  // The last user message that is not a wrapped tool response (scanning from the end); later
  // assistant turns keep their reasoning, earlier ones lose it.
  int last_query_index = n - 1;
  for (int i = n - 1; i >= 0; --i) {
    const ChatMessage& m = messages[static_cast<size_t>(i)];
    if (m.role == "user" && !is_tool_response(m.content)) {
      last_query_index = i;
      break;
    }
  }

  for (int i = 0; i < n; ++i) {
    const ChatMessage& m = messages[static_cast<size_t>(i)];
    const bool first = i == 0, last = i == n - 1;
    if (m.role == "user" || (m.role == "system" && !first)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (content.find("</think>") != std::string_view::npos) {
        // content.split('</think>')[-1].lstrip('\n'), and the part before it inside <think>
        reasoning = lstrip_nl(after_last(rstrip_nl(before_first(content, "</think>")), "<think>"));
        content = lstrip_nl(after_last(content, "</think>"));
      }
      if (i > last_query_index && (last || !reasoning.empty())) {
        std::string_view r = lstrip_nl(rstrip_nl(reasoning));  // reasoning_content.strip('\n')
        out += "<|im_start|>assistant\n<think>\n";
        out += r;
        out += "\n</think>\n\n";
        out += lstrip_nl(content);
      } else {
        out += "<|im_start|>assistant\n";
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn.
      if (first || messages[static_cast<size_t>(i - 1)].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || messages[static_cast<size_t>(i + 1)].role != "tool") out += "<|im_end|>\n";
    }
    // Any other role (and a leading system message, already written) renders nothing, as in the template.
  }

  if (add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace verbatim
