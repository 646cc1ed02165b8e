#include "tokenizer/utf8.h"

namespace verbatim::utf8 {
namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The allowed range of the second byte depends on the lead byte (no overlongs, no surrogates,
// nothing above U+10FFFF); later continuation bytes are always 80..BF.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}
}  // namespace

Seq next_sequence(std::string_view s) {
  const auto lead = static_cast<uint8_t>(s[0]);
  if (lead < 0x80) return {SeqKind::kComplete, 1};
  size_t need;
  if (lead >= 0xC2 && lead <= 0xDF) need = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
  else return {SeqKind::kInvalid, 1};
  for (size_t i = 1; i < need; ++i) {
    if (i >= s.size()) return {SeqKind::kTruncated, i};
    const auto b = static_cast<uint8_t>(s[i]);
    const bool ok = i == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {SeqKind::kInvalid, i};
  }
  return {SeqKind::kComplete, need};
}

size_t first_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) { ++i; continue; }
    Seq q = next_sequence(s.substr(i));
    if (q.kind != SeqKind::kComplete) return i;
    i += q.len;
  }
  return std::string_view::npos;
}

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    Seq q = next_sequence(s.substr(i));
    if (q.kind == SeqKind::kComplete) out.append(s.substr(i, q.len));
    else out.append(kReplacement);
    i += q.len;
  }
  return out;
}

void drain_complete(std::string& pending, std::string& out) {
  std::string_view s = pending;
  size_t i = 0;
  while (i < s.size()) {
    Seq q = next_sequence(s.substr(i));
    if (q.kind == SeqKind::kTruncated) break;  // may still be completed by the next token
    if (q.kind == SeqKind::kComplete) out.append(s.substr(i, q.len));
    else out.append(kReplacement);
    i += q.len;
  }
  pending.erase(0, i);
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace verbatim::utf8
