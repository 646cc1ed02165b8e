// StreamDecoder: text arrives per token but a UTF-8 character split over tokens is held until
// complete, and the pushes plus finish() always add up to decode() of the same ids.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace verbatim {
namespace {
using nlohmann::json;

const Tokenizer& qwen() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::load(test::tokenizer_dir());
  return *tok;
}

int32_t byte_token(unsigned char b) { return *qwen().token_id(byte_level::to_text(std::string(1, static_cast<char>(b)))); }

TEST(StreamDecoder, HoldsACharacterSplitOverTokens) {
  // "①" (E2 91 A0) is two tokens in Qwen3: 48312 = E2 91 and 254 = A0.
  const std::vector<int32_t> ids = qwen().encode("\xE2\x91\xA0");
  ASSERT_EQ(ids, (std::vector<int32_t>{48312, 254}));
  StreamDecoder d(qwen());
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(ids[1]), "\xE2\x91\xA0");
  EXPECT_EQ(d.finish(), "");
}

TEST(StreamDecoder, EmitsCompleteTextAtOnce) {
  StreamDecoder d(qwen());
  EXPECT_EQ(d.push(9707), "Hello");
  EXPECT_EQ(d.push(1879), " world");
  EXPECT_EQ(d.finish(), "");
}

TEST(StreamDecoder, ByteByByteCharacters) {
  // 中 = E4 B8 AD pushed one byte token at a time, then an emoji's four bytes.
  StreamDecoder d(qwen());
  EXPECT_EQ(d.push(byte_token(0xE4)), "");
  EXPECT_EQ(d.push(byte_token(0xB8)), "");
  EXPECT_EQ(d.push(byte_token(0xAD)), "\xE4\xB8\xAD");
  for (unsigned char b : std::string("\xF0\x9F\x98")) EXPECT_EQ(d.push(byte_token(b)), "");
  EXPECT_EQ(d.push(byte_token(0x80)), "\xF0\x9F\x98\x80");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementLikeDecode) {
  StreamDecoder d(qwen());
  EXPECT_EQ(d.push(byte_token(0xE4)), "");
  // 'a' cannot continue the character: the held lead byte turns into U+FFFD, then 'a'.
  EXPECT_EQ(d.push(*qwen().token_id("a")), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(d.push(byte_token(0xFF)), "\xEF\xBF\xBD");  // never valid: not held
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");  // a truncated character at the end is one U+FFFD
  EXPECT_EQ(d.finish(), "");
}

TEST(StreamDecoder, SkipSpecialDropsSpecialTokensOnly) {
  const std::vector<int32_t> ids = qwen().encode("<|im_start|>assistant\n<think>\nhm\n</think>\n\nok<|im_end|>");
  StreamDecoder plain(qwen()), skip(qwen(), true);
  std::string a, b;
  for (int32_t id : ids) a += plain.push(id), b += skip.push(id);
  a += plain.finish(), b += skip.finish();
  EXPECT_EQ(a, qwen().decode(ids));
  EXPECT_EQ(b, qwen().decode(ids, true));
  EXPECT_EQ(b, "assistant\n<think>\nhm\n</think>\n\nok");
}

TEST(StreamDecoder, ConcatenationEqualsDecodeOnEveryFixture) {
  std::ifstream in(test::fixture("tokenizer_cases.json"));
  const json cases = json::parse(in);
  int held = 0;  // pushes that returned nothing although their token had bytes: proof bytes were held
  for (const json& c : cases) {
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    for (bool skip : {false, true}) {
      StreamDecoder d(qwen(), skip);
      std::string streamed;
      for (int32_t id : ids) {
        const std::string piece = d.push(id);
        EXPECT_EQ(utf8::first_invalid(piece), std::string::npos) << "a push emitted broken UTF-8";
        if (piece.empty() && !qwen().token_bytes(id).empty() && !(skip && qwen().is_special(id))) ++held;
        streamed += piece;
      }
      streamed += d.finish();
      EXPECT_EQ(streamed, qwen().decode(ids, skip)) << c["text"].get<std::string>();
    }
  }
  EXPECT_GT(held, 10);
  // A truncated stream (ids cut mid-character) still matches decode() of the same ids.
  const std::vector<int32_t> emoji = qwen().encode("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9");
  for (size_t cut = 0; cut <= emoji.size(); ++cut) {
    const std::vector<int32_t> part(emoji.begin(), emoji.begin() + static_cast<ptrdiff_t>(cut));
    StreamDecoder d(qwen());
    std::string s;
    for (int32_t id : part) s += d.push(id);
    s += d.finish();
    EXPECT_EQ(s, qwen().decode(part)) << cut;
  }
}

}  // namespace
}  // namespace verbatim
