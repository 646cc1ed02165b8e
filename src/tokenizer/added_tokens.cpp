#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <utf8proc.h>

namespace verbatim {
namespace {
// Rust regex \s (Unicode White_Space), used by HF for lstrip/rstrip.
bool is_white_space(utf8proc_int32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const auto cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}
// Rust regex \w (Unicode word character), used by HF for single_word.
bool is_word_char(utf8proc_int32_t c) {
  if (c == '_' || c == 0x200C || c == 0x200D) return true;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}
// Decodes the code point that ends at `end` (text valid UTF-8, end > 0); sets *start to its offset.
utf8proc_int32_t last_char(std::string_view text, size_t end, size_t* start) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  utf8proc_int32_t c = -1;
  utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + b), static_cast<utf8proc_ssize_t>(end - b), &c);
  *start = b;
  return c;
}
utf8proc_int32_t first_char(std::string_view text, size_t begin, size_t* len) {
  utf8proc_int32_t c = -1;
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + begin),
                            static_cast<utf8proc_ssize_t>(text.size() - begin), &c);
  *len = n > 0 ? static_cast<size_t>(n) : 1;
  return c;
}
}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)), by_first_byte_(256) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!patterns_[i].empty()) by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) { return patterns_[a].size() > patterns_[b].size(); });
}

std::vector<TextPiece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextPiece> pieces;
  size_t done = 0;  // end of the last piece emitted
  size_t pos = 0;   // where the search resumes: the end of the last match, as in HF's find_iter
  while (pos < text.size() && !tokens_.empty()) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[pos])];
    const size_t* hit = nullptr;
    for (const size_t& i : candidates)
      if (text.substr(pos, patterns_[i].size()) == patterns_[i]) { hit = &i; break; }  // longest first
    if (!hit) { ++pos; continue; }
    const AddedToken& tok = tokens_[*hit];
    size_t start = pos, stop = pos + patterns_[*hit].size();
    pos = stop;
    if (tok.single_word) {
      size_t at, len;
      const bool word_before = start > 0 && is_word_char(last_char(text, start, &at));
      const bool word_after = stop < text.size() && is_word_char(first_char(text, stop, &len));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      size_t s = start, at;
      while (s > 0 && is_white_space(last_char(text, s, &at))) s = at;
      start = std::max(s, done);  // whitespace already taken by the previous piece stays there
    }
    if (tok.rstrip) {
      size_t len;
      while (stop < text.size() && is_white_space(first_char(text, stop, &len))) stop += len;
    }
    if (start < done) continue;  // cannot happen with real tokens; keeps the pieces ordered
    if (done < start) pieces.push_back({done, start, -1});
    pieces.push_back({start, stop, tok.id});
    done = stop;
  }
  if (done < text.size()) pieces.push_back({done, text.size(), -1});
  return pieces;
}

}  // namespace verbatim
