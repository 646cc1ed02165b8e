// libFuzzer: render_chat on arbitrary conversations. Input: [flags][role byte][content]\0
// [role byte][content]\0 ... where a role byte picks system/user/assistant/tool/an unknown role
// and whether the message carries reasoning_content (after a \1 in its content). Must not crash;
// an empty conversation is an Error; valid UTF-8 in gives valid UTF-8 out, that contains every
// user message's content, and whose encoding round-trips through decode.
#include <cstdint>
#include <memory>

#include "core/paths.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {
// Loaded once in LLVMFuzzerInitialize: the 11 MB tokenizer.json takes seconds under ASan, which
// must not count against the first input's -timeout.
const verbatim::Tokenizer& qwen3() {
  static const std::unique_ptr<verbatim::Tokenizer> tok = verbatim::Tokenizer::load(verbatim::default_tokenizer_dir());
  return *tok;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen3();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  const Tokenizer* tok = &qwen3();
  static const char* kRoles[] = {"system", "user", "assistant", "tool", "developer", "", "USER", "assistant "};
  fuzz::Bytes in(data, size);
  const uint8_t flags = in.byte();
  std::vector<ChatMessage> msgs;
  bool all_valid = true;
  while (!in.empty() && msgs.size() < 64) {
    const uint8_t r = in.byte();
    std::string_view body = in.until(0);
    ChatMessage m;
    m.role = kRoles[r % 8];
    if (r & 0x80) {
      const size_t cut = body.find('\1');
      m.reasoning_content = std::string(cut == std::string_view::npos ? std::string_view() : body.substr(cut + 1));
      body = body.substr(0, cut == std::string_view::npos ? body.size() : cut);
    }
    m.content = std::string(body);
    all_valid &= fuzz::valid_utf8(m.content) && (!m.reasoning_content || fuzz::valid_utf8(*m.reasoning_content));
    msgs.push_back(std::move(m));
  }
  std::string out;
  bool threw = false;
  fuzz::expect_only_errors("render_chat", [&] {
    try {
      out = render_chat(msgs, flags & 1, flags & 2);
    } catch (const Error&) {
      threw = true;
      throw;
    }
  });
  if (threw != msgs.empty()) fuzz::finding(threw ? "render_chat refused a non-empty conversation" : "render_chat accepted an empty conversation");
  if (threw || !all_valid) return 0;
  if (!fuzz::valid_utf8(out)) fuzz::finding("render_chat produced invalid UTF-8 from valid input");
  for (const ChatMessage& m : msgs)
    if (m.role == "user" && out.find(m.content) == std::string::npos) fuzz::finding("a user message is missing from the rendering");
  if ((flags & 1) && !out.ends_with((flags & 2) ? "<|im_start|>assistant\n" : "<|im_start|>assistant\n<think>\n\n</think>\n\n"))
    fuzz::finding("the generation prompt is not at the end");
  std::vector<int32_t> ids;
  fuzz::expect_only_errors("encode(rendered)", [&] { ids = tok->encode(out); });
  (void)tok->decode(ids);
  return 0;
}
