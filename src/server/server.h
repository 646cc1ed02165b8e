#pragma once
// `verbatim serve`: the OpenAI-compatible HTTP server. The port is bound first (so /health can say
// 503 while the model loads), the model loads on a background thread, and SIGTERM / SIGINT stop
// accepting, let every in-flight request finish, and return 0.
#include <string>
#include <vector>

#include "server/runtime.h"

namespace verbatim::server {

struct ServeOptions {
  RuntimeOptions runtime;
  std::string host = "127.0.0.1";
  int port = 8000;                  // 0: any free port (printed)
  std::string api_key;              // "": no auth; else /v1/* need "Authorization: Bearer KEY"
  double status_interval_s = 10.0;  // the one-line status while busy
  int http_threads = 0;             // most connections served at once (0: max_num_seqs + max_waiting + 64)
  bool access_log = true;           // a line per answered request (server/access_log.h)
  std::vector<std::string> notes;   // logged at startup (vLLM options accepted with no effect)
  // A step running longer than this means a hung engine (a kernel that never returns, a peer GPU
  // gone): /health says 503, the requests waiting on it get an error, the process exits 1.
  // < 0: 60 s on cuda (vLLM V0's VLLM_ENGINE_ITERATION_TIMEOUT_S), off on cpu (an 8B prefill
  // chunk can take minutes there); 0: off.
  double engine_step_timeout_s = -1;
};

// Blocks until a signal stops the server; returns the process exit code.
int serve(const ServeOptions& opts);

}  // namespace verbatim::server
