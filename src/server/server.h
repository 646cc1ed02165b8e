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
};

// Blocks until a signal stops the server; returns the process exit code.
int serve(const ServeOptions& opts);

}  // namespace verbatim::server
