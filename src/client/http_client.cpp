#include "client/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <random>
#include <thread>

#include "client/sse.h"

namespace verbatim::client {

namespace {

using Clock = std::chrono::steady_clock;

std::string excerpt(const std::string& s, size_t n = 200) {
  std::string out;
  for (char c : s.substr(0, n)) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  if (s.size() > n) out += "...";
  return out;
}

// Retry-After in seconds (RFC 9110 also allows an HTTP date: that form, or anything else, is -1).
double retry_after_of(const httplib::Response& res) {
  const std::string v = res.get_header_value("Retry-After");
  if (v.empty()) return -1;
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  return end != v.c_str() && *end == '\0' && std::isfinite(s) && s >= 0 ? s : -1;
}

bool refused_for_now(int status) { return status == 429 || status == 503; }

void set_timeout(const std::function<void(time_t, time_t)>& set, double seconds) {
  double whole = std::floor(seconds);
  set(static_cast<time_t>(whole), static_cast<time_t>((seconds - whole) * 1e6));
}

}  // namespace

struct HttpClient::Impl {
  httplib::Client cli;
  Impl(const Url& url, const ClientOptions& o) : cli(url.host, url.port) {
    set_timeout([&](time_t s, time_t us) { cli.set_connection_timeout(s, us); }, o.connect_timeout_s);
    set_timeout([&](time_t s, time_t us) { cli.set_read_timeout(s, us); }, o.timeout_s);
    set_timeout([&](time_t s, time_t us) { cli.set_write_timeout(s, us); }, o.timeout_s);
    cli.set_keep_alive(true);
    cli.set_tcp_nodelay(true);  // small requests: no Nagle + delayed-ACK stall (40 ms) on the clock
    httplib::Headers h;
    if (!o.api_key.empty()) h.emplace("Authorization", "Bearer " + o.api_key);
    cli.set_default_headers(h);
  }
};

HttpClient::HttpClient(Url url, ClientOptions opts)
    : url_(std::move(url)), opts_(opts), impl_(std::make_unique<Impl>(url_, opts_)) {}
HttpClient::~HttpClient() = default;

namespace {

// Past --timeout: "no WHAT from URL within N s (WHERE)[: WHY]; raise --timeout ...".
ClientError too_slow(const Url& url, const ClientOptions& o, const std::string& what, const std::string& where,
                     const std::string& why = "") {
  return ClientError(FailureKind::Timeout, 0,
                     "no " + what + " from " + url.text() + " within " + std::to_string(int(std::lround(o.timeout_s))) +
                         " s (" + where + ")" + (why.empty() ? "" : ": " + why) +
                         "; raise --timeout if the server is only slow");
}

// A transport failure (no httplib response) as a message a user can act on.
ClientError transport_error(const Url& url, const std::string& what, httplib::Error err, double elapsed_s,
                            const ClientOptions& o) {
  std::string where = " (" + what + ")";
  switch (err) {
    case httplib::Error::Connection:
    case httplib::Error::BindIPAddress:
      return ClientError(FailureKind::Unreachable, 0,
                         "cannot connect to " + url.text() + where + ": is a server listening there?");
    case httplib::Error::ConnectionTimeout:
      return ClientError(FailureKind::Unreachable, 0,
                         "no connection to " + url.text() + " within " + std::to_string(int(o.connect_timeout_s)) +
                             " s" + where);
    case httplib::Error::Read:
    case httplib::Error::Write:
    case httplib::Error::Unknown:
    default:
      if (elapsed_s >= o.timeout_s * 0.95) return too_slow(url, o, "answer", what);
      return ClientError(FailureKind::Disconnected, 0,
                         "the server at " + url.text() + " closed the connection" + where +
                             " without a complete, well-formed HTTP answer: did it stop or crash, or is it not an "
                             "HTTP server? (" + httplib::to_string(err) + ")");
  }
}

}  // namespace

ClientError http_status_error(const Url& url, const std::string& method, const std::string& path,
                              const HttpResponse& res) {
  std::string server_msg;
  try {
    json j = json::parse(res.body);
    if (j.is_object() && j.contains("error")) {
      const json& e = j["error"];
      if (e.is_object() && e.contains("message") && e["message"].is_string()) server_msg = e["message"];
      else if (e.is_string()) server_msg = e.get<std::string>();
    } else if (j.is_object() && j.contains("message") && j["message"].is_string()) {
      server_msg = j["message"];
    } else if (j.is_object() && j.contains("detail") && j["detail"].is_string()) {
      server_msg = j["detail"];  // FastAPI's shape (vLLM, SGLang routes)
    }
  } catch (const std::exception&) {
  }
  std::string shown = server_msg.empty() ? excerpt(res.body) : excerpt(server_msg, 300);
  ClientError e(FailureKind::HttpStatus, res.status,
                method + " " + path + " on " + url.text() + " answered HTTP " + std::to_string(res.status) +
                    (shown.empty() ? "" : ": " + shown) +
                    (res.resends > 0 ? " (and again after " + std::to_string(res.resends) + " resends; --retries)" : ""));
  e.server_message = server_msg;
  e.retry_after_s = res.retry_after_s;
  return e;
}

bool HttpClient::wait_to_resend(int status, double retry_after_s, int attempt) {
  if (!refused_for_now(status) || attempt >= opts_.retries) return false;
  const double backoff = 0.5 * std::ldexp(1.0, std::min(attempt, 16));
  // Up to half as long again at random, so users refused together do not all come back together
  // (a server's Retry-After is one number for every one of them).
  thread_local std::mt19937 rng{std::random_device{}()};
  const double spread = 1.0 + std::uniform_real_distribution<double>(0.0, 0.5)(rng);
  const double wait = std::min((retry_after_s >= 0 ? retry_after_s : backoff) * spread, opts_.retry_max_wait_s);
  if (opts_.tally) ++(status == 429 ? opts_.tally->resent_429 : opts_.tally->resent_503);  // before the wait: seen during it
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, wait)));
  return true;
}

HttpResponse HttpClient::exchange(const std::string& method, const std::string& path, const std::string* body) {
  for (int attempt = 0;; ++attempt) {
    HttpResponse r = exchange_once(method, path, body);
    r.resends = attempt;
    if (!wait_to_resend(r.status, r.retry_after_s, attempt)) return r;
  }
}

// The read timeout bounds each read only: a server that sends a byte now and then would hold a
// request forever. So the body goes through a receiver that also keeps the whole answer's deadline.
HttpResponse HttpClient::exchange_once(const std::string& method, const std::string& path, const std::string* body) {
  httplib::Request req;
  req.method = method;
  req.path = url_.base + path;
  if (body) {
    req.body = *body;
    req.set_header("Content-Type", "application/json");
  }
  std::string received;
  bool past_deadline = false;
  auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    past_deadline = elapsed() > opts_.timeout_s;
    return !past_deadline;
  };
  auto r = impl_->cli.send(req);
  if (past_deadline) throw too_slow(url_, opts_, "whole answer", method + " " + path, "it kept sending, too slowly");
  if (!r) throw transport_error(url_, method + " " + path, r.error(), elapsed(), opts_);
  return {r->status, std::move(received), retry_after_of(*r)};
}

HttpResponse HttpClient::get(const std::string& path) { return exchange("GET", path, nullptr); }

HttpResponse HttpClient::post(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return exchange("POST", path, &text);
}

namespace {
json parse_json_answer(const Url& url, const std::string& what, const std::string& body) {
  try {
    return json::parse(body);
  } catch (const std::exception&) {
    throw ClientError(FailureKind::BadAnswer, 0,
                      "the answer to " + what + " from " + url.text() + " is not JSON: '" + excerpt(body, 80) + "'");
  }
}
}  // namespace

json HttpClient::get_json(const std::string& path) {
  HttpResponse r = get(path);
  if (r.status < 200 || r.status >= 300) throw http_status_error(url_, "GET", path, r);
  return parse_json_answer(url_, "GET " + path, r.body);
}

json HttpClient::post_json(const std::string& path, const json& body) {
  HttpResponse r = post(path, body);
  if (r.status < 200 || r.status >= 300) throw http_status_error(url_, "POST", path, r);
  return parse_json_answer(url_, "POST " + path, r.body);
}

// A refused stream (429 / 503) got no event: on_data never ran, so it can be sent again whole.
void HttpClient::post_stream(const std::string& path, const json& body,
                             const std::function<void(const std::string&)>& on_data) {
  for (int attempt = 0;; ++attempt) {
    try {
      return post_stream_once(path, body, on_data, attempt);
    } catch (const ClientError& e) {
      if (e.kind() != FailureKind::HttpStatus || !wait_to_resend(e.status(), e.retry_after_s, attempt)) throw;
    }
  }
}

void HttpClient::post_stream_once(const std::string& path, const json& body,
                                  const std::function<void(const std::string&)>& on_data, int resends) {
  int status = 0;
  double retry_after = -1;
  std::string error_body;
  std::exception_ptr failure;
  auto t0 = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  // The read timeout is per read: keep-alive comments (": ping") or a dribble would hold a stream
  // with no event forever. So the wait for the next event has its own deadline, and a transport
  // failure is judged by the time since the last byte, not since the request.
  Clock::time_point last_event = t0, last_byte = t0;
  bool stalled = false;
  SseParser sse([&](const std::string& data) {
    last_event = Clock::now();
    on_data(data);
  });

  httplib::Request req;
  req.method = "POST";
  req.path = url_.base + path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    retry_after = retry_after_of(res);
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    last_byte = Clock::now();
    if (status < 200 || status >= 300) {
      if (error_body.size() < 65536) error_body.append(data, n);
      return true;
    }
    try {
      sse.feed(std::string_view(data, n));
      if (since(last_event) > opts_.timeout_s) {
        stalled = true;
        return false;
      }
      return true;
    } catch (...) {
      failure = std::current_exception();  // never unwind through httplib; cancel, rethrow below
      return false;
    }
  };
  auto r = impl_->cli.send(req);
  if (failure) std::rethrow_exception(failure);
  if (stalled)
    throw too_slow(url_, opts_, "stream event", "POST " + path + ", streaming",
                   "it sent only keep-alive comments or partial events");
  if (!r) throw transport_error(url_, "POST " + path + ", streaming", r.error(), since(last_byte), opts_);
  if (r->status < 200 || r->status >= 300) throw http_status_error(url_, "POST", path, {r->status, error_body, retry_after, resends});
  sse.finish();
  if (!sse.saw_done() && sse.events() == 0)
    throw ClientError(FailureKind::BadAnswer, 0,
                      "POST " + path + " on " + url_.text() + " with \"stream\": true sent no server-sent events");
}

}  // namespace verbatim::client
