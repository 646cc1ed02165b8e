#pragma once
// What the HTTP handlers of `verbatim serve` share (internal to src/server).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "server/metrics.h"
#include "server/protocol.h"
#include "server/runtime.h"
#include "server/server.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace verbatim::server {

// An answer other than 400 that a handler gives by throwing (404 model, 503 loading, ...).
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& msg, std::string param = "")
      : std::runtime_error(msg), status(status), param(std::move(param)) {}
  int status;
  std::string param;
};

struct ServerState {
  ServeOptions opts;
  std::unique_ptr<Runtime> rt;          // set once loading finished
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};    // SIGTERM came: every new request gets 503 and Connection: close
  // Why the engine takes no more requests: a fault ended it, or the step watchdog found a step
  // that never ends (engine_hung). Set, then SIGUSR1 raised, by the engine's handler or the watchdog.
  std::mutex failure_mu;
  std::string engine_failure;           // "the engine failed: ..." / "the engine stopped responding: ..."
  std::atomic<bool> engine_hung{false};
  std::unique_ptr<Metrics> metrics;
  std::atomic<uint64_t> next_request{0};
  std::atomic<int> in_flight{0};        // generation requests being answered
  int64_t started_at = 0;               // unix seconds

  Runtime& runtime() const;             // throws HttpError 503 while loading
  std::string dead_reason();            // engine_failure, or the engine's own failure; "" while it serves
  std::string new_id(const char* prefix);
  // 404 when the body names another model than the one served (an absent model is fine).
  void check_model(const request_json& body) const;
};

using Clock = std::chrono::steady_clock;

void send_json(httplib::Response& res, const json& j, int status = 200);
void send_error(ServerState& st, httplib::Response& res, int status, const std::string& msg,
                const std::string& param = "");

// /v1/completions and /v1/chat/completions (generation_route.cpp).
void handle_generation(ServerState& st, const httplib::Request& req, httplib::Response& res, bool chat);

}  // namespace verbatim::server

namespace verbatim::server {
// The read-only and tokenizer routes (info_routes.cpp); each throws HttpError / InvalidRequest.
json models_json(ServerState& st);
json version_json(ServerState& st);
json tokenize_json(ServerState& st, const request_json& body);
json detokenize_json(ServerState& st, const request_json& body);
json tokenizer_info_json(ServerState& st);
}  // namespace verbatim::server
