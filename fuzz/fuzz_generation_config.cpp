// libFuzzer: generation_config.json of arbitrary bytes, read by the server for its sampling
// defaults (SamplingDefaults::from_model_dir, vLLM's --generation-config auto). It must either
// throw verbatim::Error or give defaults that a plain request ({"prompt": "x"} and a chat) then
// accepts: a default outside its range would make every request fail.
#include <cstdint>

#include "fuzz_util.h"
#include "server/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  const auto dir = fuzz::scratch_dir();
  fuzz::write_file(dir / "generation_config.json", data, size);
  server::SamplingDefaults d;
  bool ok = false;
  fuzz::expect_only_errors("SamplingDefaults::from_model_dir", [&] {
    d = server::SamplingDefaults::from_model_dir(dir.string());
    ok = true;
  });
  if (!ok) return 0;
  const server::json completion = {{"prompt", "x"}};
  const server::json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}}};
  try {
    (void)server::parse_completion_request(completion, d);
    (void)server::parse_chat_request(chat, d);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("defaults from generation_config.json (temperature ") + std::to_string(d.temperature) +
                  ", top_p " + std::to_string(d.top_p) + ", top_k " + std::to_string(d.top_k) + ", min_p " +
                  std::to_string(d.min_p) + ") make a plain request fail: " + e.what());
  }
  return 0;
}
