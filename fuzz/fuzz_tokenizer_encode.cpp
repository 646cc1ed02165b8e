// libFuzzer: encode arbitrary bytes (invalid UTF-8 included) with the real Qwen3 tokenizer.
// Invalid UTF-8 must be refused with a verbatim::Error (InvalidRequest), never crash. For valid
// input: every id is in the vocabulary, the decoded text is valid UTF-8, streaming decode adds up
// to the whole decode, and ASCII text (which NFC leaves alone) decodes back to itself.
#include <cstdint>
#include <memory>

#include "core/paths.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {
// Loaded once in LLVMFuzzerInitialize: the 11 MB tokenizer.json takes seconds under ASan, which
// must not count against the first input's -timeout.
const verbatim::Tokenizer& qwen3() {
  static const std::unique_ptr<verbatim::Tokenizer> tok = verbatim::Tokenizer::load(verbatim::default_tokenizer_dir());
  return *tok;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen3();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  const Tokenizer* tok = &qwen3();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool valid = fuzz::valid_utf8(text);
  std::vector<int32_t> ids;
  bool threw = false;
  fuzz::expect_only_errors("encode", [&] {
    try {
      ids = tok->encode(text);
    } catch (const Error&) {
      threw = true;
      throw;
    }
  });
  if (threw) {
    if (valid) fuzz::finding("encode refused valid UTF-8");
    return 0;
  }
  if (!valid) fuzz::finding("encode accepted invalid UTF-8 without an error");
  for (int32_t id : ids)
    if (id < 0 || id >= tok->vocab_size()) fuzz::finding("encode produced id " + std::to_string(id) + " outside the vocabulary");
  const std::string back = tok->decode(ids);
  if (!fuzz::valid_utf8(back)) fuzz::finding("decode produced invalid UTF-8");
  StreamDecoder sd(*tok);
  std::string streamed;
  for (int32_t id : ids) streamed += sd.push(id);
  streamed += sd.finish();
  if (streamed != back) fuzz::finding("StreamDecoder output differs from decode()");
  bool ascii = true;
  for (unsigned char c : text) ascii &= c < 0x80;
  if (ascii && back != text) fuzz::finding("ASCII text does not round-trip through encode/decode");
  return 0;
}
