#pragma once
// A blocking HTTP/1.1 client for one OpenAI-compatible server (cpp-httplib underneath). Every
// call is bounded by timeouts, so a dead or stuck server gives a ClientError, never a hang.
// Not thread-safe: each concurrent user owns its own HttpClient.
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
};

class ClientError : public Error {
 public:
  ClientError(FailureKind kind, int status, const std::string& msg) : Error(msg), kind_(kind), status_(status) {}
  FailureKind kind() const { return kind_; }
  int status() const { return status_; }  // HTTP status for HttpStatus, else 0
  // The server's own error text ("error.message" of OpenAI's error JSON), when it sent one.
  std::string server_message;

 private:
  FailureKind kind_;
  int status_;
};

struct ClientOptions {
  std::string api_key;             // sent as "Authorization: Bearer KEY" when not empty
  double timeout_s = 300;          // longest wait for a whole answer (get / post), or for the next SSE event
  double connect_timeout_s = 10;
};

struct HttpResponse {
  int status = 0;
  std::string body;
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
  struct Impl;
  Url url_;
  ClientOptions opts_;
  std::unique_ptr<Impl> impl_;
};

// The error a non-2xx answer stands for (message from OpenAI's error JSON when present).
ClientError http_status_error(const Url& url, const std::string& method, const std::string& path,
                              const HttpResponse& res);

}  // namespace verbatim::client
