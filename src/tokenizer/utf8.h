#pragma once
// UTF-8 helpers shared by encode (validation) and decode (lossy repair, streaming hold-back).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace verbatim::utf8 {

enum class SeqKind { kComplete, kInvalid, kTruncated };

struct Seq {
  SeqKind kind;
  size_t len;  // complete: bytes of the character; invalid/truncated: bytes of the maximal subpart (>= 1)
};

// Classifies the sequence starting at s[0] (s non-empty), following the Unicode "maximal subpart"
// rule that Python's errors="replace" and Rust's from_utf8_lossy both use.
Seq next_sequence(std::string_view s);

// Offset of the first byte that is not part of valid UTF-8, or npos when all of s is valid.
size_t first_invalid(std::string_view s);

// s with every ill-formed subsequence replaced by U+FFFD (one per maximal subpart, as HF does).
std::string lossy(std::string_view s);

// Appends the complete part of `pending` to `out` (invalid bytes as U+FFFD) and erases it from
// `pending`, keeping only a trailing, still-completable prefix of a character.
void drain_complete(std::string& pending, std::string& out);

// Appends the UTF-8 encoding of code point c.
void append(std::string& out, char32_t c);

}  // namespace verbatim::utf8
