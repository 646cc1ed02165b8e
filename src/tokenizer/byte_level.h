#pragma once
// The GPT-2 byte-level alphabet: every byte is shown as one printable code point, so BPE vocab
// strings like "Ġhello" stand for raw bytes (" hello").
#include <string>
#include <string_view>

namespace verbatim::byte_level {

// The code point that stands for byte b.
char32_t char_of_byte(unsigned char b);

// The bytes a vocab string stands for, as HF's ByteLevel decoder computes them: each code point
// mapped back to its byte; if any code point is outside the alphabet, the string's own UTF-8.
std::string to_bytes(std::string_view token_text);

// The vocab string for raw bytes (the inverse of to_bytes for alphabet strings).
std::string to_text(std::string_view bytes);

}  // namespace verbatim::byte_level
