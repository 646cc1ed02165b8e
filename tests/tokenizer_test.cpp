// The Qwen3 tokenizer against HF ground truth (fixtures/tokenizer_cases.json), plus its edges:
// added-token flags on a small hand-made tokenizer.json, loader errors, speed, thread safety.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "core/error.h"
#include "support/paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace verbatim {
namespace {
using nlohmann::json;

const Tokenizer& qwen() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::load(test::tokenizer_dir());
  return *tok;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

TEST(Tokenizer, MatchesEveryHfCase) {
  const json cases = read_json(test::fixture("tokenizer_cases.json"));
  ASSERT_GE(cases.size(), 70u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const std::string text = c["text"];
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + text.substr(0, 60));
    EXPECT_EQ(qwen().encode(text), ids);
    EXPECT_EQ(qwen().decode(ids), c["decoded"].get<std::string>());
    EXPECT_EQ(qwen().decode(ids, true), c["decoded_skip_special"].get<std::string>());
  }
}

// HF tokenizers' own answers on the Unicode edges (fixtures/tokenizer_unicode_cases.json, made on
// the reference machine by make_tokenizer_unicode_cases.py): Unicode 15-17 letters and digits, odd
// whitespace, marks newer than HF's NFC tables, seeded random mixtures, random id sequences.
TEST(Tokenizer, MatchesHfOnUnicodeEdges) {
  const json fx = read_json(test::fixture("tokenizer_unicode_cases.json"));
  ASSERT_GE(fx["encode"].size(), 700u);
  int bad = 0;
  for (const json& c : fx["encode"]) {
    const std::string text = c["text"];
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    const std::vector<int32_t> got = qwen().encode(text);
    if (got != ids && bad++ < 5) ADD_FAILURE() << c["name"] << ": " << json(text).dump() << "\n  want " << json(ids) << "\n  got  " << json(got);
    EXPECT_EQ(qwen().decode(ids), c["decoded"].get<std::string>()) << c["name"];
    EXPECT_EQ(qwen().decode(ids, true), c["decoded_skip_special"].get<std::string>()) << c["name"];
  }
  EXPECT_EQ(bad, 0);
  for (const json& c : fx["decode"]) {
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    EXPECT_EQ(qwen().decode(ids), c["decoded"].get<std::string>()) << json(ids);
    EXPECT_EQ(qwen().decode(ids, true), c["decoded_skip_special"].get<std::string>()) << json(ids);
  }
}

TEST(Tokenizer, VocabFacts) {
  const Tokenizer& t = qwen();
  EXPECT_EQ(t.vocab_size(), 151643 + 26);
  EXPECT_EQ(t.token_id("<|endoftext|>"), 151643);
  EXPECT_EQ(t.token_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.token_id("<think>"), 151667);
  EXPECT_EQ(t.token_id("Hello"), 9707);
  EXPECT_EQ(t.token_id("Ġworld"), 1879);
  EXPECT_FALSE(t.token_id("not a token at all").has_value());
  EXPECT_EQ(t.token_text(1879), "Ġworld");
  EXPECT_EQ(t.token_text(151645), "<|im_end|>");
  EXPECT_EQ(t.token_text(-1), "");
  EXPECT_EQ(t.token_text(151669), "");
  const std::vector<uint8_t> world = t.token_bytes(1879);
  EXPECT_EQ(std::string(world.begin(), world.end()), " world");
  EXPECT_TRUE(t.token_bytes(1 << 30).empty());
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_TRUE(t.is_special(151643));
  EXPECT_FALSE(t.is_special(151667));  // <think> is an added token but not special
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_EQ(t.eos_token_ids(), (std::vector<int32_t>{151645, 151643}));
}

TEST(Tokenizer, ByteLevelAlphabet) {
  EXPECT_EQ(byte_level::char_of_byte(' '), U'Ġ');
  EXPECT_EQ(byte_level::char_of_byte('\n'), U'Ċ');
  EXPECT_EQ(byte_level::char_of_byte('a'), U'a');
  for (int b = 0; b < 256; ++b) {
    const std::string raw(1, static_cast<char>(b));
    EXPECT_EQ(byte_level::to_bytes(byte_level::to_text(raw)), raw) << b;
    EXPECT_TRUE(qwen().token_id(byte_level::to_text(raw)).has_value()) << b;
  }
}

TEST(Tokenizer, DecodeRepairsInvalidUtf8LikeHf) {
  const Tokenizer& t = qwen();
  const int32_t e4 = *t.token_id(byte_level::to_text("\xE4"));   // lead byte of a 3-byte character
  const int32_t b8 = *t.token_id(byte_level::to_text("\xB8"));   // a lone continuation byte
  const int32_t a = *t.token_id("a");
  EXPECT_EQ(t.decode({e4}), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode({e4, a}), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(t.decode({b8, b8}), "\xEF\xBF\xBD\xEF\xBF\xBD");  // one U+FFFD per maximal subpart
  EXPECT_EQ(t.decode({e4, b8}), "\xEF\xBF\xBD");              // truncated 2 of 3: one U+FFFD
  const int32_t ad = *t.token_id(byte_level::to_text("\xAD"));
  EXPECT_EQ(t.decode({e4, b8, ad}), "\xE4\xB8\xAD");          // 中 once complete
  EXPECT_EQ(t.decode({a, -5, 99999999, a}), "aa");            // unknown ids are dropped
  EXPECT_EQ(t.decode({151644, a, 151645}, true), "a");
}

TEST(Tokenizer, EncodeRejectsInvalidUtf8) {
  EXPECT_THROW(qwen().encode("abc\xFF"), InvalidRequest);
  EXPECT_THROW(qwen().encode("\xE4\xB8"), InvalidRequest);
  EXPECT_NO_THROW(qwen().encode(std::string("nul\0inside", 10)));
  EXPECT_EQ(qwen().decode(qwen().encode(std::string("nul\0inside", 10))), std::string("nul\0inside", 10));
}

TEST(Tokenizer, RoundTripsNfcText) {
  const std::vector<std::string> texts = {
      "plain ascii with  double  spaces\tand\ttabs\r\n", "ünïcödé ÄÖÜ ß straße", "e\xCC\x81" "cole",  // e + combining acute
      "混合 text 和 中文 🙂 emoji", "<|im_start|>system\nYou are helpful.<|im_end|>", "    \n\n\t  x",
      "<|im_start|><|im_start|><|im_end|>", "<think><think>", "<|im_start", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"};
  for (const std::string& s : texts) EXPECT_EQ(qwen().decode(qwen().encode(s)), nfc(s)) << s;
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");
}

TEST(Tokenizer, AddedTokensMatchLongestAndInsideWords) {
  const Tokenizer& t = qwen();
  // Special tokens match anywhere, even glued to words, and an unfinished one is plain text.
  EXPECT_EQ(t.encode("x<|im_end|>y"), (std::vector<int32_t>{*t.token_id("x"), 151645, *t.token_id("y")}));
  const std::vector<int32_t> partial = t.encode("<|im_end");
  EXPECT_TRUE(std::find(partial.begin(), partial.end(), 151645) == partial.end());
  // Decoding with skip_special keeps non-special added tokens.
  EXPECT_EQ(t.decode(t.encode("<tool_call>x</tool_call><|endoftext|>"), true), "<tool_call>x</tool_call>");
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
  const json cases = read_json(test::fixture("tokenizer_cases.json"));
  std::string all;
  for (const json& c : cases) all += c["text"].get<std::string>() + "\n";
  const std::vector<int32_t> expected = qwen().encode(all);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < got.size(); ++k)
    threads.emplace_back([&, k] { for (int r = 0; r < 5; ++r) got[k] = qwen().encode(all); });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST(Tokenizer, EncodesAHundredKilobytesFast) {
  // Varied text so the per-word cache cannot simply replay one sentence: code, prose, numbers, CJK.
  const json cases = read_json(test::fixture("tokenizer_cases.json"));
  std::string text;
  uint64_t x = 88172645463325252ULL;
  while (text.size() < 100 * 1024) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    text += cases[x % cases.size()]["text"].get<std::string>();
    text += " v" + std::to_string(x % 1000003) + "_" + std::to_string(x >> 40) + "\n";
  }
  const auto fresh = Tokenizer::load(test::tokenizer_dir());  // cold word cache
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = fresh->encode(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ speed    ] encoded %zu bytes -> %zu tokens in %.1f ms (%.1f MB/s, cold cache)\n", text.size(), ids.size(),
              s * 1e3, text.size() / s / 1e6);
  EXPECT_LT(s, 1.0);
  EXPECT_EQ(fresh->decode(ids), nfc(text));
}

TEST(Tokenizer, EncodeAtMostGivesTheIdsOrNothingAtEveryLimit) {
  // Varied text with special tokens between the cases, so every place that can stop is crossed.
  const json cases = read_json(test::fixture("tokenizer_cases.json"));
  std::string text;
  for (int r = 0; r < 3; ++r)
    for (const json& c : cases) text += "<|im_start|>user\n" + c["text"].get<std::string>() + "<|im_end|>\n";
  const std::vector<int32_t> full = qwen().encode(text);
  ASSERT_GT(full.size(), 2000u);
  for (size_t limit : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(100), size_t(1000), full.size() - 2,
                       full.size() - 1, full.size(), full.size() + 5}) {
    const std::optional<std::vector<int32_t>> got = qwen().encode_at_most(text, limit);
    if (full.size() <= limit) {
      ASSERT_TRUE(got.has_value()) << limit;
      EXPECT_EQ(*got, full) << limit;
    } else {
      EXPECT_FALSE(got.has_value()) << limit;
    }
  }
  // One word of n bytes is at least n / (the longest token's bytes) ids, so a long word is
  // refused without BPE, and one that fits is encoded: both answers must match the full encode.
  for (size_t n : {size_t(64), size_t(4096), size_t(1u << 16)}) {
    const std::string word(n, 'a');
    const size_t ids = qwen().encode(word).size();
    for (size_t limit : {ids - 1, ids, ids + 1, size_t(1)}) {
      const auto got = qwen().encode_at_most(word, limit);
      EXPECT_EQ(got.has_value(), ids <= limit) << n << " bytes, " << ids << " ids, limit " << limit;
    }
  }
  for (const char* unit : {"a", " ", " word", "\xE4\xB8\xAD"}) {  // 32 MB each: one word, spaces, words, CJK
    std::string big;
    while (big.size() < (32u << 20)) big += unit;
    EXPECT_FALSE(qwen().encode_at_most(big, 512).has_value()) << unit;
  }
}

TEST(PreTokenizer, LongRunsDoNotHitRegexLimits) {
  // One match attempt of \s*[\r\n]+ backtracks over a whole whitespace run: 16 MB of spaces
  // exceeded PCRE2's default match limit (10M steps) before the limit was lifted.
  const json tj = read_json(test::tokenizer_dir() + "/tokenizer.json");
  RegexSplitter split(tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>(), false);
  for (const char* unit : {" ", "\n", " \t\xC2\xA0"}) {
    std::string run;
    while (run.size() < (16u << 20)) run += unit;
    run += "x";
    std::vector<std::string_view> pieces;
    ASSERT_NO_THROW(split.split(run, pieces)) << unit;
    size_t total = 0;
    for (auto p : pieces) total += p.size();
    EXPECT_EQ(total, run.size());
    EXPECT_LE(pieces.size(), 3u);
  }
}

TEST(PreTokenizer, TranslatesOnigurumaWhitespace) {
  EXPECT_EQ(translate_oniguruma("\\s+(?!\\S)"), "[\\t-\\r\\x{85}\\p{Z}]+(?![^\\t-\\r\\x{85}\\p{Z}])");
  EXPECT_EQ(translate_oniguruma("[^\\s?]"), "[^\\t-\\r\\x{85}\\p{Z}?]");
  EXPECT_EQ(translate_oniguruma("\\\\s"), "\\\\s");  // an escaped backslash followed by s
  EXPECT_EQ(translate_oniguruma("[]\\s]"), "[]\\t-\\r\\x{85}\\p{Z}]");
  EXPECT_THROW(translate_oniguruma("[\\S]"), Error);
  EXPECT_THROW(translate_oniguruma("[\\P{L}]"), Error);
  // U+180E (Mongolian vowel separator) is Cf, not whitespace, for Oniguruma; PCRE2's \s takes it.
  RegexSplitter ws("\\s+", false);
  std::vector<std::string_view> pieces;
  ws.split("a\xE1\xA0\x8E" "b c", pieces);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0], "a\xE1\xA0\x8E" "b");
  EXPECT_EQ(pieces[1], " ");
  EXPECT_EQ(pieces[2], "c");
}

TEST(PreTokenizer, LettersAndNumbersAreUnicode16LikeHf) {
  // The additions are written into the class, after PCRE2's own property.
  const std::string letters = translate_oniguruma("\\p{L}+");
  EXPECT_EQ(letters.rfind("[\\p{L}", 0), 0u) << letters;
  EXPECT_NE(letters.find("\\x{13460}-\\x{143FA}"), std::string::npos) << letters;  // Egyptian Hieroglyphs Ext-A (16.0)
  EXPECT_EQ(translate_oniguruma("\\pN"), translate_oniguruma("\\p{N}"));
  EXPECT_EQ(translate_oniguruma("\\P{N}").rfind("[^\\p{N}", 0), 0u);
  RegexSplitter split("\\p{L}+|\\p{N}|[^\\p{L}\\p{N}]+", false);
  auto pieces_of = [&](const std::string& s) {
    std::vector<std::string_view> v;
    split.split(s, v);
    return v.size();
  };
  EXPECT_EQ(pieces_of("a\xE4\xB8\x80"), 1u);          // U+4E00 (1.1): a letter
  EXPECT_EQ(pieces_of("a\xF0\xB1\x8D\x90"), 1u);     // U+31350 CJK Ext H (15.0): a letter
  EXPECT_EQ(pieces_of("a\xF0\x93\xA9\xAE"), 1u);     // U+13A6E (16.0): a letter
  EXPECT_EQ(pieces_of("a\xF0\xB2\x8E\xB0"), 2u);     // U+323B0 CJK Ext J (17.0): not yet, as in HF
  EXPECT_EQ(pieces_of("\xF0\x96\x84\xB0!"), 2u);     // U+16130 Gurung Khema digit (16.0): a number
  // The tables bridge PCRE2's Unicode 14.0 to HF's 16.0 by adding only: a newer PCRE2 would need them regenerated.
  char version[32] = {};
  pcre2_config_8(PCRE2_CONFIG_UNICODE_VERSION, version);
  EXPECT_STREQ(version, "14.0.0") << "regenerate src/tokenizer/unicode_tables.cpp (unicode_data/make_tables.py)";
}

TEST(Normalizer, NfcIsHfsUnicode9Nfc) {
  EXPECT_EQ(nfc("cafe\xCC\x81"), "caf\xC3\xA9");                  // e + U+0301 composes
  EXPECT_EQ(nfc("x\xCC\x81\xCC\x96"), "x\xCC\x96\xCC\x81");    // U+0316 (ccc 220) moves before U+0301 (230)
  // U+0898 (Unicode 14, ccc 230) is a plain starter to HF: nothing moves past it, it stays put.
  EXPECT_EQ(nfc("x\xE0\xA2\x98\xCC\xB4"), "x\xE0\xA2\x98\xCC\xB4");
  EXPECT_EQ(nfc("e\xE0\xA2\x98\xCC\x81"), "e\xE0\xA2\x98\xCC\x81");
  EXPECT_EQ(nfc("e\xCC\x81\xE0\xA2\x98" "e\xCC\x81"), "\xC3\xA9\xE0\xA2\x98\xC3\xA9");
  // U+11935 U+11930 (Dives Akuru, Unicode 13) would compose to U+11938; HF does not.
  EXPECT_EQ(nfc("\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0"), "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0");
  EXPECT_EQ(nfc("\xF0\x91\xA4\xB8"), "\xF0\x91\xA4\xB8");
  EXPECT_STREQ(utf8proc_unicode_version(), "15.0.0") << "regenerate src/tokenizer/unicode_tables.cpp (unicode_data/make_tables.py)";
}

// ---- a small hand-made tokenizer.json to exercise the added-token flags HF honours

std::string write_tokenizer(const std::string& tag, const json& added, const json& normalizer = json{{"type", "NFC"}}) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::to_text(std::string(1, static_cast<char>(b)))] = b;
  vocab["ab"] = 256;
  vocab["Ġab"] = 257;
  json tj = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", normalizer},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", json::array({
          {{"type", "Split"}, {"pattern", {{"Regex", " ?\\p{L}+|\\s+|[^\\s\\p{L}]+"}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", vocab},
                 {"merges", json::array({json::array({"a", "b"}), json::array({"Ġ", "ab"})})}}}};
  const std::string dir = test::temp_dir("tok-" + tag);
  std::ofstream(dir + "/tokenizer.json") << tj.dump();
  return dir;
}

json added_token(int id, const std::string& content, bool lstrip, bool rstrip, bool single_word, bool normalized, bool special) {
  return {{"id", id}, {"content", content}, {"lstrip", lstrip}, {"rstrip", rstrip}, {"single_word", single_word},
          {"normalized", normalized}, {"special", special}};
}

TEST(AddedTokens, LstripRstripSingleWordNormalized) {
  const std::string dir = write_tokenizer("flags", json::array({
      added_token(300, "<L>", true, false, false, false, true), added_token(301, "<R>", false, true, false, false, true),
      added_token(302, "[W]", false, false, true, false, false), added_token(303, "\xC3\xA9", false, false, false, true, false),
      added_token(304, "<LL>", false, false, false, false, false)}));
  const auto t = Tokenizer::load(dir);
  const int32_t sp = ' ', a = 'a', b = 'b', x = 'x';
  EXPECT_EQ(t->encode("ab"), (std::vector<int32_t>{256}));
  EXPECT_EQ(t->encode(" ab"), (std::vector<int32_t>{257}));
  // lstrip: the whitespace before the token is absorbed into it.
  EXPECT_EQ(t->encode("ab  <L>ab"), (std::vector<int32_t>{256, 300, 256}));
  // rstrip: the whitespace after it is absorbed.
  EXPECT_EQ(t->encode("ab<R>  ab"), (std::vector<int32_t>{256, 301, 256}));
  EXPECT_EQ(t->encode("ab <R> ab"), (std::vector<int32_t>{256, sp, 301, 256}));
  // Longest match wins: <LL> over <L>.
  EXPECT_EQ(t->encode("<LL>"), (std::vector<int32_t>{304}));
  // single_word: only when not glued to a word character on either side.
  EXPECT_EQ(t->encode("x [W] x"), (std::vector<int32_t>{x, sp, 302, sp, x}));
  const std::vector<int32_t> glued = t->encode("x[W]");
  EXPECT_TRUE(std::find(glued.begin(), glued.end(), 302) == glued.end());
  // normalized=true: matched after NFC, so "e" + combining acute finds the precomposed token.
  EXPECT_EQ(t->encode("e\xCC\x81"), (std::vector<int32_t>{303}));
  EXPECT_EQ(t->encode("\xC3\xA9" "ab"), (std::vector<int32_t>{303, 256}));
  // decode keeps the token's content; the stripped whitespace is gone, as in HF.
  EXPECT_EQ(t->decode(t->encode("ab  <L>ab")), "ab<L>ab");
  EXPECT_EQ(t->decode({300, a, b}, true), "ab");
  EXPECT_EQ(t->decode({302, a}, true), "[W]a");
  EXPECT_TRUE(t->eos_token_ids().empty());
}

// ---- loader errors name the file

void expect_error_naming(const std::string& dir, const std::string& needle) {
  try {
    Tokenizer::load(dir);
    ADD_FAILURE() << "no error for " << dir;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(TokenizerLoad, MissingFile) {
  const std::string dir = test::temp_dir("tok-missing");
  EXPECT_FALSE(Tokenizer::exists(dir));
  expect_error_naming(dir, dir + "/tokenizer.json");
  EXPECT_TRUE(Tokenizer::exists(test::tokenizer_dir()));
}

TEST(TokenizerLoad, MalformedFiles) {
  const std::string dir = test::temp_dir("tok-bad");
  const std::string path = dir + "/tokenizer.json";
  std::ofstream(path) << "{\"model\": {\"type\": \"BPE\", \"vocab\": {";
  expect_error_naming(dir, path);
  std::ofstream(path) << "[1, 2, 3]";
  expect_error_naming(dir, path);
  std::ofstream(path) << "{\"version\": \"1.0\"}";
  expect_error_naming(dir, "model");
  std::ofstream(path) << R"({"model": {"type": "WordPiece", "vocab": {}}})";
  expect_error_naming(dir, "WordPiece");
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "c"]]},
      "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"}})";
  expect_error_naming(dir, "model.merges[0]");
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": -3}, "merges": []}})";
  expect_error_naming(dir, "out of range");
  std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(unclosed"},
      "behavior": "Isolated"}, {"type": "ByteLevel"}]}, "decoder": {"type": "ByteLevel"}})";
  expect_error_naming(dir, "pattern");
  // A valid tokenizer.json with a malformed tokenizer_config.json names the config file.
  const std::string ok = write_tokenizer("cfg", json::array());
  std::ofstream(ok + "/tokenizer_config.json") << "{not json";
  expect_error_naming(ok, ok + "/tokenizer_config.json");
}

}  // namespace
}  // namespace verbatim
