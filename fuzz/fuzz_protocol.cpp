// libFuzzer: arbitrary HTTP request bodies through the OpenAI protocol parser/validator
// (src/server/protocol.h): parse_body, then the completion, chat, tokenize and detokenize
// parsers. A bad body must raise InvalidRequest (HTTP 400), nothing else (anything else is a 500
// or a crash); its message stays short however long the input (a bounded excerpt), and the error
// JSON built from it serializes. An accepted request holds values inside the documented ranges.
#include <cstdint>

#include "fuzz_util.h"
#include "server/protocol.h"

namespace {
using namespace verbatim;
constexpr size_t kMaxMessage = 600;  // bytes: fixed text + a 40-character excerpt + a param name

template <class F>
void parse(const char* what, F&& f) {
  try {
    f();
  } catch (const InvalidRequest& e) {
    fuzz::check_error_message(e);
    if (std::string_view(e.what()).size() > kMaxMessage)
      fuzz::finding(std::string(what) + ": error message of " + std::to_string(std::string_view(e.what()).size()) +
                    " bytes (unbounded excerpt?)");
    // The body of the 400 answer must serialize (an excerpt cut inside a UTF-8 character would throw).
    try {
      (void)server::error_json(400, e.what(), e.param()).dump();
    } catch (const std::exception& x) {
      fuzz::finding(std::string(what) + ": error_json().dump() threw: " + x.what());
    }
  } catch (const std::exception& e) {
    fuzz::finding(std::string(what) + " threw something other than InvalidRequest: " + e.what());
  }
}

void check_generation(const server::GenerationRequest& r) {
  const SamplingParams& p = r.params;
  if (!(p.temperature >= 0) || !(p.top_p > 0 && p.top_p <= 1) || !(p.min_p >= 0 && p.min_p <= 1))
    fuzz::finding("sampling values outside their ranges were accepted");
  if (r.n < 1 || r.n > server::kMaxN) fuzz::finding("n outside 1..kMaxN was accepted");
  if (r.max_tokens && *r.max_tokens < 1) fuzz::finding("max_tokens < 1 was accepted");
  if (p.logprobs > server::kMaxLogprobs) fuzz::finding("logprobs above kMaxLogprobs was accepted");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const server::SamplingDefaults defaults;
  server::request_json j;
  bool ok = false;
  parse("parse_body", [&] {
    j = server::parse_body(body);
    ok = true;
  });
  if (!ok) return 0;
  parse("parse_completion_request", [&] {
    auto r = server::parse_completion_request(j, defaults);
    check_generation(r);
    if (r.prompts.empty()) fuzz::finding("a completion request without prompts was accepted");
  });
  parse("parse_chat_request", [&] {
    auto r = server::parse_chat_request(j, defaults);
    check_generation(r);
    if (r.messages.empty()) fuzz::finding("a chat request without messages was accepted");
  });
  parse("parse_tokenize_request", [&] { (void)server::parse_tokenize_request(j); });
  parse("parse_detokenize_request", [&] { (void)server::parse_detokenize_request(j); });
  (void)server::excerpt(body);
  if (server::excerpt(body).size() > 4 * 40 + 3) fuzz::finding("excerpt() is longer than 40 characters");
  return 0;
}
