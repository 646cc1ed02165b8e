// `verbatim serve` as a process: startup lines, the periodic status line, SIGTERM (finish what
// runs, refuse new connections, exit 0), a client hanging up mid-stream (its request is aborted
// and its KV blocks freed), and 503 when the queue is full.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server_harness.h"
#include "support/client_process.h"

namespace verbatim::test {
namespace {

std::string model() { return fixture("qwen3-tiny-tied"); }

json long_stream(int max_tokens) {
  return {{"prompt", {1, 2, 3, 4, 5, 6, 7, 8}}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", true},
          {"ignore_eos", true}};
}

// Asks /health on one kept-alive connection every 100 ms until an answer is not 200 (or 60 s
// pass), so the connection never idles into the keep-alive timeout; returns everything read.
std::string poll_health_until_not_200(RawConnection& c) {
  const std::string health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::string got;
  for (int i = 1; i <= 600; ++i) {
    c.send_raw(health);
    got = c.read_until("HTTP/1.1 ", i, 10);
    const size_t last = got.rfind("HTTP/1.1 ");
    if (last == std::string::npos || got.compare(last, 12, "HTTP/1.1 200") != 0)
      return c.read_until("}}", 1, 5);  // the error body
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return got;
}

// A trigger file for VERBATIM_FAULT_AFTER_FORWARDS / VERBATIM_HANG_AFTER_FORWARDS=file:PATH: the
// fault comes at the first forward call after arm(), whatever the machine's speed (a sanitizer
// build runs these steps ~30x slower).
struct FaultTrigger {
  std::string path = temp_dir("fault-trigger") + "/armed";
  void arm() const { std::ofstream(path) << "now\n"; }
  // `verbatim serve ARGS` with `hook` (VERBATIM_FAULT_AFTER_FORWARDS or VERBATIM_HANG_AFTER_FORWARDS)
  // set to this trigger.
  std::unique_ptr<ServerProcess> serve(const char* hook, const std::vector<std::string>& args) const {
    setenv(hook, ("file:" + path).c_str(), 1);
    auto s = std::make_unique<ServerProcess>(args);
    unsetenv(hook);
    return s;
  }
};

// Once `running` requests run, /health says 200 on `kept`; then the fault is armed and /health is
// polled on `kept` until it is not 200: `got` is everything read.
void arm_while_running(ServerProcess& s, int running, const FaultTrigger& trigger, RawConnection& kept,
                       std::string& got) {
  ASSERT_TRUE(wait_for([&] { return metric(s.port(), "verbatim:num_requests_running") == running; }, 60)) << s.log();
  kept.send_raw("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_NE(kept.read_until("HTTP/1.1 200", 1, 30).find("HTTP/1.1 200"), std::string::npos) << "before the fault";
  trigger.arm();
  got = poll_health_until_not_200(kept);
}

// A 1,000-token stream; once it runs, SIGTERM; once that is logged, the fault is armed. `streamed`
// is the stream as it ended (the server is killed if a step fails, so the stream always returns).
void stream_sigterm_then_arm(ServerProcess& s, const FaultTrigger& trigger, SseResult& streamed) {
  const int port = s.port();
  std::thread a([&] { streamed = post_stream(port, "/v1/completions", long_stream(1000)); });
  const bool running = wait_for([&] { return metric(port, "verbatim:num_requests_running") == 1; }, 60);
  const bool signalled = running && kill(s.pid(), SIGTERM) == 0 &&
                         wait_for([&] { return s.log().find("received SIGTERM") != std::string::npos; }, 30);
  if (signalled) trigger.arm();
  else kill(s.pid(), SIGKILL);
  a.join();
  ASSERT_TRUE(running) << s.log();
  ASSERT_TRUE(signalled) << s.log();
}

// A connection whose request body never arrives in full: its HTTP worker waits for it (up to the
// 30 s read timeout), which holds a draining server's exit until the connection closes.
void hold_exit(RawConnection& c) {
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: 100\r\n\r\n{");
}

// A stream and a plain request of 1,000 tokens each, sent at once from two threads. join() waits
// at most 60 s for both answers, then kills the server (a broken fault path fails the test in a
// minute instead of holding it for the clients' 600 s read timeout); so does the destructor.
struct TwoLongRequests {
  SseResult streamed;
  HttpResult plain;
  std::atomic<int> answered{0};
  std::thread a, b;
  pid_t server;
  explicit TwoLongRequests(ServerProcess& s) : server(s.pid()) {
    const int port = s.port();
    a = std::thread([this, port] {
      streamed = post_stream(port, "/v1/completions", long_stream(1000));
      ++answered;
    });
    b = std::thread([this, port] {
      plain = post(port, "/v1/completions", {{"prompt", {9, 10, 11}}, {"max_tokens", 1000}, {"ignore_eos", true}});
      ++answered;
    });
  }
  ~TwoLongRequests() { join(0); }
  void join(double timeout_s = 60) {
    if (!wait_for([&] { return answered == 2; }, timeout_s)) kill(server, SIGKILL);
    if (a.joinable()) a.join();
    if (b.joinable()) b.join();
  }
};

TEST(ServerLifecycle, StartupLinesAndStatusLine) {
  ServerProcess s({model(), "--served-model-name", "fixture"});
  std::string log = s.log();
  for (const char* want : {"model fixture", "dtype bfloat16", "device cpu", "KV capacity", "fingerprint fp_",
                           "ready at http://127.0.0.1:"})
    EXPECT_NE(log.find(want), std::string::npos) << want << "\n" << log;
  EXPECT_EQ(log.find("warning: the KV cache holds"), std::string::npos) << "the default KV fits max_model_len\n" << log;
  auto r = post(s.port(), "/v1/completions", long_stream(300));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(wait_for([&] { return s.log().find("status: ") != std::string::npos; }, 5)) << s.log();
  // Every figure is the interval's, preemptions too (they were the running total), with the total beside.
  EXPECT_NE(s.log().find(" 0 preemptions (0 since start)"), std::string::npos) << s.log();
}

// The vLLM options its launch scripts carry and that have no work here are accepted, each said at
// startup; --disable-log-stats turns the status lines off (it wins over --status-interval).
TEST(ServerLifecycle, VllmScriptFlagsAreAcceptedAndSaid) {
  ServerProcess s({model(), "--disable-log-requests", "--disable-log-stats", "--enable-chunked-prefill",
                   "--no-enable-chunked-prefill", "--trust-remote-code"});
  auto r = post(s.port(), "/v1/completions", long_stream(300));
  ASSERT_EQ(r.status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a status line would be out by now
  const std::string log = s.log();
  for (const char* want : {"--disable-log-requests: no effect", "--disable-log-stats: no status lines",
                           "--enable-chunked-prefill: no effect", "--no-enable-chunked-prefill: no effect",
                           "--trust-remote-code: no effect"})
    EXPECT_NE(log.find(want), std::string::npos) << want << "\n" << log;
  EXPECT_EQ(log.find("status: "), std::string::npos) << log;  // StartupLinesAndStatusLine shows one without it
}

// A second server on a port one already listens on fails to start (exit 1, one line), instead of
// binding beside it through SO_REUSEPORT and taking half of its connections.
TEST(ServerLifecycle, APortInUseIsRefused) {
  ServerProcess first({model()});
  CommandResult second = run_verbatim({"serve", model(), "--host", "127.0.0.1", "--port", std::to_string(first.port())},
                                      60, temp_dir("port_in_use"));
  EXPECT_FALSE(second.timed_out) << "the second server started and served";
  EXPECT_EQ(second.code, 1) << second.err;
  EXPECT_NE(second.err.find("cannot listen on http://127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << second.err;
  EXPECT_EQ(first.health(), 200);
}

// MODEL_DIR and --model naming two folders: refused before anything loads (one would be unused);
// naming the same folder twice is fine.
TEST(ServerLifecycle, TwoModelFoldersAreRefused) {
  CommandResult r = run_verbatim({"serve", model(), "--model", fixture("qwen3-tiny-untied"), "--port", "0"}, 60,
                                 temp_dir("two_models"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("name two folders; give the model once"), std::string::npos) << r.err;
  ServerProcess same({model(), "--model", model()});
  EXPECT_EQ(same.health(), 200);
}

// The access log: a line per answered request once its last byte has gone, with the generation's
// id, tokens and finish, the client's X-Request-Id (also echoed on the answer) and a refusal's
// message; health checks and scrapes leave no line; --disable-access-log leaves none at all.
TEST(ServerLifecycle, AccessLogHasALinePerRequest) {
  ServerProcess s({model()});
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(120);
  const json body = {{"prompt", {1, 2, 3}}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}};
  auto r = c.Post("/v1/completions", {{"X-Request-Id", "eval-run-7/q12"}}, body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "eval-run-7/q12");
  const std::string id = json::parse(r->body)["id"];
  json streamed = body;
  streamed["stream"] = true;
  streamed["n"] = 2;
  ASSERT_EQ(post(s.port(), "/v1/completions", streamed).status, 200);
  EXPECT_EQ(post(s.port(), "/v1/completions", {{"prompt", "x"}, {"top_p", 7}}).status, 400);
  EXPECT_EQ(get(s.port(), "/health").status, 200);
  EXPECT_EQ(get(s.port(), "/metrics").status, 200);
  EXPECT_EQ(get(s.port(), "/version").status, 200);
  auto lines_with = [&](const std::string& what) {
    std::vector<std::string> out;
    std::istringstream in(s.log());
    for (std::string l; std::getline(in, l);)
      if (l.find(what) != std::string::npos) out.push_back(l);
    return out;
  };
  // A line is written after its answer's last byte, on that request's own HTTP thread: wait for
  // all of them, and find each by its content (the threads may write them in another order).
  ASSERT_TRUE(wait_for([&] { return lines_with("\"POST /v1/completions\"").size() == 3 &&
                                    !lines_with("\"GET /version\" 200").empty(); }, 10))
      << s.log();
  auto one = [&](const std::string& what) {
    auto l = lines_with(what);
    EXPECT_EQ(l.size(), 1u) << what << "\n" << s.log();
    return l.empty() ? std::string() : l[0];
  };
  const std::string plain = one(" " + id + " ");
  EXPECT_NE(plain.find("127.0.0.1:"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\"POST /v1/completions\" 200 "), std::string::npos) << plain;
  EXPECT_NE(plain.find(" ms " + id + " prompt 3 completion 4 finish length x-request-id eval-run-7/q12"), std::string::npos)
      << plain;
  one(" stream prompt 3 completion 8 finish length");
  const std::string refused = one("\"POST /v1/completions\" 400 ");
  EXPECT_NE(refused.find("error \"'top_p' must be in (0, 1]"), std::string::npos) << refused;
  // Two requests on one kept-alive connection (one HTTP thread): each gets its own line, the second
  // none of the first's state; a client that hangs up mid-stream is logged "client gone".
  c.set_keep_alive(true);
  for (const char* rid : {"keep-1", "keep-2"})
    ASSERT_EQ(c.Post("/v1/completions", {{"X-Request-Id", rid}}, body.dump(), "application/json")->status, 200);
  ASSERT_EQ(c.Get("/version")->status, 200);
  {
    RawConnection gone(s.port());
    gone.send_post("/v1/completions", long_stream(3000).dump());
    gone.read_until("data: ", 2);
  }  // closed mid-stream
  ASSERT_TRUE(wait_for([&] { return lines_with("x-request-id keep-").size() == 2 && !lines_with(" client gone").empty() &&
                                    lines_with("\"GET /version\" 200").size() == 2; }, 20))
      << s.log();
  for (const char* rid : {"keep-1", "keep-2"})
    EXPECT_NE(one(std::string("x-request-id ") + rid).find(" prompt 3 completion 4 finish length"), std::string::npos) << rid;
  for (const std::string& v : lines_with("\"GET /version\" 200"))
    EXPECT_EQ(v.find(" cmpl-"), std::string::npos) << "no generation's note on a later request: " << v;
  EXPECT_NE(one(" client gone").find(" stream prompt 8 completion "), std::string::npos);
  EXPECT_NE(one(" client gone").find(" finish abort client gone"), std::string::npos);
  // (A 503 from /health while the model loads is logged: the harness may have polled one.)
  EXPECT_TRUE(lines_with("\"GET /health\" 200").empty()) << "probes are not logged\n" << s.log();
  EXPECT_TRUE(lines_with("\"GET /metrics\" 200").empty()) << s.log();

  ServerProcess quiet({model(), "--disable-access-log"});
  EXPECT_EQ(post(quiet.port(), "/v1/completions", body).status, 200);
  EXPECT_EQ(get(quiet.port(), "/version").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(quiet.log().find("\"POST /v1/completions\""), std::string::npos) << quiet.log();
  EXPECT_EQ(quiet.log().find("\"GET /version\""), std::string::npos) << quiet.log();
}

// A non-streamed client that hangs up while its request waits for a seat: the request leaves the
// queue, is counted as an abort, and its 499 access line says "client gone" with no error message
// (nothing was refused) and no 499 among /metrics' error answers; its prompt, never run, is not
// among the prompt tokens processed.
TEST(ServerLifecycle, QueuedClientGoneIsDroppedAndLoggedWithoutAnError) {
  ServerProcess s({model(), "--max-num-seqs", "1"});
  RawConnection running(s.port());
  running.send_post("/v1/completions", long_stream(3000).dump());
  running.read_until("data: ", 2);
  {
    RawConnection gone(s.port());
    json queued = {{"prompt", {9, 9, 9, 9, 9}}, {"max_tokens", 4}, {"temperature", 0}};
    gone.send_post("/v1/completions", queued.dump(), "X-Request-Id: queued-gone\r\n");
    ASSERT_TRUE(wait_for([&] { return metric(s.port(), "verbatim:num_requests_waiting") == 1; }, 10)) << s.log();
  }  // hung up while waiting
  ASSERT_TRUE(wait_for([&] { return s.log().find("x-request-id queued-gone") != std::string::npos; }, 10)) << s.log();
  // The abort reaches the engine thread at its next step, which may come after the access line.
  EXPECT_TRUE(wait_for([&] { return metric(s.port(), "verbatim:num_requests_waiting") == 0; }, 10));
  EXPECT_EQ(metric(s.port(), "verbatim:request_success_total", "abort"), 1);
  EXPECT_EQ(metric(s.port(), "verbatim:prompt_tokens_total"), 8) << "only the running request's prompt ran";
  EXPECT_EQ(metric(s.port(), "verbatim:http_errors_total", "status=\"499\""), -1) << get(s.port(), "/metrics").body;
  std::string line;
  std::istringstream in(s.log());
  for (std::string l; std::getline(in, l);)
    if (l.find("x-request-id queued-gone") != std::string::npos) line = l;
  EXPECT_NE(line.find("\"POST /v1/completions\" 499 "), std::string::npos) << line;
  EXPECT_NE(line.find(" prompt 5 completion 0 finish abort client gone x-request-id queued-gone"), std::string::npos)
      << line;
  EXPECT_EQ(line.find(" error "), std::string::npos) << line;
}

// A KV cache smaller than one max_model_len request is said at startup, with what to change; such a
// request then gets the 400 the warning promised.
TEST(ServerLifecycle, KvCacheSmallerThanMaxModelLenIsWarnedAtStartup) {
  ServerProcess s({model(), "--num-kv-blocks", "4", "--block-size", "16"});
  const std::string log = s.log();
  EXPECT_NE(log.find("warning: the KV cache holds 64 tokens, fewer than max_model_len 4096 needs: a request "
                     "(prompt + max_tokens) over 65 tokens gets a 400"),
            std::string::npos)
      << log;
  auto fits = post(s.port(), "/v1/completions", {{"prompt", {1, 2, 3, 4}}, {"max_tokens", 61}, {"temperature", 0}});
  EXPECT_EQ(fits.status, 200) << fits.j.dump();
  auto over = post(s.port(), "/v1/completions", {{"prompt", {1, 2, 3, 4}}, {"max_tokens", 62}, {"temperature", 0}});
  EXPECT_EQ(over.status, 400) << over.j.dump();
  // A request whose second prompt does not fit is refused whole: its first prompt never runs and
  // no counter but the HTTP errors moves (it was run in part and counted as an abort).
  const double prompt_before = metric(s.port(), "verbatim:prompt_tokens_total");
  const double gen_before = metric(s.port(), "verbatim:generation_tokens_total");
  const double abort_before = metric(s.port(), "verbatim:request_success_total", "abort");
  std::vector<int> too_long(70, 5);
  auto mixed = post(s.port(), "/v1/completions",
                    {{"prompt", {std::vector<int>{1, 2, 3, 4}, too_long}}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(mixed.status, 400) << mixed.j.dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // an engine step, were anything queued
  EXPECT_EQ(metric(s.port(), "verbatim:prompt_tokens_total"), prompt_before);
  EXPECT_EQ(metric(s.port(), "verbatim:generation_tokens_total"), gen_before);
  EXPECT_EQ(metric(s.port(), "verbatim:request_success_total", "abort"), abort_before);
}

// The port is bound before the model loads: /health (and every model route) says 503 until ready.
// The text model's 11 MB tokenizer.json alone takes far longer to load than this poll's interval.
TEST(ServerLifecycle, HealthIs503WhileLoading) {
  ServerProcess s({text_model_dir()}, /*wait_ready=*/false);
  auto first = get(s.port(), "/health");
  auto models = get(s.port(), "/v1/models");
  EXPECT_EQ(first.status, 503) << s.log();
  EXPECT_EQ(first.j["error"]["code"], 503);
  EXPECT_EQ(models.status, 503);
  EXPECT_TRUE(wait_for([&] { return s.health() == 200; }, 120)) << s.log();
  EXPECT_EQ(get(s.port(), "/v1/models").status, 200);
}

// SIGTERM while the model loads (nothing can be in flight) stops the process at once, exit 0: it
// used to wait for the whole load (minutes on a real checkpoint, a second signal unread), print
// "ready" and only then stop. The text model's tokenizer takes far longer to load than the
// signal takes to arrive once the port is bound.
TEST(ServerLifecycle, SigtermWhileLoadingExitsAtOnce) {
  ServerProcess s({text_model_dir()}, /*wait_ready=*/false);
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(60), 0) << s.log();
  EXPECT_NE(s.log().find("received SIGTERM while the model was loading: exiting"), std::string::npos) << s.log();
  EXPECT_EQ(s.log().find("ready at"), std::string::npos) << s.log();
}

TEST(ServerLifecycle, SigtermFinishesInFlightStreamsThenExitsZero) {
  ServerProcess s({model()});
  int port = s.port();
  const int n = 1500;
  SseResult streamed;
  std::thread client([&] { streamed = post_stream(port, "/v1/completions", long_stream(n)); });
  ASSERT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 1; }, 30));
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  ASSERT_TRUE(wait_for([&] { return s.log().find("received SIGTERM") != std::string::npos; }, 10));
  EXPECT_EQ(get(port, "/health").status, 0) << "no new connections once SIGTERM arrived";
  client.join();
  EXPECT_TRUE(streamed.done) << "the in-flight stream must finish";
  size_t tokens = 0;
  for (auto& e : streamed.events) tokens += e["choices"][0].value("token_ids", json::array()).size();
  int chunks_with_finish = 0;
  for (auto& e : streamed.events) chunks_with_finish += !e["choices"][0]["finish_reason"].is_null();
  EXPECT_EQ(chunks_with_finish, 1);
  EXPECT_EQ(streamed.events.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.wait_exit(60), 0) << s.log();
  EXPECT_NE(s.log().find("stopped cleanly"), std::string::npos);
}

// After SIGTERM a connection kept alive gets 503 with Connection: close for its next request (it
// no longer keeps the server up), and a second signal exits at once, cutting the stream off.
TEST(ServerLifecycle, KeepAliveAfterSigtermIs503AndASecondSignalExitsAtOnce) {
  ServerProcess s({text_model_dir()});  // the real vocabulary: ~8 ms a token here, so the stream lasts
  int port = s.port();
  httplib::Client ka("127.0.0.1", port);
  ka.set_keep_alive(true);
  ka.set_read_timeout(30);
  json small = {{"prompt", {1, 2}}, {"max_tokens", 2}};
  auto first = ka.Post("/v1/completions", small.dump(), "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  SseResult streamed;
  std::thread client([&] { streamed = post_stream(port, "/v1/completions", long_stream(4000)); });
  ASSERT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 1; }, 30));
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  ASSERT_TRUE(wait_for([&] { return s.log().find("received SIGTERM") != std::string::npos; }, 10));
  auto again = ka.Post("/v1/completions", small.dump(), "application/json");
  ASSERT_TRUE(again) << "the kept-alive connection must still be answered";
  EXPECT_EQ(again->status, 503);
  EXPECT_EQ(again->get_header_value("Connection"), "close");
  EXPECT_TRUE(s.running()) << "the long stream is still in flight";
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  EXPECT_EQ(s.wait_exit(10), 1) << s.log();
  EXPECT_NE(s.log().find("second signal"), std::string::npos) << s.log();
  client.join();
  EXPECT_FALSE(streamed.done) << "the stream was cut off";
}

// The 503 after SIGTERM says Connection: close, and the connection is closed too: httplib 0.11 read
// only the request's Connection header, so a client polling /health on a kept-alive connection
// (a load balancer) got 503 after 503 and kept an idle server from exiting for as long as it polled.
TEST(ServerLifecycle, KeepAliveAfterSigtermIsClosedAndTheServerExits) {
  ServerProcess s({model()});
  RawConnection c(s.port());
  const std::string health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  c.send_raw(health);
  ASSERT_NE(c.read_until("HTTP/1.1 200", 1, 30).find("HTTP/1.1 200"), std::string::npos);
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  ASSERT_TRUE(wait_for([&] { return s.log().find("received SIGTERM") != std::string::npos; }, 10));
  c.send_raw(health);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = c.read_until("never sent", 1, 4);  // returns at end of file, else after 4 s
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find("shutting down"), std::string::npos) << "the whole body arrives: " << got;
  EXPECT_LT(waited, 2.0) << "the server must close the connection after its 503, not wait for the client";
  EXPECT_EQ(s.wait_exit(10), 0) << s.log();  // the client has not hung up: the server did
}

// A device fault (injected: the backend's forward calls fail from the first after the test arms it) ends the
// engine. Both requests it held fail: the stream with an error event (and the access line names
// it), the plain request with a 500 naming the fault. /health says 503 with the reason (a client
// kept alive asks it after the fault), and the process exits 1 so a supervisor restarts it, as
// vLLM's does. Before, /health stayed 200 and every later request failed, one by one. The
// test arms the fault once both requests run.
TEST(ServerLifecycle, ADeviceFaultMakesHealth503AndTheServerExitOne) {
  const FaultTrigger trigger;
  const auto server = trigger.serve("VERBATIM_FAULT_AFTER_FORWARDS", {text_model_dir()});
  ServerProcess& s = *server;
  RawConnection holder(s.port());
  hold_exit(holder);
  TwoLongRequests both(s);
  RawConnection kept(s.port());
  std::string got;
  ASSERT_NO_FATAL_FAILURE(arm_while_running(s, 2, trigger, kept, got));
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("the engine failed: injected device fault"), std::string::npos) << got;
  both.join();
  const SseResult& streamed = both.streamed;
  const HttpResult& plain = both.plain;

  EXPECT_EQ(plain.status, 500) << plain.body;
  EXPECT_NE(plain.body.find("the engine failed this request: injected device fault"), std::string::npos) << plain.body;
  EXPECT_EQ(streamed.status, 200);
  EXPECT_TRUE(streamed.done);
  ASSERT_FALSE(streamed.events.empty());
  const json& last = streamed.events.back();
  ASSERT_TRUE(last.contains("error")) << last.dump();
  EXPECT_NE(last["error"]["message"].get<std::string>().find("injected device fault"), std::string::npos);
  EXPECT_GT(streamed.events.size(), 2u) << "tokens streamed before the fault";

  // A supervisor's SIGTERM now (it saw the 503) is the operator's first signal: noted, not taken
  // for a second one that cuts answers off (the held connection keeps the server draining).
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  EXPECT_TRUE(wait_for([&] { return s.log().find("already exiting") != std::string::npos; }, 10)) << s.log();
  EXPECT_TRUE(s.running()) << s.log();
  holder.close();
  EXPECT_EQ(s.wait_exit(30), 1) << s.log();
  const std::string log = s.log();
  EXPECT_NE(log.find("received SIGTERM: already exiting after the engine failed"), std::string::npos) << log;
  EXPECT_NE(log.find("error: the engine failed: injected device fault"), std::string::npos) << log;
  EXPECT_NE(log.find("exited after the engine failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("received a second signal"), std::string::npos) << log;
  EXPECT_NE(log.find("stream prompt 8 completion"), std::string::npos) << log;
  EXPECT_NE(log.find("finish abort error \"the engine failed this request: injected device fault"), std::string::npos)
      << "the stream's access line names its error event\n" << log;
}

// SIGTERM first, then a fault while draining: the answers still go out (the engine's wake-up is
// not taken for an operator's second signal), the failure is logged, and the exit status is 1.
TEST(ServerLifecycle, AFaultWhileDrainingIsLoggedAndExitsOne) {
  const FaultTrigger trigger;
  const auto server = trigger.serve("VERBATIM_FAULT_AFTER_FORWARDS", {text_model_dir()});
  ServerProcess& s = *server;
  SseResult streamed;
  ASSERT_NO_FATAL_FAILURE(stream_sigterm_then_arm(s, trigger, streamed));
  EXPECT_TRUE(streamed.done) << "the stream's end must still be sent";
  ASSERT_FALSE(streamed.events.empty());
  EXPECT_TRUE(streamed.events.back().contains("error")) << streamed.events.back().dump();
  EXPECT_EQ(s.wait_exit(30), 1) << s.log();
  const std::string log = s.log();
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("error: the engine failed: injected device fault"), std::string::npos) << log;
  EXPECT_EQ(log.find("received a second signal"), std::string::npos) << log;
}

// A step that never returns (injected: a forward call after the test arms it sleeps for ever, as a hung
// kernel would) trips --engine-step-timeout: both requests waiting on it end with an error naming
// the hang (the stream with an error event), /health says 503, and the process exits 1 without
// joining the hung engine. Before there was no watchdog: the requests and /health's 200 went on
// for ever.
TEST(ServerLifecycle, AHungStepTripsTheWatchdogAndTheServerExitsOne) {
  const FaultTrigger trigger;
  const auto server = trigger.serve("VERBATIM_HANG_AFTER_FORWARDS", {text_model_dir(), "--engine-step-timeout", "1"});
  ServerProcess& s = *server;
  TwoLongRequests both(s);
  RawConnection kept(s.port());
  std::string got;
  ASSERT_NO_FATAL_FAILURE(arm_while_running(s, 2, trigger, kept, got));
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("the engine stopped responding"), std::string::npos) << got;
  both.join();
  const SseResult& streamed = both.streamed;
  const HttpResult& plain = both.plain;

  EXPECT_EQ(plain.status, 500) << plain.body;
  EXPECT_NE(plain.body.find("the engine stopped responding: a step has run"), std::string::npos) << plain.body;
  EXPECT_EQ(streamed.status, 200);
  EXPECT_TRUE(streamed.done);
  EXPECT_GT(streamed.events.size(), 2u) << "tokens streamed before the hang";
  ASSERT_FALSE(streamed.events.empty());
  ASSERT_TRUE(streamed.events.back().contains("error")) << streamed.events.back().dump();
  EXPECT_NE(streamed.events.back()["error"]["message"].get<std::string>().find("past --engine-step-timeout 1 s"),
            std::string::npos);

  EXPECT_EQ(s.wait_exit(30), 1) << s.log();
  const std::string log = s.log();
  EXPECT_NE(log.find("error: the engine stopped responding: a step has run"), std::string::npos) << log;
  EXPECT_NE(log.find("exited: the engine was hung"), std::string::npos) << log;
}

// SIGTERM first, then the step hangs while the stream drains: the stream ends with an error
// event, and the process exits 1 without joining the hung engine (main was past its signal wait).
TEST(ServerLifecycle, AHangWhileDrainingExitsOne) {
  const FaultTrigger trigger;
  const auto server = trigger.serve("VERBATIM_HANG_AFTER_FORWARDS", {text_model_dir(), "--engine-step-timeout", "1"});
  ServerProcess& s = *server;
  SseResult streamed;
  ASSERT_NO_FATAL_FAILURE(stream_sigterm_then_arm(s, trigger, streamed));
  EXPECT_EQ(s.wait_exit(60), 1) << s.log();
  EXPECT_TRUE(streamed.done) << s.log();
  ASSERT_FALSE(streamed.events.empty());
  EXPECT_TRUE(streamed.events.back().contains("error")) << streamed.events.back().dump();
  const std::string log = s.log();
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("error: the engine stopped responding: a step has run"), std::string::npos) << log;
  EXPECT_NE(log.find("exited: the engine was hung"), std::string::npos) << log;
}

// The fault hook refuses what is not a count, before anything loads.
TEST(ServerLifecycle, AFaultHookThatIsNotACountIsRefused) {
  setenv("VERBATIM_FAULT_AFTER_FORWARDS", "soon", 1);
  try {
    ServerProcess s({model()});
    ADD_FAILURE() << "the server started with VERBATIM_FAULT_AFTER_FORWARDS=soon";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("VERBATIM_FAULT_AFTER_FORWARDS=soon: expected a count"), std::string::npos)
        << e.what();
  }
  unsetenv("VERBATIM_FAULT_AFTER_FORWARDS");
}

// The real-device fault hook needs a GPU backend: on the CPU it is refused before anything loads,
// never silently ignored (a GPU test that set it would otherwise pass without a fault).
TEST(ServerLifecycle, TheDeviceFaultHookIsRefusedOnTheCpu) {
  for (const char* hook : {"VERBATIM_DEVICE_FAULT_AFTER_FORWARDS", "VERBATIM_DEVICE_HANG_AFTER_FORWARDS"}) {
    setenv(hook, "3", 1);
    try {
      ServerProcess s({model()});
      ADD_FAILURE() << "the server started on the CPU with " << hook;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(hook) + ": needs --device cuda"), std::string::npos)
          << e.what();
    }
    unsetenv(hook);
  }
}

TEST(ServerLifecycle, DisconnectMidStreamAbortsAndFreesBlocks) {
  ServerProcess s({model(), "--no-enable-prefix-caching"});
  int port = s.port();
  {
    RawConnection c(port);
    c.send_post("/v1/completions", long_stream(3000).dump());
    std::string got = c.read_until("data: ", 3);
    ASSERT_NE(got.find("data: "), std::string::npos) << got;
    ASSERT_EQ(metric(port, "verbatim:num_requests_running"), 1);
    EXPECT_GT(metric(port, "verbatim:kv_cache_usage_perc"), 0);
  }  // hang up
  EXPECT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 0; }, 10));
  EXPECT_EQ(metric(port, "verbatim:kv_cache_usage_perc"), 0) << "the aborted request's blocks are free";
  EXPECT_EQ(metric(port, "verbatim:request_success_total", "finished_reason=\"abort\""), 1);
  EXPECT_LT(metric(port, "verbatim:generation_tokens_total"), 2900) << "generation stopped early";
  // The same for a non-streaming request whose client gives up.
  {
    RawConnection c(port);
    json b = long_stream(3000);
    b["stream"] = false;
    c.send_post("/v1/completions", b.dump());
    ASSERT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 1; }, 10));
  }
  EXPECT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 0; }, 10));
  EXPECT_EQ(metric(port, "verbatim:request_success_total", "finished_reason=\"abort\""), 2);
  EXPECT_EQ(post(port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 2}}).status, 200);
}

TEST(ServerLifecycle, FullQueueIs503) {
  ServerProcess s({model(), "--max-num-seqs", "1", "--max-queue-len", "1"});
  int port = s.port();
  RawConnection running(port);
  running.send_post("/v1/completions", long_stream(3000).dump());
  ASSERT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_running") == 1; }, 10));
  HttpResult queued;
  std::thread waiter([&] { queued = post(port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 2}}); });
  ASSERT_TRUE(wait_for([&] { return metric(port, "verbatim:num_requests_waiting") == 1; }, 10));
  auto refused = post(port, "/v1/completions", {{"prompt", {3, 4}}, {"max_tokens", 2}});
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.j["error"]["code"], 503);
  auto retry = refused.headers.find("Retry-After");  // clients (and proxies) know when to come back
  ASSERT_NE(retry, refused.headers.end());
  EXPECT_EQ(retry->second, "1");
  running.close();  // the long request is aborted; the queued one runs
  waiter.join();
  EXPECT_EQ(queued.status, 200) << queued.body;
}

}  // namespace
}  // namespace verbatim::test
