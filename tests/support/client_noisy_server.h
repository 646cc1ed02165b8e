#pragma once
// A small but real OpenAI-compatible HTTP server on 127.0.0.1 (cpp-httplib, port chosen by the OS)
// for the check and bench tests: it can be made deliberately non-reproducible, or failing, so the
// tests can show that `verbatim check` sees what it should. Tokens are a hash of the prompt and
// the position; a mode adds the noise a real server's batch, cache or call count would.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace verbatim::test {

enum class NoiseMode {
  None,         // reproducible: the same request always gives the same tokens
  Concurrency,  // tokens from position noise_from on change when other requests ran at the same time
  CallCount,    // tokens from position noise_from on change with every call (nondeterministic alone)
  LogprobBits,  // tokens reproducible, but a logprob's last bit flips with every call
  Errors500,    // completions answer HTTP 500 with OpenAI's error JSON
  Hang,         // completions never answer (until the server stops)
  NoResetRoute, // reproducible, but neither /reset_prefix_cache nor /flush_cache exists
  NullText,     // non-streamed answers carry no text (null), token ids or logprobs: nothing to compare
  CacheHit,     // a prompt seen since the last reset is a prefix-cache hit (usage's cached_tokens > 0),
                // and its tokens from noise_from on change
  BareAfterFirst,  // the first answer has token ids and logprobs, every later one only text
  TextUnderConcurrency,  // same tokens and logprobs, but the text gains " extra" when others ran at once
  Dribble,      // non-streamed answers arrive a byte every 200 ms (each read is quick, the whole is not)
};

struct NoisyServerOptions {
  NoiseMode mode = NoiseMode::None;
  int noise_from = 5;          // first token position the noise may change
  int hold_ms = 40;            // how long a non-streamed request stays in flight (to see concurrency)
  int token_delay_ms = 1;      // between streamed tokens
  std::string version = "noisy-1";
  uint64_t salt = 0;           // != 0: tokens from noise_from on differ from an unsalted server's
  bool strict_fields = false;  // 400 on "return_token_ids", as a strict OpenAI-only server would
  int reset_status = 200;      // what /reset_prefix_cache answers (e.g. 500: the reset fails)
  bool reset_noop = false;     // the reset answers reset_status but empties nothing (CacheHit)
  bool chat_lp_without_token = false;  // chat logprobs entries carry no "token" string
  bool same_for_every_prompt = false;  // tokens ignore the prompt (an output that proves nothing)
  bool completions_without_logprobs = false;  // /v1/completions answers carry no logprobs (chat's do)
  int tokens_per_event = 1;    // streamed tokens per SSE event (>= the answer's length: one event)
  int token_cap = 0;           // > 0: at most this many tokens, whatever max_tokens / ignore_eos say
  std::string retry_after = "";  // the refusals' Retry-After header ("": none)
  int refuse_first = 0;        // the first N generation requests answer refuse_status instead
  int refuse_status = 429;
};

class NoisyServer {
 public:
  explicit NoisyServer(NoisyServerOptions o);
  ~NoisyServer();
  NoisyServer(const NoisyServer&) = delete;
  NoisyServer& operator=(const NoisyServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int completions() const { return completions_.load(); }
  int generation_requests() const { return requests_.load(); }  // every one, refused or failed too
  int resets() const { return resets_.load(); }
  void stop();

  // Binds and serves in this process until killed: for tests that kill a server mid-run, call it
  // in a forked child. Writes the port (as text, newline-terminated) to fd before serving.
  static void serve_forever(NoisyServerOptions o, int port_fd);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<int> completions_{0};
  std::atomic<int> requests_{0};
  std::atomic<int> resets_{0};
  std::thread thread_;
};

}  // namespace verbatim::test
