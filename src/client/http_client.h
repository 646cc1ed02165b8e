#pragma once
// A blocking HTTP/1.1 client for one OpenAI-compatible server (cpp-httplib underneath). Every
// call is bounded by timeouts, so a dead or stuck server gives a ClientError, never a hang.
// Not thread-safe: each concurrent user owns its own HttpClient.
#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "client/url.h"
#include "core/error.h"

namespace verbatim::client {

using json = nlohmann::ordered_json;

enum class FailureKind {
  Unreachable,   // no TCP connection
  Timeout,       // connected, but no answer within the read timeout
  Disconnected,  // the connection closed mid-answer (server killed or crashed)
  HttpStatus,    // an answer with a non-2xx status
  BadAnswer,     // 2xx, but not the JSON / SSE the API promises
  ErrorEvent,    // a stream that ended in the server's error event (it failed the request mid-answer)
};

class ClientError : public Error {
 public:
  ClientError(FailureKind kind, int status, const std::string& msg) : Error(msg), kind_(kind), status_(status) {}
  FailureKind kind() const { return kind_; }
  int status() const { return status_; }  // HTTP status for HttpStatus, else 0
  // The server's own error text ("error.message" of OpenAI's error JSON), when it sent one.
  std::string server_message;
  double retry_after_s = -1;  // HttpStatus: the answer's Retry-After seconds, -1 when it gave none

 private:
  FailureKind kind_;
  int status_;
};

// Resends of requests a server refused for now (429 or 503), counted across every client of a run
// that shares it.
struct RetryTally {
  std::atomic<int> resent_429{0};
  std::atomic<int> resent_503{0};
  int total() const { return resent_429.load() + resent_503.load(); }
};

struct ClientOptions {
  std::string api_key;             // sent as "Authorization: Bearer KEY" when not empty
  double timeout_s = 300;          // longest wait for a whole answer (get / post), or for the next SSE event
  double connect_timeout_s = 10;
  // A 429 or 503 answer (the server took nothing in: rate limit, full queue) is sent again up to
  // `retries` times, after its Retry-After seconds when it gives them, else 0.5, 1, 2, ... s (each
  // up to half as long again at random, so refused users spread out), at most retry_max_wait_s.
  // A generation request is the same request however often it is sent, so a resend changes no
  // output a check compares. 0: the first refusal is the error.
  int retries = 0;
  double retry_max_wait_s = 30;
  std::shared_ptr<RetryTally> tally;  // counts the resends when set
};

struct HttpResponse {
  int status = 0;
  std::string body;
  double retry_after_s = -1;  // the Retry-After header in seconds; -1 when absent or a date
  int resends = 0;            // times the request was sent again after a 429 or 503 before this answer
};

class HttpClient {
 public:
  HttpClient(Url url, ClientOptions opts);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Raw exchange: throws only for transport failures (Unreachable, Timeout, Disconnected); the whole
  // answer must arrive within timeout_s, not only each read.
  HttpResponse get(const std::string& path);
  HttpResponse post(const std::string& path, const json& body);

  // 2xx with a JSON body, else ClientError naming the route, the status and the server's message.
  json get_json(const std::string& path);
  json post_json(const std::string& path, const json& body);

  // POST with "stream": the payload of every SSE event goes to on_data as it arrives ("[DONE]"
  // excluded). An exception from on_data cancels the request and is rethrown.
  void post_stream(const std::string& path, const json& body, const std::function<void(const std::string&)>& on_data);

  const Url& url() const { return url_; }
  const ClientOptions& options() const { return opts_; }

 private:
  HttpResponse exchange(const std::string& method, const std::string& path, const std::string* body);
  HttpResponse exchange_once(const std::string& method, const std::string& path, const std::string* body);
  // resends: times this request was already refused and sent again (for the final error's text).
  void post_stream_once(const std::string& path, const json& body,
                        const std::function<void(const std::string&)>& on_data, int resends);
  // After answer `attempt` (0 first) refused with `status`: whether to send again (then it has
  // waited and counted the resend).
  bool wait_to_resend(int status, double retry_after_s, int attempt);
  struct Impl;
  Url url_;
  ClientOptions opts_;
  std::unique_ptr<Impl> impl_;
};

// The error a non-2xx answer stands for (message from OpenAI's error JSON when present).
ClientError http_status_error(const Url& url, const std::string& method, const std::string& path,
                              const HttpResponse& res);

}  // namespace verbatim::client
