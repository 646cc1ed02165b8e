#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace verbatim {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  if (skip_special_ && tok_.is_special(id)) return "";
  const std::vector<uint8_t> bytes = tok_.token_bytes(id);  // empty for unknown ids, as decode() drops them
  pending_.append(bytes.begin(), bytes.end());
  std::string out;
  // Only a trailing, still-completable character prefix is held, so pushes + finish() == decode().
  utf8::drain_complete(pending_, out);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = utf8::lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace verbatim
