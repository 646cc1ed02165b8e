// `verbatim serve`: routes, auth, errors, lifecycle (bind, load, serve, drain on SIGTERM) and the
// periodic status line.
#include "server/server.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/hash.h"
#include "model/config.h"
#include "server/access_log.h"
#include "server/auth.h"
#include "server/connection_pool.h"
#include "server/server_state.h"

namespace verbatim::server {
namespace {

void log_line(const std::string& s) {
  std::fprintf(stderr, "verbatim serve: %s\n", s.c_str());
  std::fflush(stderr);
}

class HttpServer : public httplib::Server {
 public:
  // Debian's library is built with CPPHTTPLIB_LISTEN_BACKLOG 5: with dozens of clients connecting
  // at once most SYNs would be dropped and retried a second later. Linux takes a second listen()
  // on a listening socket as a new backlog.
  void raise_backlog(int n) { ::listen(svr_sock_, n); }
  // Graceful stop. httplib's stop() also cuts every chunked (SSE) response short, so instead the
  // listening socket is shut down: accept() fails, the accept loop closes it and ends, and the
  // worker pool is joined once every in-flight request has been answered in full.
  void stop_accepting() { ::shutdown(svr_sock_, SHUT_RDWR); }
};

// A refusal the pre-routing handler decided for a request with a body. It is answered by the
// route's handler, after httplib has read the body: answered before, the unread body would be
// parsed as the connection's next request (and a keep-alive client would read that answer as the
// reply to its next request). httplib runs a request's pre-routing and handler on one thread.
struct Refusal {
  int status = 0;
  std::string message, param;
};
thread_local Refusal t_refusal;

// The message of an OpenAI error body, or "".
std::string error_message_of(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
      j["error"]["message"].is_string())
    return j["error"]["message"].get<std::string>();
  return "";
}

// Ends the connection once `res` (a finished answer with a body) is written. httplib 0.11 keeps a
// connection open whatever the answer's Connection header says (it reads only the request's); it
// closes one when writing the answer fails. So the body goes out through a content provider that
// reports failure once every byte is written: the client reads a whole answer, then end of file.
void close_after_answer(httplib::Response& res) {
  auto body = std::make_shared<std::string>(std::move(res.body));
  access_note_error(error_message_of(*body));  // the logger reads res.body, which is now empty
  res.body.clear();
  const std::string type = res.get_header_value("Content-Type");
  res.headers.erase("Content-Type");
  res.set_header("Connection", "close");
  res.set_content_provider(body->size(), type.c_str(), [body](size_t offset, size_t length, httplib::DataSink& sink) {
    sink.write(body->data() + offset, length);
    return false;  // the body is out: httplib closes the connection
  });
}

template <class F>
httplib::Server::Handler guarded(ServerState& st, F f) {
  return [&st, f](const httplib::Request& req, httplib::Response& res) {
    if (t_refusal.status) {
      const Refusal r = std::exchange(t_refusal, Refusal{});
      send_error(st, res, r.status, r.message, r.param);
      return;
    }
    if (st.draining) {  // a request on a connection kept alive past SIGTERM: answered, then closed
      const std::string dead = st.dead_reason();  // ready: drains follow the load
      send_error(st, res, 503,
                 dead.empty() ? "the server is shutting down and takes no new requests" : dead + "; this server is exiting");
      close_after_answer(res);
      return;
    }
    try {
      f(req, res);
    } catch (const InvalidRequest& e) {
      send_error(st, res, 400, e.what(), e.param());
    } catch (const HttpError& e) {
      send_error(st, res, e.status, e.what(), e.param);
    } catch (const QueueFull& e) {
      send_error(st, res, 503, e.what());
      res.set_header("Retry-After", "1");  // a full queue drains in steps of milliseconds
    } catch (const ShuttingDown& e) {
      send_error(st, res, 503, e.what());
    } catch (const EngineFailed& e) {
      send_error(st, res, 503, std::string(e.what()) + "; this server is exiting");
    } catch (const std::exception& e) {
      log_line(std::string("internal error on ") + req.method + " " + req.path + ": " + e.what());
      send_error(st, res, 500, std::string("internal error: ") + e.what());
    }
  };
}

// Every route's path and method, for 405 on a known path with another method.
struct RouteSpec {
  const char* path;
  const char* method;
  bool prefix;  // /v1/models/{id}
};
constexpr RouteSpec kRoutes[] = {
    {"/v1/completions", "POST", false}, {"/v1/chat/completions", "POST", false}, {"/v1/models", "GET", false},
    {"/v1/models/", "GET", true},       {"/health", "GET", false},               {"/version", "GET", false},
    {"/metrics", "GET", false},         {"/tokenize", "POST", false},            {"/detokenize", "POST", false},
    {"/tokenizer_info", "GET", false},  {"/reset_prefix_cache", "POST", false}};

const RouteSpec* route_of(const std::string& path) {
  for (const RouteSpec& r : kRoutes)
    if (r.prefix ? path.size() > std::strlen(r.path) && path.rfind(r.path, 0) == 0 : path == r.path) return &r;
  return nullptr;
}
bool method_allowed(const RouteSpec& r, const std::string& method) {
  return method == r.method || (std::strcmp(r.method, "GET") == 0 && method == "HEAD");
}

// A body sent with Transfer-Encoding: chunked (any case, in any list of codings).
bool is_chunked(const httplib::Request& req) {
  std::string te = req.get_header_value("Transfer-Encoding");
  for (char& c : te) c = char(std::tolower(static_cast<unsigned char>(c)));
  return te.find("chunked") != std::string::npos;
}

// A request that states no body length (no Content-Length, not chunked) has no body (RFC 9112
// 6.3); httplib 0.11 would instead read such a POST until the client hangs up or 30 s pass.
bool has_no_body(const httplib::Request& req) {
  return !req.has_header("Content-Length") && !is_chunked(req);
}

// No Content-Encoding header, or "identity" (any case, spaces around it).
bool is_identity_coding(const std::string& enc) {
  const size_t b = enc.find_first_not_of(" \t"), e = enc.find_last_not_of(" \t");
  if (b == std::string::npos) return true;
  std::string v = enc.substr(b, e - b + 1);
  for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
  return v == "identity";
}

std::string url_of(const std::string& host, int port) {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "http://" + h + ":" + std::to_string(port);
}

void register_routes(HttpServer& svr, ServerState& st) {
  // POST handlers by path, also called from the pre-routing handler for body-less POSTs.
  auto posts = std::make_shared<std::map<std::string, httplib::Server::Handler>>();
  auto post = [&svr, posts](const char* path, httplib::Server::Handler h) {
    (*posts)[path] = h;
    svr.Post(path, std::move(h));
  };
  svr.Get("/health", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    if (!st.ready) throw HttpError(503, "the model is still loading");
    // A dead engine answers 503 (for a load balancer), as vLLM's does, until the process has exited.
    if (std::string dead = st.dead_reason(); !dead.empty()) throw HttpError(503, dead + "; this server is exiting");
    res.status = 200;
  }));
  svr.Get("/version", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    send_json(res, version_json(st));
  }));
  svr.Get("/v1/models", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    send_json(res, models_json(st));
  }));
  svr.Get(R"(/v1/models/(.+))", guarded(st, [&st](const httplib::Request& req, httplib::Response& res) {
    const json all = models_json(st);
    for (const json& m : all["data"])
      if (req.matches[1] == m["id"].get<std::string>()) return send_json(res, m);
    throw HttpError(404, "The model `" + excerpt(req.matches[1]) + "` does not exist.", "model");
  }));
  svr.Get("/metrics", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    Runtime& rt = st.runtime();
    res.set_content(st.metrics->render(rt.async_engine->stats()), "text/plain; version=0.0.4; charset=utf-8");
  }));
  post("/tokenize", guarded(st, [&st](const httplib::Request& req, httplib::Response& res) {
    send_json(res, tokenize_json(st, parse_body(req.body)));
  }));
  post("/detokenize", guarded(st, [&st](const httplib::Request& req, httplib::Response& res) {
    send_json(res, detokenize_json(st, parse_body(req.body)));
  }));
  svr.Get("/tokenizer_info", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    send_json(res, tokenizer_info_json(st));
  }));
  post("/reset_prefix_cache", guarded(st, [&st](const httplib::Request&, httplib::Response& res) {
    st.runtime().async_engine->reset_prefix_cache();
    res.status = 200;
  }));
  post("/v1/completions", guarded(st, [&st](const httplib::Request& req, httplib::Response& res) {
    handle_generation(st, req, res, false);
  }));
  post("/v1/chat/completions", guarded(st, [&st](const httplib::Request& req, httplib::Response& res) {
    handle_generation(st, req, res, true);
  }));

  // --api-key guards the OpenAI routes (/v1/*), as vLLM's does, and the prefix-cache reset (it
  // changes server state); health, metrics, version and tokenization stay open.
  svr.set_pre_routing_handler([&st, posts](const httplib::Request& req, httplib::Response& res) {
    using HR = httplib::Server::HandlerResponse;
    access_begin();
    // A client's X-Request-Id comes back on the answer (as vLLM's --enable-request-id-headers)
    // and in the access log, so its logs and ours join on it.
    if (std::string id = sanitize_request_id(req.get_header_value("X-Request-Id")); !id.empty())
      res.set_header("X-Request-Id", id);
    t_refusal = Refusal{};
    // A chunked body is refused before anything reads it, whatever the route or the key: httplib
    // 0.11 reads one with no bound (its 64 MiB limit checks Content-Length only: 1 GiB sent
    // chunked grew the process by 1 GiB, with or without --api-key). The connection is closed, so
    // the unread body is never parsed as a next request. OpenAI clients send a Content-Length.
    if (is_chunked(req)) {
      send_error(st, res, 411, "a chunked request body is not accepted: send it with a Content-Length header",
                 "Transfer-Encoding");
      close_after_answer(res);
      return HR::Handled;
    }
    // Refused here when there is no body; with one, once httplib has read it (Refusal).
    auto refuse = [&](int status, const std::string& message, const std::string& param) {
      if (!has_no_body(req)) {
        t_refusal = Refusal{status, message, param};
        return HR::Unhandled;
      }
      send_error(st, res, status, message, param);
      return HR::Handled;
    };
    const std::string& key = st.opts.api_key;
    if (!key.empty() && (req.path.rfind("/v1/", 0) == 0 || req.path == "/reset_prefix_cache") &&
        !constant_time_equal(req.get_header_value("Authorization"), "Bearer " + key))
      return refuse(401, "Incorrect or missing API key: send the header 'Authorization: Bearer <key>'", "");
    // Compressed bodies are refused: httplib inflates gzip / deflate with no bound (its 64 MiB limit
    // counts the compressed bytes: 1 MB of gzip can grow to gigabytes) and reads an unknown coding as
    // plain text. The header is dropped so that httplib reads the body as raw bytes (bounded) before
    // the refusal. (req is httplib's own non-const Request, handed over as const.) OpenAI clients
    // send plain JSON.
    if (const std::string enc = req.get_header_value("Content-Encoding"); !is_identity_coding(enc)) {
      const_cast<httplib::Request&>(req).headers.erase("Content-Encoding");
      return refuse(415, "Content-Encoding '" + excerpt(enc) + "' is not accepted: send the body uncompressed",
                    "Content-Encoding");
    }
    // Body-less requests are answered here, before httplib would wait for a body that never comes.
    if (!has_no_body(req) || req.method == "GET" || req.method == "HEAD") return HR::Unhandled;
    const RouteSpec* r = route_of(req.path);
    if (!r) {
      send_error(st, res, 404, "Not Found: " + req.method + " " + excerpt(req.path));
    } else if (!method_allowed(*r, req.method)) {
      send_error(st, res, 405, "Method Not Allowed: " + req.method + " " + excerpt(req.path));
    } else if (auto it = posts->find(req.path); it != posts->end()) {
      it->second(req, res);  // as with an empty body
    } else {
      return HR::Unhandled;
    }
    return HR::Handled;
  });
  // Unrouted requests (404 / 405) and httplib's own refusals (413, 400) get OpenAI error JSON.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([&st](const httplib::Request& req, httplib::Response& res) {
    // An answer already written (a body, or close_after_answer's provider) is left as it is, and so
    // is a 499 (the client hung up before its answer): nobody reads a body, it was refused by
    // nobody, and it is no error answer for /metrics (the abort is counted as one).
    if (!res.body.empty() || res.content_provider_ || res.status == 499)
      return httplib::Server::HandlerResponse::Unhandled;
    const RouteSpec* r = route_of(req.path);
    if (res.status == 404 && r && !method_allowed(*r, req.method)) {
      send_error(st, res, 405, "Method Not Allowed: " + req.method + " " + excerpt(req.path));
    } else if (res.status == 404) {
      send_error(st, res, 404, "Not Found: " + req.method + " " + excerpt(req.path));
    } else if (res.status == 413 && req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      // httplib parses such bodies as forms and refuses them past 8 KiB (curl -d sends this type).
      send_error(st, res, 413,
                 "a body sent as application/x-www-form-urlencoded (curl -d without -H) is limited to 8 KiB: "
                 "send it with the header 'Content-Type: application/json'");
    } else {
      send_error(st, res, res.status,
                 res.status == 413 ? std::string("the request body is larger than 64 MiB")
                                   : "the request was refused (HTTP " + std::to_string(res.status) + ")");
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([&st](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(st, res, 500, "internal error");
  });
  if (st.opts.access_log)
    svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      AccessTaken t = access_take();  // always taken: it also clears this thread's state
      if (is_probe(req.method, req.path, res.status)) return;
      AccessRecord r;
      // httplib fills the peer only once the request line and headers parse: "-" before that.
      if (req.remote_addr.empty()) r.client = "-";
      else r.client = (req.remote_addr.find(':') != std::string::npos ? "[" + req.remote_addr + "]" : req.remote_addr) +
                      ":" + std::to_string(req.remote_port);
      r.method = req.method;
      r.path = req.path;
      r.status = res.status;
      r.ms = t.ms;
      r.generation = std::move(t.generation);
      r.request_id = sanitize_request_id(req.get_header_value("X-Request-Id"));
      // A stream's status is sent before its end: an error event after it is noted instead.
      if (res.status >= 400) r.error = t.error.empty() ? error_message_of(res.body) : std::move(t.error);
      else r.error = std::move(t.error);
      log_line(access_line(r));
    });
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

// An operator's signal while the process already exits after an engine failure: noted only.
void note_signal_after_failure(int sig) {
  log_line(std::string("received ") + signal_name(sig) + ": already exiting after the engine failed (a second signal exits at once)");
}

// Calls tick() every `interval_s` seconds on its own thread until destroyed or tick() returns
// false. Off for an interval <= 0 or past a day (wait_for's conversion would overflow).
class Ticker {
 public:
  Ticker(double interval_s, std::function<bool()> tick) : interval_(interval_s), tick_(std::move(tick)) {
    if (interval_s > 0 && interval_s <= 86400) thread_ = std::thread([this] { run(); });
  }
  ~Ticker() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock l(mu_);
    while (!cv_.wait_for(l, std::chrono::duration<double>(interval_), [&] { return stop_; }))
      if (!tick_()) return;
  }

  double interval_;
  std::function<bool()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// One line every interval while there is work: what runs, what waits, KV use, prefix hits, speed.
std::function<bool()> status_line(ServerState& st) {
  return [&st, last = EngineStats{}, last_t = Clock::now()]() mutable {
    if (!st.ready) return true;
    EngineStats s = st.rt->async_engine->stats();
    auto t = Clock::now();
    double dt = std::chrono::duration<double>(t - last_t).count();
    bool busy = s.running + s.waiting > 0 || s.generation_tokens != last.generation_tokens ||
                s.prompt_tokens != last.prompt_tokens;
    if (busy && dt > 0) {
      uint64_t q = s.prefix_queries - last.prefix_queries, h = s.prefix_hits - last.prefix_hits;
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "status: %d running, %d waiting, KV %.1f%% used, prefix cache hit rate %.1f%%, "
                    "prompt %.1f tok/s, generation %.1f tok/s, %llu preemptions (%llu since start)",
                    s.running, s.waiting, s.kv_blocks_total ? 100.0 * s.kv_blocks_used / s.kv_blocks_total : 0.0,
                    q ? 100.0 * double(h) / double(q) : 0.0, double(s.prompt_tokens - last.prompt_tokens) / dt,
                    double(s.generation_tokens - last.generation_tokens) / dt,
                    static_cast<unsigned long long>(s.preemptions - last.preemptions),  // this interval's, as the rates
                    static_cast<unsigned long long>(s.preemptions));
      log_line(buf);
    }
    last = s;
    last_t = t;
    return true;
  };
}

// The step watchdog's tick: once the running step has passed `limit_s`, marks the engine hung,
// wakes main (SIGUSR1) and stops.
std::function<bool()> step_watchdog(ServerState& st, double limit_s) {
  return [&st, limit_s] {
    if (!st.ready) return true;
    const double ran = st.rt->async_engine->step_running_for();
    if (ran <= limit_s) return true;
    char why[160];
    std::snprintf(why, sizeof why, "the engine stopped responding: a step has run %.1f s, past --engine-step-timeout %g s",
                  ran, limit_s);
    {
      std::lock_guard lk(st.failure_mu);
      if (!st.engine_failure.empty()) return false;  // a fault came first
      st.engine_failure = why;
      st.engine_hung = true;
    }
    kill(getpid(), SIGUSR1);  // wakes main's sigwait (if it still waits: not during a SIGTERM drain)
    // A hung engine thread can never be joined, nor can a handler waiting on it (a prefix-cache
    // reset): whatever main is blocked on, the process ends 10 s from now (twice the keep-alive
    // timeout: the generation answers end with an error at their next 100 ms poll).
    std::thread([&st] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      log_line("exited: the engine was hung; " + std::to_string(st.in_flight.load()) +
               " answer(s) still in flight after 10 s were cut off");
      std::_Exit(1);
    }).detach();
    return false;
  };
}

}  // namespace

std::string ServerState::dead_reason() {
  {
    std::lock_guard lk(failure_mu);
    if (!engine_failure.empty()) return engine_failure;
  }
  // Before the handler has run: the engine says it failed as soon as its failing step ends.
  if (std::string f = rt->async_engine->failure(); !f.empty()) return "the engine failed: " + f;
  return "";
}

Runtime& ServerState::runtime() const {
  if (!ready) throw HttpError(503, "the model is still loading; retry when /health answers 200");
  return *rt;
}

std::string ServerState::new_id(const char* prefix) {
  static const uint64_t salt = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  uint64_t n = next_request++;
  return prefix + hex64(hash_combine(salt, n)) + hex64(hash_combine(n, salt));
}

void ServerState::check_model(const request_json& body) const {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_string()) throw InvalidRequest("'model' must be a string (the served model's name)", "model");
  const std::string& m = it->get_ref<const std::string&>();
  const std::vector<std::string>& names = runtime().model_names;
  if (!m.empty() && std::find(names.begin(), names.end(), m) == names.end())
    throw HttpError(404, "The model `" + excerpt(m) + "` does not exist.", "model");
}

void send_json(httplib::Response& res, const json& j, int status) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(ServerState& st, httplib::Response& res, int status, const std::string& msg, const std::string& param) {
  if (st.ready) st.metrics->http_error(status);  // metrics exist once ready (set before it)
  send_json(res, error_json(status, msg, param), status);
}

int serve(const ServeOptions& o) {
  // Signals go to the main thread's sigwait only: block them before any thread starts. SIGTERM and
  // SIGINT are an operator's; SIGUSR1 is the engine's own, raised when a fault ended it (a separate
  // signal, so it is never taken for an operator's second one).
  sigset_t operator_sigs;
  sigemptyset(&operator_sigs);
  sigaddset(&operator_sigs, SIGTERM);
  sigaddset(&operator_sigs, SIGINT);
  sigset_t sigs = operator_sigs;
  sigaddset(&sigs, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hung up must cost a failed write, not the process

  for (const std::string& note : o.notes) log_line(note);
  ServerState st;
  st.opts = o;
  st.opts.runtime.async = true;
  st.started_at = Runtime::now();
  // Fail fast, before binding, on what needs no loading: the folder's config (and --max-model-len
  // against it, not only once the weights have loaded), the device, the dtype.
  if (!o.runtime.model_dir.empty()) effective_max_model_len(o.runtime.engine, ModelConfig::load(o.runtime.model_dir));
  parse_device(o.runtime.device);
  if (o.runtime.dtype != "auto") parse_dtype(o.runtime.dtype);

  HttpServer svr;
  // A thread per open connection (connection_pool.h): enough for every running and waiting request
  // plus health checks and scrapes, so the engine's queue limit answers 503 before connections wait.
  const size_t threads = o.http_threads > 0 ? size_t(o.http_threads)
                                            : size_t(o.runtime.engine.max_num_seqs) + size_t(o.runtime.engine.max_waiting) + 64;
  svr.new_task_queue = [threads] { return new ConnectionPool(std::min<size_t>(16, threads), threads); };
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(5);
  svr.set_payload_max_length(size_t(64) << 20);
  svr.set_read_timeout(30);
  svr.set_write_timeout(30);
  // Stream chunks leave at once: without it a keep-alive client waits ~40 ms (delayed ACK) per answer.
  svr.set_tcp_nodelay(true);
  // httplib's default sets SO_REUSEPORT, so a second server on a taken port would bind too and the
  // kernel would split the connections between them (two models answering one URL). SO_REUSEADDR
  // alone still allows a restart over the old socket's TIME_WAIT.
  svr.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  register_routes(svr, st);

  int port = o.port;
  if (port == 0) port = svr.bind_to_any_port(o.host);
  else if (!svr.bind_to_port(o.host, port)) port = -1;
  if (port <= 0) {
    log_line("cannot listen on " + url_of(o.host, o.port) + " (in use, or not an address of this machine)");
    return 1;
  }
  svr.raise_backlog(4096);
  const std::string url = url_of(o.host, port);
  log_line("listening on " + url + " (loading the model; /health answers 503 until it is ready)");
  std::thread http([&svr] { svr.listen_after_bind(); });

  std::string load_error;
  std::atomic<bool> loader_done{false};  // set before the loader's own SIGTERM on failure
  std::thread loader([&] {
    try {
      st.rt = std::make_unique<Runtime>(Runtime::load(st.opts.runtime));
      st.metrics = std::make_unique<Metrics>(st.rt->model_name());
      log_line(st.rt->describe());
      if (std::string w = st.rt->capacity_warning(); !w.empty()) log_line(w);
      if (!st.rt->defaults.from_model.empty()) {
        std::string f;
        for (const auto& k : st.rt->defaults.from_model) f += (f.empty() ? "" : ", ") + k;
        log_line("sampling defaults from the model's generation_config.json: " + f +
                 " (--generation-config vllm ignores them)");
      }
      // A device fault ends the engine for good (engine.h, Engine::failure): the process exits 1
      // once the failed requests are answered, so a supervisor restarts it (vLLM's rule too).
      st.rt->async_engine->on_failure([&st](const std::string& why) {
        {
          std::lock_guard lk(st.failure_mu);
          if (st.engine_failure.empty()) st.engine_failure = "the engine failed: " + why;
        }
        kill(getpid(), SIGUSR1);  // wakes the sigwait below (pending and ignored if it drains already)
      });
      st.ready = true;
      log_line("ready at " + url + " (OpenAI API under " + url + "/v1)");
      loader_done = true;
    } catch (const std::exception& e) {
      load_error = e.what();
      loader_done = true;
      kill(getpid(), SIGTERM);  // wakes the sigwait below
    }
  });

  Ticker reporter(o.status_interval_s, status_line(st));
  const double step_limit = o.engine_step_timeout_s >= 0 ? o.engine_step_timeout_s
                            : parse_device(o.runtime.device).kind == "cuda" ? 60.0 : 0.0;
  Ticker watchdog(step_limit > 0 ? 0.25 : 0, step_watchdog(st, step_limit));
  int sig = 0;
  for (;;) {
    sigwait(&sigs, &sig);
    if (sig != SIGUSR1) break;
    std::lock_guard lk(st.failure_mu);
    if (!st.engine_failure.empty()) break;  // else a SIGUSR1 from outside: ignored
  }
  // A signal while the model loads: nothing can be in flight (every model route answers 503 until
  // ready), so the process exits now instead of after a load that takes minutes on a real
  // checkpoint (during which a second signal was not even read).
  if (!loader_done && !st.ready) {
    log_line(std::string("received ") + signal_name(sig) + " while the model was loading: exiting (no request was in flight)");
    std::_Exit(0);
  }
  loader.join();
  if (!load_error.empty()) {
    log_line("error: " + load_error);
    // Not svr.stop(): it does nothing before the accept loop has started (httplib 0.11 checks its
    // is_running flag), and a load that fails at once (a bad option) can beat that thread there,
    // which then listened for ever. A shut-down socket ends the loop whenever it starts.
    svr.stop_accepting();
    http.join();
    return 1;
  }
  std::string engine_failure;
  if (sig == SIGUSR1 || st.engine_hung) engine_failure = st.dead_reason();  // hung: maybe beside an operator's signal
  st.draining = true;
  svr.stop_accepting();  // before the log line: whoever reads it must find the port closed
  // After an engine failure the process is on its way out already: an operator's first signal (a
  // supervisor that saw /health say 503; one pending beside the engine's) is only noted, and a
  // second one exits at once, as after SIGTERM.
  int free_signals = 0;
  if (st.engine_hung) {
    log_line("error: " + engine_failure +
             "; no new connections; answering what is in flight with an error, then exiting with status 1 "
             "without waiting for the engine (restart the server)");
  } else if (!engine_failure.empty()) {
    log_line("error: " + engine_failure +
             "; every request it held was failed with it; no new connections; answering what is in flight, "
             "then exiting with status 1 (restart the server)");
  }
  if (!engine_failure.empty() && sig == SIGUSR1) {  // an operator's signal, if it came first, was the one taken
    free_signals = 1;
    const timespec now{0, 0};
    if (int pending = sigtimedwait(&operator_sigs, nullptr, &now); pending > 0) {
      note_signal_after_failure(pending);
      free_signals = 0;
    }
  } else if (engine_failure.empty()) {
    log_line(std::string("received ") + signal_name(sig) + ": no new connections; finishing " +
             std::to_string(st.in_flight.load()) + " in-flight request(s) (a second signal exits at once)");
  }
  std::thread([operator_sigs, free_signals] {
    int again = 0;
    for (int i = 0; i < free_signals; ++i) {
      sigwait(&operator_sigs, &again);
      note_signal_after_failure(again);
    }
    sigwait(&operator_sigs, &again);
    log_line("received a second signal: exiting now, in-flight requests are cut off");
    std::_Exit(1);
  }).detach();
  // A hung engine: the answers go out (or the watchdog's 10 s deadline ends the process), then the
  // process exits without joining the engine thread.
  auto exit_hung = [&st](bool said) {
    if (!said) log_line("error: " + st.dead_reason());
    log_line("exited: the engine was hung");
    std::_Exit(1);
  };
  const bool hung_at_start = st.engine_hung;
  http.join();  // every worker finished its connection
  if (st.engine_hung) exit_hung(hung_at_start);  // hung before or during the drain
  st.rt->async_engine->drain_and_stop();  // a step hanging here: the watchdog's deadline ends it
  if (st.engine_hung) exit_hung(false);  // a step ran past the limit, then returned
  if (engine_failure.empty()) {  // it may have failed while draining
    engine_failure = st.dead_reason();
    if (!engine_failure.empty()) log_line("error: " + engine_failure);
  }
  if (!engine_failure.empty()) {
    log_line("exited after the engine failed");
    return 1;
  }
  log_line("stopped cleanly");
  return 0;
}

}  // namespace verbatim::server
