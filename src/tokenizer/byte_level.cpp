#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>
#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace verbatim::byte_level {
namespace {
struct Tables {
  std::array<char32_t, 256> char_of{};
  std::array<int16_t, 512> byte_of{};  // code point -> byte, -1 outside the alphabet (max U+0143)
  Tables() {
    // Printable Latin-1 bytes keep their code point; the other 68 bytes take U+0100.. in byte order.
    byte_of.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char_of[b] = printable ? static_cast<char32_t>(b) : next++;
      byte_of[char_of[b]] = static_cast<int16_t>(b);
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
}  // namespace

char32_t char_of_byte(unsigned char b) { return tables().char_of[b]; }

std::string to_bytes(std::string_view token_text) {
  const auto& t = tables();
  std::string out;
  out.reserve(token_text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(token_text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(token_text.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) return std::string(token_text);
    if (c < 0 || c >= static_cast<utf8proc_int32_t>(t.byte_of.size()) || t.byte_of[static_cast<size_t>(c)] < 0)
      return std::string(token_text);
    out.push_back(static_cast<char>(t.byte_of[static_cast<size_t>(c)]));
    p += n;
    left -= n;
  }
  return out;
}

std::string to_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8::append(out, char_of_byte(b));
  return out;
}

}  // namespace verbatim::byte_level
