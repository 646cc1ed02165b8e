// libFuzzer: decode arbitrary id sequences (negative, past the vocabulary, special tokens, lone
// UTF-8 bytes that leave characters cut) with and without skip_special, whole and streaming.
// Must not crash; the text is valid UTF-8 (bad bytes as U+FFFD) and the streaming pieces, each
// valid UTF-8 on its own, add up exactly to the whole decode.
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
  fuzz::Bytes in(data, size);
  const bool skip = in.byte() & 1;
  std::vector<int32_t> ids;
  while (!in.empty()) {
    // Mostly ids near the interesting ranges: the 256 byte tokens, the added tokens, the edges.
    const uint8_t kind = in.byte();
    const uint32_t raw = (static_cast<uint32_t>(in.byte()) << 8) | in.byte();
    int32_t id;
    switch (kind % 8) {
      case 0: id = static_cast<int32_t>(in.u32()); break;                         // anything, negative too
      case 1: id = tok->vocab_size() - 40 + static_cast<int32_t>(raw % 80); break;  // added tokens and past the end
      case 2: id = static_cast<int32_t>(raw % 512); break;                          // byte tokens live low
      default: id = static_cast<int32_t>((raw * 3u + kind) % static_cast<uint32_t>(tok->vocab_size())); break;
    }
    ids.push_back(id);
  }
  std::string whole;
  fuzz::expect_only_errors("decode", [&] { whole = tok->decode(ids, skip); });
  if (!fuzz::valid_utf8(whole)) fuzz::finding("decode produced invalid UTF-8");
  std::string streamed;
  fuzz::expect_only_errors("StreamDecoder", [&] {
    StreamDecoder sd(*tok, skip);
    for (int32_t id : ids) {
      const std::string piece = sd.push(id);
      if (!fuzz::valid_utf8(piece)) fuzz::finding("a StreamDecoder piece is not valid UTF-8");
      streamed += piece;
    }
    streamed += sd.finish();
  });
  if (streamed != whole) fuzz::finding("StreamDecoder output differs from decode()");
  for (int32_t id : ids) {
    (void)tok->token_text(id);
    (void)tok->token_bytes(id);
    (void)tok->is_special(id);
  }
  return 0;
}
