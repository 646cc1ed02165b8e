#pragma once
// HF's Split pre-tokenizer (behavior "Isolated"): every regex match and every gap between matches
// becomes its own piece. The pattern comes from tokenizer.json and is written for Oniguruma;
// it runs on PCRE2 (UTF + UCP, JIT when available) after translate_oniguruma().
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace verbatim {

// Rewrites the Oniguruma escapes whose meaning differs in PCRE2 10.42:
//  * \s (and \S) become the Oniguruma Unicode whitespace set [\t-\r\x{85}\p{Z}] (PCRE2's own \s
//    also takes U+180E, which HF does not);
//  * \p{L} / \p{N} (and \pL, \pN, \P{..}) gain the letters / numbers of Unicode 15.0-16.0 that
//    HF's Oniguruma knows and PCRE2's Unicode 14.0 tables lack (unicode_tables.h).
// Throws Error on a construct it cannot translate (\S or \P{..} inside a class).
std::string translate_oniguruma(std::string_view pattern);

class RegexSplitter {
 public:
  // `literal`: the pattern is a plain string (tokenizer.json {"String": ...}), not a regex.
  RegexSplitter(const std::string& pattern, bool literal);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;
  // Appends the pieces of `text` (valid UTF-8) as views into it; with max_pieces, stops once it has
  // appended that many (the first pieces of the full split: each one is final when appended).
  void split(std::string_view text, std::vector<std::string_view>& pieces, size_t max_pieces = SIZE_MAX) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Unicode NFC of valid UTF-8 as HF's normalizer computes it: utf8proc, except that marks newer than
// HF's Unicode 9.0 tables (unicode::nfc_opaque) are left alone and block reordering/composition.
std::string nfc(std::string_view text);

}  // namespace verbatim
