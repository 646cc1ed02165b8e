#pragma once
// The prompts check and bench send: the built-in set (one shared system prompt, then varied
// questions, as on the seed page), a JSONL file, or synthetic token ids of a given length.
#include <cstdint>
#include <string>
#include <vector>

#include "client/http_client.h"

namespace verbatim::client {

struct Prompt {
  enum class Kind { Text, Messages, TokenIds };
  Kind kind = Kind::Text;
  std::string text;            // Text
  json messages;               // Messages: [{"role": ..., "content": ...}, ...]
  std::vector<int64_t> ids;    // TokenIds

  std::string preview(size_t max_chars = 48) const;  // one line, for tables and messages
  json to_json() const;                              // the JSONL form load_prompts_jsonl reads back
};

// One JSONL value: "text", [ids...], [{"role","content"}...], {"prompt": text|ids}, {"messages": [...]}.
// `where` names the file and line in the error.
Prompt prompt_from_json(const json& j, const std::string& where);
// Throws Error naming the file and line; empty lines are skipped; an empty file is an error.
std::vector<Prompt> load_prompts_jsonl(const std::string& path);

// The built-in set: one system prompt of about 170 tokens shared by every question.
const std::string& builtin_system_prompt();
const std::vector<std::string>& builtin_questions();
// chat: [system, user] messages; otherwise one text with the same system prompt in front.
std::vector<Prompt> builtin_prompts(bool chat);

// `count` prompts of exactly `input_len` token ids, in 100..499 so that any vocabulary of 512 or
// more accepts them; distinct from the first token on, so they share no prefix-cache blocks.
std::vector<Prompt> synthetic_prompts(int count, int input_len, uint64_t seed);

}  // namespace verbatim::client
