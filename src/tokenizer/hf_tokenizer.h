#pragma once
// The Tokenizer implementation for HF tokenizer.json files of the Qwen2/Qwen3 kind: NFC (or no)
// normalizer, Split(regex, Isolated) + ByteLevel pre-tokenizer, BPE model, ByteLevel decoder.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace verbatim {

class HfTokenizer final : public Tokenizer {
 public:
  // Both texts are file contents; the names are only for error messages. config_json may be empty.
  HfTokenizer(const std::string& tokenizer_json, const std::string& tokenizer_path,
              const std::string& config_json, const std::string& config_path);

  std::optional<std::vector<int32_t>> encode_at_most(const std::string& text, size_t max_tokens) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  int vocab_size() const override { return static_cast<int>(text_.size()); }
  std::optional<int32_t> token_id(const std::string& token) const override;
  std::string token_text(int32_t id) const override;
  std::vector<uint8_t> token_bytes(int32_t id) const override;
  bool is_special(int32_t id) const override;
  std::vector<int32_t> eos_token_ids() const override { return eos_; }

 private:
  // False once `out` holds (or the rest of `text` surely makes) more than max_tokens ids.
  bool encode_normalized(std::string_view text, std::vector<int32_t>& out, size_t max_tokens) const;

  std::vector<std::string> text_;   // id -> vocab string ("Ġhello") or added token content
  std::vector<std::string> bytes_;  // id -> the bytes the ByteLevel decoder makes of it
  size_t longest_token_bytes_ = 1;  // the most bytes one id stands for: a word of n bytes is >= n / this ids
  std::vector<uint8_t> special_;    // id -> 1 when skip_special drops it
  std::unordered_map<std::string, int32_t> id_of_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<RegexSplitter> splitter_;  // null: no Split pre-tokenizer
  bool nfc_ = false;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized=false, matched on the input
  AddedTokenMatcher normalized_matcher_;  // normalized=true, matched on the NFC text
  std::vector<int32_t> eos_;
};

}  // namespace verbatim
