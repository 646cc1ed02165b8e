#pragma once
// Added tokens (tokenizer.json "added_tokens") are cut out of the text before normalization and
// pre-tokenization, as HF's AddedVocabulary does: leftmost-longest match, honouring each token's
// single_word / lstrip / rstrip flags.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace verbatim {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

struct TextPiece {
  size_t begin, end;  // byte range in the searched text
  int32_t id;         // the added token's id, or -1 for ordinary text
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is what is searched for token ids[i] (its content, or its normalized content).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);
  bool empty() const { return tokens_.empty(); }
  // Splits `text` into ordinary pieces and added-token pieces covering it in order; empty pieces are
  // left out. An added-token piece includes the whitespace that lstrip/rstrip absorbed.
  std::vector<TextPiece> split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  std::vector<std::vector<size_t>> by_first_byte_;  // token indexes, longest pattern first
};

}  // namespace verbatim
