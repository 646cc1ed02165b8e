#include "support/client_noisy_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <vector>

namespace verbatim::test {

namespace {

using json = nlohmann::json;

uint64_t mix(uint64_t x) {  // splitmix64: deterministic token ids from (prompt, position, noise)
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Server : public httplib::Server {
 public:
  // Debian's cpp-httplib listens with a backlog of 5; 64 clients connecting at once need more.
  void raise_backlog(int n) { ::listen(svr_sock_, n); }
};

}  // namespace

struct NoisyServer::Impl {
  NoisyServerOptions o;
  Server svr;
  std::atomic<int> in_flight{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<int> refused{0};  // generation requests seen, for refuse_first
  std::atomic<bool> stopping{false};
  std::atomic<int>* completions = nullptr;
  std::atomic<int>* requests = nullptr;
  std::atomic<int>* resets = nullptr;
  std::mutex cache_mu;
  std::set<std::string> cache;  // CacheHit: the prompts seen since the last (working) reset

  explicit Impl(NoisyServerOptions opts) : o(std::move(opts)) {
    svr.new_task_queue = [] { return new httplib::ThreadPool(96); };
    svr.set_keep_alive_timeout(1);  // stop() waits for idle keep-alive connections
    svr.set_tcp_nodelay(true);
    routes();
  }

  void error(httplib::Response& res, int status, const std::string& msg) {
    res.status = status;
    res.set_content(json{{"error", {{"message", msg}, {"type", "server_error"}, {"param", nullptr}, {"code", status}}}}.dump(),
                    "application/json");
  }

  // The answer's tokens and logprobs; `crowd` is the most requests seen in flight with this one.
  void make_tokens(const json& prompt, int n, int crowd, uint64_t call, bool hit, std::vector<int>& ids,
                   std::vector<double>& lps) {
    uint64_t h = o.same_for_every_prompt ? 42 : std::hash<std::string>{}(prompt.dump());
    for (int k = 0; k < n; ++k) {
      uint64_t noise = 0;
      if (k >= o.noise_from) {
        if (o.mode == NoiseMode::Concurrency && crowd > 1) noise = 1000 + static_cast<uint64_t>(crowd);
        if (o.mode == NoiseMode::CacheHit && hit) noise = 77;
        if (o.mode == NoiseMode::CallCount) noise = 7 + call;
        noise += o.salt * 1000003;
      }
      int id = static_cast<int>(100 + mix(h ^ mix(static_cast<uint64_t>(k) + 31 * noise)) % 400);
      double lp = -0.001 * static_cast<double>(mix(h + static_cast<uint64_t>(k)) % 5000) - 0.0123;
      if (o.mode == NoiseMode::LogprobBits && k == o.noise_from && mix(call) % 2 == 1) lp = std::nextafter(lp, 0.0);
      ids.push_back(id);
      lps.push_back(lp);
    }
  }

  void generation(const httplib::Request& req, httplib::Response& res, bool chat) {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const std::exception&) {
      return error(res, 400, "body is not JSON");
    }
    requests->fetch_add(1);
    if (o.mode == NoiseMode::Errors500) return error(res, 500, "the noisy test server fails on purpose");
    if (refused.fetch_add(1) < o.refuse_first) {
      if (!o.retry_after.empty()) res.set_header("Retry-After", o.retry_after);
      return error(res, o.refuse_status, "the noisy test server refuses for now, on purpose");
    }
    if (o.strict_fields && body.contains("return_token_ids"))
      return error(res, 400, "Unrecognized request argument supplied: return_token_ids");
    if (o.mode == NoiseMode::Hang) {
      for (int i = 0; i < 600 && !stopping; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return error(res, 503, "stopping");
    }
    json prompt = chat ? body.value("messages", json()) : body.value("prompt", json());
    if (prompt.is_null()) return error(res, 400, chat ? "messages is required" : "prompt is required");
    int n = body.value("max_tokens", 16);
    if (o.token_cap > 0) n = std::min(n, o.token_cap);
    bool stream = body.value("stream", false);
    bool want_ids = body.value("return_token_ids", false);
    bool want_lp = chat ? body.value("logprobs", false) : body.contains("logprobs") && body["logprobs"].is_number();
    if (o.mode == NoiseMode::NullText) want_ids = want_lp = false;
    if (o.completions_without_logprobs && !chat) want_lp = false;
    uint64_t call = calls.fetch_add(1);
    int now = in_flight.fetch_add(1) + 1;
    int crowd = now;
    completions->fetch_add(1);
    if (!stream) {
      // Stay in flight a while, watching how many others arrive: a batch forms as on a real server.
      for (int t = 0; t < o.hold_ms; t += 5) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        crowd = std::max(crowd, in_flight.load());
      }
    }
    bool hit = false;
    if (o.mode == NoiseMode::CacheHit) {
      std::lock_guard<std::mutex> lock(cache_mu);
      hit = !cache.insert(prompt.dump()).second;
    }
    if (o.mode == NoiseMode::BareAfterFirst && call > 0) want_ids = want_lp = false;
    std::vector<int> ids;
    std::vector<double> lps;
    make_tokens(prompt, n, crowd, call, hit, ids, lps);
    in_flight.fetch_sub(1);
    json out;
    out["id"] = "cmpl-noisy-" + std::to_string(call);
    out["object"] = chat ? "chat.completion" : "text_completion";
    out["created"] = 0;
    out["model"] = "noisy-model";
    out["system_fingerprint"] = "fp_noisy";
    std::string text;
    for (int id : ids) text += " t" + std::to_string(id);
    if (o.mode == NoiseMode::TextUnderConcurrency && crowd > 1) text += " extra";
    if (!stream) {
      json c;
      c["index"] = 0;
      const json shown = o.mode == NoiseMode::NullText ? json(nullptr) : json(text);
      if (chat) c["message"] = {{"role", "assistant"}, {"content", shown}};
      else c["text"] = shown;
      if (want_lp) {
        if (chat) {
          json content = json::array();
          for (size_t k = 0; k < ids.size(); ++k)
            content.push_back(o.chat_lp_without_token
                                  ? json{{"logprob", lps[k]}}
                                  : json{{"token", " t" + std::to_string(ids[k])}, {"logprob", lps[k]}, {"top_logprobs", json::array()}});
          c["logprobs"] = {{"content", content}};
        } else {
          json toks = json::array();
          for (int id : ids) toks.push_back(" t" + std::to_string(id));
          c["logprobs"] = {{"tokens", toks}, {"token_logprobs", lps}};
        }
      }
      if (want_ids) c["token_ids"] = ids;
      c["finish_reason"] = "length";
      out["choices"] = json::array({c});
      out["usage"] = {{"prompt_tokens", 10}, {"completion_tokens", n}, {"total_tokens", 10 + n}};
      if (o.mode == NoiseMode::CacheHit) out["usage"]["prompt_tokens_details"] = {{"cached_tokens", hit ? 8 : 0}};
      if (o.mode == NoiseMode::Dribble) {
        auto body = std::make_shared<std::string>(out.dump());
        res.set_chunked_content_provider("application/json", [this, body](size_t offset, httplib::DataSink& sink) {
          if (offset >= body->size() || stopping) {
            sink.done();
            return true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return sink.write(body->data() + offset, 1);
        });
        return;
      }
      res.set_content(out.dump(), "application/json");
      return;
    }
    int delay = o.token_delay_ms;
    const size_t per_event = static_cast<size_t>(std::max(1, o.tokens_per_event));
    res.set_chunked_content_provider("text/event-stream", [this, out, ids, chat, n, delay, per_event](size_t, httplib::DataSink& sink) {
      for (size_t k = 0; k < ids.size() && !stopping; k += per_event) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        json chunk = out;
        json c = {{"index", 0}, {"token_ids", json::array()}};
        std::string piece;
        for (size_t e = k; e < std::min(ids.size(), k + per_event); ++e) {
          c["token_ids"].push_back(ids[e]);
          piece += " t" + std::to_string(ids[e]);
        }
        if (chat) c["delta"] = {{"content", piece}};
        else c["text"] = piece;
        c["finish_reason"] = k + per_event >= ids.size() ? json("length") : json(nullptr);
        chunk["choices"] = json::array({c});
        std::string line = "data: " + chunk.dump() + "\n\n";
        if (!sink.write(line.data(), line.size())) return false;
      }
      json usage = out;
      usage["choices"] = json::array();
      usage["usage"] = {{"prompt_tokens", 10}, {"completion_tokens", n}, {"total_tokens", 10 + n}};
      std::string tail = "data: " + usage.dump() + "\n\ndata: [DONE]\n\n";
      sink.write(tail.data(), tail.size());
      sink.done();
      return true;
    });
  }

  void routes() {
    svr.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"object", "list"}, {"data", {{{"id", "noisy-model"}, {"object", "model"}, {"max_model_len", 4096}}}}}.dump(),
                      "application/json");
    });
    svr.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"version", o.version}}.dump(), "application/json");
    });
    auto reset = [this](const httplib::Request&, httplib::Response& res) {
      if (o.mode == NoiseMode::NoResetRoute) return error(res, 404, "no such route");
      resets->fetch_add(1);
      if (o.reset_status != 200) return error(res, o.reset_status, "the noisy test server's reset fails on purpose");
      if (!o.reset_noop) {
        std::lock_guard<std::mutex> lock(cache_mu);
        cache.clear();
      }
      res.set_content("{}", "application/json");
    };
    svr.Post("/reset_prefix_cache", reset);
    svr.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { generation(q, r, false); });
    svr.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { generation(q, r, true); });
  }
};

NoisyServer::NoisyServer(NoisyServerOptions o) : impl_(std::make_unique<Impl>(std::move(o))) {
  impl_->completions = &completions_;
  impl_->requests = &requests_;
  impl_->resets = &resets_;
  port_ = impl_->svr.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("noisy server: cannot bind 127.0.0.1");
  impl_->svr.raise_backlog(256);
  thread_ = std::thread([this] { impl_->svr.listen_after_bind(); });
  while (!impl_->svr.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void NoisyServer::stop() {
  if (!thread_.joinable()) return;
  impl_->stopping = true;
  impl_->svr.stop();
  thread_.join();
}

NoisyServer::~NoisyServer() { stop(); }

void NoisyServer::serve_forever(NoisyServerOptions o, int port_fd) {
  NoisyServer s(std::move(o));
  std::string line = std::to_string(s.port()) + "\n";
  if (::write(port_fd, line.data(), line.size()) < 0) _exit(3);
  ::close(port_fd);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace verbatim::test
