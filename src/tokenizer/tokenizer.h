#pragma once
// The Qwen3 tokenizer from a HF tokenizer.json: byte-level BPE with merge ranks, NFC normalization,
// the Qwen2 split regex (PCRE2, Unicode properties), added/special tokens matched before splitting.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace verbatim {

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json (and DIR/tokenizer_config.json for the chat template and eos).
  // Throws Error naming the file on anything missing or malformed.
  static std::unique_ptr<Tokenizer> load(const std::string& dir);
  // True when DIR holds a tokenizer.json.
  static bool exists(const std::string& dir);
  virtual ~Tokenizer() = default;

  // Special tokens written in the text (e.g. "<|im_start|>") are matched as special tokens
  // (HF add_special_tokens=False). Throws InvalidRequest if text is not valid UTF-8.
  // Thread-safe: one loaded Tokenizer may encode/decode from many threads at once.
  std::vector<int32_t> encode(const std::string& text) const { return *encode_at_most(text, SIZE_MAX); }
  // The same ids when they number at most max_tokens, else nullopt, found without encoding the
  // rest of the text once the count has passed max_tokens (a server checks a 60 MiB prompt against
  // its context in milliseconds).
  virtual std::optional<std::vector<int32_t>> encode_at_most(const std::string& text, size_t max_tokens) const = 0;
  // Invalid UTF-8 in the decoded bytes is replaced by U+FFFD, as HF does.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;
  virtual int vocab_size() const = 0;                  // including added tokens
  virtual std::optional<int32_t> token_id(const std::string& token) const = 0;
  virtual std::string token_text(int32_t id) const = 0;  // the vocab string ("Ġhello"), "" if unknown
  virtual std::vector<uint8_t> token_bytes(int32_t id) const = 0;  // raw bytes the token decodes to
  virtual bool is_special(int32_t id) const = 0;
  virtual std::vector<int32_t> eos_token_ids() const = 0;  // <|im_end|>, <|endoftext|>
};

// Emits text as tokens arrive without ever splitting a UTF-8 character: bytes of an incomplete
// character are held until the token that completes it (or until finish()).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);
  std::string push(int32_t id);  // the newly complete text (possibly empty)
  std::string finish();          // whatever is held, invalid bytes as U+FFFD
 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
};

struct ChatMessage {
  std::string role;     // system, user, assistant, tool
  std::string content;
  std::optional<std::string> reasoning_content;
};

// The Qwen3 chat template (tokenizer_config.json), rendered natively: system, multi-turn,
// earlier assistant turns with their <think> part stripped, tool results, add_generation_prompt,
// enable_thinking (false appends "<think>\n\n</think>\n\n"). No `tools` list and no assistant
// tool_calls. Roles other than system/user/assistant/tool render nothing, as in the template.
// Throws InvalidRequest on an empty message list (HF's template fails on it too).
std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt, bool enable_thinking);

}  // namespace verbatim
