// `verbatim bench` end to end: the timing rules against a scripted stream, complete JSON with plausible figures and a well-formed SVG against
// our own server and the noisy test server; --vs runs A, B, A and prints ratios that match the
// servers' known speeds; failing, unreachable, hanging and killed servers exit 2 without hanging.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "client/bench.h"
#include "client/generation.h"
#include "client/http_client.h"
#include "client/progress.h"
#include "client/url.h"
#include "support/client_noisy_server.h"
#include "support/client_process.h"
#include "support/client_xml.h"
#include "support/paths.h"

namespace verbatim::test {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every figure a run reports is there, finite and in a plausible order.
void expect_plausible(const json& f, int requests, int64_t output_tokens, const std::string& what) {
  SCOPED_TRACE(what + ": " + f.dump());
  for (const char* k : {"median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms", "median_ttft_ms", "p99_ttft_ms",
                        "output_tok_s", "req_s", "duration_s"}) {
    ASSERT_TRUE(f.contains(k) && f[k].is_number()) << k;
    EXPECT_GE(f[k].get<double>(), 0.0) << k;
  }
  EXPECT_EQ(f["requests"], requests);
  EXPECT_EQ(f["output_tokens"], output_tokens);
  EXPECT_GE(f["p99_tpot_ms"].get<double>(), f["median_tpot_ms"].get<double>());
  EXPECT_GE(f["p99_ttft_ms"].get<double>(), f["median_ttft_ms"].get<double>());
  EXPECT_GT(f["median_ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(f["output_tok_s"].get<double>(), 0.0);
  EXPECT_GT(f["req_s"].get<double>(), 0.0);
  // Throughput and time agree: tokens per second times seconds gives the tokens back.
  double implied = f["output_tok_s"].get<double>() * f["duration_s"].get<double>() / f["runs"].get<double>();
  EXPECT_NEAR(implied, double(output_tokens) / f["runs"].get<double>(), 0.35 * double(output_tokens));
}

// A parsed SVG whose polylines are one per (panel, server), each with a point per users value.
void expect_svg(const std::string& path, size_t servers, size_t users) {
  std::string doc = read_file(path);
  std::unique_ptr<XmlElement> root;
  ASSERT_NO_THROW(root = parse_xml(doc)) << doc.substr(0, 300);
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->attrs["xmlns"], "http://www.w3.org/2000/svg");
  ASSERT_TRUE(root->attrs.count("viewBox"));
  double w = 0, h = 0;
  ASSERT_EQ(std::sscanf(root->attrs["viewBox"].c_str(), "0 0 %lf %lf", &w, &h), 2);
  auto lines = root->find_all("polyline");
  ASSERT_EQ(lines.size(), 2 * servers);
  for (const XmlElement* l : lines) {
    std::istringstream pts(l->attrs.at("points"));
    size_t n = 0;
    for (std::string p; pts >> p; ++n) {
      double x = -1, y = -1;
      ASSERT_EQ(std::sscanf(p.c_str(), "%lf,%lf", &x, &y), 2) << p;
      EXPECT_TRUE(x >= 0 && x <= w && y >= 0 && y <= h) << p;
    }
    EXPECT_EQ(n, users);
  }
  std::string all_text;
  for (const XmlElement* t : root->find_all("text")) all_text += t->text + "|";
  EXPECT_NE(all_text.find("median time per output token"), std::string::npos);
  EXPECT_NE(all_text.find("output throughput"), std::string::npos);
}

// A server that streams one scripted answer: each event after its delay. For the timing rules.
class ScriptedSse {
 public:
  struct Event {
    int delay_ms;
    json data;
    std::string raw = {};  // written as is instead of "data: <data>" (an SSE comment, say)
  };
  explicit ScriptedSse(std::vector<Event> events) : events_(std::move(events)) {
    auto handler = [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
        for (const Event& e : events_) {
          std::this_thread::sleep_for(std::chrono::milliseconds(e.delay_ms));
          const std::string line = e.raw.empty() ? "data: " + e.data.dump() + "\n\n" : e.raw;
          sink.write(line.data(), line.size());
        }
        sink.write("data: [DONE]\n\n", 14);
        sink.done();
        return true;
      });
    };
    svr_.Post("/v1/completions", handler);
    svr_.Post("/v1/chat/completions", handler);
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  ~ScriptedSse() {
    svr_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::vector<Event> events_;
  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
};

json text_chunk(const std::string& text, const char* finish = nullptr) {
  json c = {{"index", 0}, {"text", text}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
  return {{"choices", {c}}};
}

// Every event with a choice is timed, empty ones too, as vLLM's benchmark times them: TPOT spans
// to the finishing event; without usage or token ids the tokens are the non-empty chunks, said so.
TEST(BenchTiming, EveryChoiceEventIsTimedAndChunkCountsAreFlagged) {
  const json usage = {{"choices", json::array()}, {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 5}}}};
  const std::vector<ScriptedSse::Event> events = {
      {30, text_chunk("The")}, {30, text_chunk("")}, {30, text_chunk(" cat")}, {30, text_chunk(" sat")},
      {30, text_chunk("", "stop")}};
  std::vector<ScriptedSse::Event> with_usage = events;
  with_usage.push_back({0, usage});
  ScriptedSse a(with_usage), b(events);
  client::Prompt p;
  p.text = "hi";
  client::SamplingOptions s;
  client::ServerFeatures f;
  f.token_ids = false;
  client::HttpClient ca(client::parse_url(a.url()), {}), cb(client::parse_url(b.url()), {});
  client::StreamTiming t = client::generate_streaming(ca, p, s, f);
  EXPECT_EQ(t.chunk_s.size(), 5u) << "the empty chunks and the finish are events too";
  EXPECT_EQ(t.completion_tokens, 5);
  EXPECT_FALSE(t.tokens_from_chunks);
  EXPECT_GT(t.last_token_s - t.first_token_s, 0.10) << "the last event is the finish, ~120 ms after the first";
  client::StreamTiming u = client::generate_streaming(cb, p, s, f);
  EXPECT_EQ(u.completion_tokens, 3) << "no usage: the non-empty chunks";
  EXPECT_TRUE(u.tokens_from_chunks);

  // Chat: the opening role-only delta is not output; "reasoning" (vLLM's name now) is.
  auto delta = [](json d, const char* finish = nullptr) {
    return json{{"choices", {{{"index", 0}, {"delta", d}, {"finish_reason", finish ? json(finish) : json(nullptr)}}}}};
  };
  ScriptedSse c({{0, delta({{"role", "assistant"}, {"content", ""}})},
                 {60, delta({{"reasoning", "thinking"}})},
                 {30, delta({{"content", "Hi"}})},
                 {30, delta(json::object(), "stop")}});
  client::HttpClient cc(client::parse_url(c.url()), {});
  s.chat = true;
  client::StreamTiming v = client::generate_streaming(cc, p, s, f);
  EXPECT_EQ(v.chunk_s.size(), 3u);
  EXPECT_GT(v.first_token_s, 0.05) << "TTFT is the reasoning event, not the role chunk";
  EXPECT_EQ(v.completion_tokens, 2);
}

// What a stream says is held to what it shows: an aborted request is a failed request, not an answer;
// token ids streamed outrank a usage that disagrees; keep-alive comments are not events, so they
// do not hold off --timeout; vLLM's older error event is a failure with its message.
TEST(BenchTiming, AbortsLyingUsageKeepAlivesAndOldErrorEvents) {
  client::Prompt p;
  p.text = "hi";
  client::SamplingOptions s;
  client::ServerFeatures f;
  auto ids_chunk = [](int id, const char* finish = nullptr) {
    return json{{"choices", {{{"index", 0}, {"text", " t"}, {"token_ids", {id}}, {"finish_reason", finish ? json(finish) : json(nullptr)}}}}};
  };
  auto run = [&](const std::vector<ScriptedSse::Event>& events, double timeout_s) {
    ScriptedSse srv(events);
    client::ClientOptions co;
    co.timeout_s = timeout_s;
    client::HttpClient c(client::parse_url(srv.url()), co);
    return client::generate_streaming(c, p, s, f);
  };
  const json usage30 = {{"choices", json::array()}, {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 30}}}};
  // Aborted after 2 tokens (vLLM's `abort`, and its `error`): a failed request, named.
  for (const char* why : {"abort", "error"}) {
    try {
      run({{10, ids_chunk(1)}, {10, ids_chunk(2)}, {10, ids_chunk(3, why)}}, 10);
      ADD_FAILURE() << "an aborted stream was taken as an answer";
    } catch (const client::ClientError& e) {
      EXPECT_NE(std::string(e.what()).find("finish_reason '" + std::string(why) + "'"), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), client::FailureKind::ErrorEvent) << "bench counts these as failed requests";
    }
  }
  // Usage says 30, the stream carried 3 token ids: 3 are counted, and the disagreement flagged.
  client::StreamTiming t = run({{10, ids_chunk(1)}, {10, ids_chunk(2)}, {10, ids_chunk(3, "length")}, {0, usage30}}, 10);
  EXPECT_EQ(t.completion_tokens, 3);
  EXPECT_TRUE(t.usage_disagrees);
  // Keep-alive comments every 200 ms for 3 s, no event: a 1 s --timeout ends it.
  std::vector<ScriptedSse::Event> pings;
  for (int i = 0; i < 15; ++i) pings.push_back({200, json(), ": ping\n\n"});
  pings.push_back({0, ids_chunk(1, "stop")});
  {
    ScriptedSse srv(pings);  // outlives the timing: its teardown waits for the scripted pings
    client::ClientOptions co;
    co.timeout_s = 1;
    client::HttpClient c(client::parse_url(srv.url()), co);
    auto t0 = std::chrono::steady_clock::now();
    try {
      client::generate_streaming(c, p, s, f);
      ADD_FAILURE() << "keep-alive comments held off the timeout";
    } catch (const client::ClientError& e) {
      EXPECT_NE(std::string(e.what()).find("no stream event"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  }
  // vLLM's older mid-stream error shape.
  try {
    run({{10, ids_chunk(1)}, {10, json{{"object", "error"}, {"message", "CUDA out of memory"}}}}, 10);
    ADD_FAILURE() << "an error event was ignored";
  } catch (const client::ClientError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA out of memory"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), client::FailureKind::ErrorEvent) << "bench counts these as failed requests";
  }
}

// Runs that did less work than the header says, or whose figures cover fewer requests, are named.
TEST(Bench, ShortAnswersOneEventStreamsAndTooFewPromptsAreNamed) {
  std::string dir = temp_dir("bench-warnings");
  {  // answers capped at 3 tokens though --ignore-eos asks for exactly 8
    NoisyServer srv({.token_delay_ms = 1, .token_cap = 3});
    auto r = run_verbatim({"bench", "--url", srv.url(), "--users", "1", "--num-prompts", "4", "--max-tokens", "8",
                           "--ignore-eos", "--seeds", "1"},
                          60, dir);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("fewer than 8 tokens in 4 requests though --ignore-eos"), std::string::npos) << r.out;
  }
  {  // every answer in one event; 4 users but 2 requests a run
    NoisyServer srv({.token_delay_ms = 1, .tokens_per_event = 64});
    auto r = run_verbatim({"bench", "--url", srv.url(), "--users", "4", "--num-prompts", "2", "--max-tokens", "8",
                           "--seeds", "1", "--json", dir + "/b.json"},
                          60, dir);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("sent all the tokens of 2 requests in one event"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("no request produced two or more tokens"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("at most 2 requests were in flight"), std::string::npos) << r.out;
    json j = json::parse(read_file(dir + "/b.json"));
    ASSERT_EQ(j["runs"][0]["tpot_ms"].size(), 2u) << "one entry per request, aligned with output_tokens";
    EXPECT_TRUE(j["runs"][0]["tpot_ms"][0].is_null());
  }
}

// A prompt repeated within a run is made distinct at its end; the first copy is unchanged.
TEST(BenchTiming, RepeatsWithinARunAreDistinct) {
  client::BenchOptions o;
  for (const char* t : {"alpha", "beta"}) {
    client::Prompt p;
    p.text = t;
    o.prompts.push_back(p);
  }
  const std::vector<client::Prompt> run = client::prompts_for_run(o, 5, 1);
  std::set<std::string> texts;
  for (const auto& p : run) texts.insert(p.text);
  EXPECT_EQ(texts.size(), 5u);
  for (const char* want : {"alpha", "beta", "alpha (2)", "beta (2)"}) EXPECT_EQ(texts.count(want), 1u) << want;
}

TEST(Bench, JsonAndSvgAgainstTheNoisyServer) {
  NoisyServer srv({.token_delay_ms = 2});
  std::string dir = temp_dir("bench-noisy");
  auto r = run_verbatim({"bench", "--url", srv.url(), "--users", "1,4", "--num-prompts", "4", "--max-tokens", "8",
                         "--json", dir + "/b.json", "--plot", dir + "/b.svg"},
                        120, dir);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(read_file(dir + "/b.json"));
  EXPECT_EQ(j["config"]["users"], json::array({1, 4}));
  EXPECT_EQ(j["config"]["seeds"], 2);
  ASSERT_EQ(j["runs"].size(), 4u);  // 2 numbers of users x 2 seeds
  for (const auto& run : j["runs"]) {
    expect_plausible(run["figures"], 4, 32, "run");
    EXPECT_EQ(run["cache_reset"], true);
    EXPECT_EQ(run["tpot_ms"].size(), 4u);
    // The server waits 2 ms before each token: TPOT cannot be less, nor wildly more on loopback.
    EXPECT_GE(run["figures"]["median_tpot_ms"].get<double>(), 1.9);
    EXPECT_LT(run["figures"]["median_tpot_ms"].get<double>(), 50.0);
  }
  ASSERT_EQ(j["summary"].size(), 2u);
  expect_plausible(j["summary"][0]["A"], 8, 64, "summary");
  EXPECT_GE(srv.resets(), 4);  // a cache reset before every run
  expect_svg(dir + "/b.svg", 1, 2);
  // The table: one line per number of users, with the seed page's columns.
  EXPECT_NE(r.out.find("median TPOT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n4       "), std::string::npos) << r.out;
  // Not a terminal: plain progress lines, no carriage returns.
  EXPECT_NE(r.err.find("bench 1/4: A"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
}

TEST(Bench, VsRunsABAAndReportsRatios) {
  NoisyServer fast({.token_delay_ms = 1});
  // Far apart on purpose: under ASan with the other tests running, the 1 ms server measured 5.9 ms in CI.
  NoisyServer slow({.token_delay_ms = 40});
  std::string dir = temp_dir("bench-vs");
  auto r = run_verbatim({"bench", "--url", fast.url(), "--vs", slow.url(), "--users", "2", "--num-prompts", "4",
                         "--max-tokens", "10", "--seeds", "1", "--json", dir + "/b.json", "--plot", dir + "/b.svg"},
                        120, dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(read_file(dir + "/b.json"));
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["runs"][0]["server"], "A");
  EXPECT_EQ(j["runs"][1]["server"], "B");
  EXPECT_EQ(j["runs"][2]["server"], "A");
  EXPECT_EQ(j["runs"][2]["round"], 2);
  const json& row = j["summary"][0];
  double ratio = row["tpot_ratio_b_over_a"].get<double>();
  // B waits 40 ms before each token: its median cannot be less, and the ratio is B's over A's.
  EXPECT_GE(row["B"]["median_tpot_ms"].get<double>(), 39.0) << r.out;
  EXPECT_DOUBLE_EQ(ratio, row["B"]["median_tpot_ms"].get<double>() / row["A"]["median_tpot_ms"].get<double>());
  EXPECT_GT(ratio, 1.5) << r.out;  // 40 ms against about 1 ms per token (a few ms on a loaded machine)
  EXPECT_LT(j["summary"][0]["output_tok_s_ratio_b_over_a"].get<double>(), 0.8);
  EXPECT_NE(r.out.find("median TPOT A / B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% lower)"), std::string::npos) << r.out;
  expect_svg(dir + "/b.svg", 2, 1);
}

TEST(Bench, OurServerWithSyntheticPrompts) {
  std::string dir = temp_dir("bench-serve");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  auto r = run_verbatim({"bench", "--url", srv.url(), "--input-len", "24", "--users", "1,4", "--num-prompts", "4",
                         "--max-tokens", "8", "--json", dir + "/b.json", "--plot", dir + "/b.svg"},
                        300, dir);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.code, 0) << r.out << r.err << srv.log();
  json j = json::parse(read_file(dir + "/b.json"));
  ASSERT_EQ(j["runs"].size(), 4u);
  for (const auto& run : j["runs"]) expect_plausible(run["figures"], 4, 32, "run");
  EXPECT_EQ(j["servers"][0]["system_fingerprints"].size(), 1u);
  for (const auto& row : j["summary"]) EXPECT_EQ(row["A"]["runs"], 2);
  expect_svg(dir + "/b.svg", 1, 2);
  std::cout << r.out;
}

// A saturated server's refusals are a result, not a broken bench: our server with a queue bound
// answers 503 to part of an 8-user run; the run goes on, its figures are over the answered
// requests, and the failures are counted by status in the JSON and named in a warning. The
// one-user runs are refused nothing (so the count is not vacuous).
TEST(BenchFailures, RefusedRequestsAreCountedAndTheRunGoesOn) {
  std::string dir = temp_dir("bench-refused");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu", "--max-num-seqs", "1", "--max-queue-len", "1"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  auto r = run_verbatim({"bench", "--url", srv.url(), "--input-len", "24", "--users", "1,8", "--num-prompts", "16",
                         "--max-tokens", "8", "--seeds", "1", "--json", dir + "/b.json"},
                        300, dir);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.code, 0) << r.out << r.err << srv.log();
  json j = json::parse(read_file(dir + "/b.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_TRUE(j["runs"][0]["failed"].empty()) << j["runs"][0]["failed"];
  EXPECT_EQ(j["runs"][0]["figures"]["requests"], 16);
  const json& eight = j["runs"][1];
  ASSERT_TRUE(eight["failed"].contains("503")) << eight["failed"] << r.out;
  const int refused = eight["failed"]["503"].get<int>();
  EXPECT_GT(refused, 0);
  EXPECT_EQ(eight["figures"]["failed"], refused);
  EXPECT_EQ(eight["figures"]["requests"].get<int>() + refused, 16);
  EXPECT_EQ(eight["output_tokens"].size(), size_t(16 - refused)) << "figures over the answered requests only";
  EXPECT_NE(r.out.find("requests failed (HTTP 503: " + std::to_string(refused) + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue is full"), std::string::npos) << r.out;
  // The table says it too: a failed column (its last), 0 of 16 for one user, the refusals for eight.
  std::map<std::string, std::string> last_cell;  // a table line's first word -> its text after the tok/s
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    last_cell[first] = line;
  }
  EXPECT_TRUE(last_cell["users"].ends_with("failed")) << r.out;
  EXPECT_TRUE(last_cell["1"].ends_with(" 0 of 16")) << r.out;
  EXPECT_TRUE(last_cell["8"].ends_with(" " + std::to_string(refused) + " of 16")) << r.out;
}

// With --vs the comparison table gets the failed column too, for both servers: B (our server with a
// queue bound) refuses part of an 8-user run, A (a test server without a bound) refuses nothing.
TEST(BenchFailures, VsTableCountsEachServersFailures) {
  std::string dir = temp_dir("bench-vs-refused");
  NoisyServer a({.token_delay_ms = 1});
  ServeProcess b(fixture("qwen3-tiny-tied"), {"--device", "cpu", "--max-num-seqs", "1", "--max-queue-len", "1"}, dir);
  ASSERT_TRUE(b.ready()) << b.log();
  auto r = run_verbatim({"bench", "--url", a.url(), "--vs", b.url(), "--input-len", "24", "--users", "8",
                         "--num-prompts", "16", "--max-tokens", "8", "--seeds", "1", "--json", dir + "/b.json"},
                        300, dir);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.code, 0) << r.out << r.err << b.log();
  json j = json::parse(read_file(dir + "/b.json"));
  ASSERT_EQ(j["runs"].size(), 3u);
  const json& bs = j["runs"][1];
  ASSERT_EQ(bs["server"], "B");
  ASSERT_TRUE(bs["failed"].contains("503")) << bs["failed"] << r.out;
  const int refused = bs["failed"]["503"].get<int>();
  EXPECT_GT(refused, 0);
  std::string head, eight;  // the comparison table's header and its 8-user row: the first of each
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (head.empty() && line.starts_with("users")) head = line;
    if (eight.empty() && line.starts_with("8 ")) eight = line;
  }
  EXPECT_TRUE(head.ends_with("failed A / B")) << r.out;
  // A's two rounds pooled (32 requests), B's one run (16).
  EXPECT_TRUE(eight.ends_with(" 0 of 32 / " + std::to_string(refused) + " of 16")) << r.out;
}

TEST(BenchFailures, ErrorsUnreachableHangingAndKilled) {
  std::string dir = temp_dir("bench-fail");
  {
    NoisyServer srv({.mode = NoiseMode::Errors500});
    auto r = run_verbatim({"bench", "--url", srv.url(), "--users", "2", "--num-prompts", "2"}, 30, dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("HTTP 500"), std::string::npos) << r.err;
  }
  {
    auto r = run_verbatim({"bench", "--url", "http://127.0.0.1:1", "--users", "1"}, 30, dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
  }
  {
    NoisyServer srv({.mode = NoiseMode::Hang});
    auto r = run_verbatim({"bench", "--url", srv.url(), "--users", "1", "--timeout", "1"}, 30, dir);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no answer from"), std::string::npos) << r.err;
  }
  {
    NoisyServerProcess srv({.token_delay_ms = 20});
    ChildProcess bench({binary(), "bench", "--url", srv.url(), "--users", "4", "--num-prompts", "64", "--max-tokens", "32"},
                       dir, "bench-killed");
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ASSERT_TRUE(bench.running()) << bench.err();
    srv.kill_now();
    int code = bench.wait(30);
    EXPECT_FALSE(bench.timed_out());
    EXPECT_EQ(code, 2) << bench.err();
    std::string err = bench.err();
    EXPECT_TRUE(err.find("closed the connection") != std::string::npos || err.find("cannot connect") != std::string::npos)
        << err;
  }
  {
    auto r = run_verbatim({"bench", "--url", "http://127.0.0.1:1", "--users", "0"}, 30, dir);
    EXPECT_NE(r.code, 0);  // a usage error from the command line parser
  }
}

TEST(BenchProgress, BarOnATerminalLinesOtherwise) {
  for (bool tty : {true, false}) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    client::Progress p(f, tty);
    p.start("bench 1/1: A", 10);
    for (int i = 0; i <= 10; ++i) p.update(i);
    p.finish("10 requests");
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
    std::fclose(f);
    EXPECT_NE(s.find("bench 1/1: A: 10 requests\n"), std::string::npos) << s;
    if (tty) {
      EXPECT_NE(s.find('\r'), std::string::npos);
      EXPECT_NE(s.find("[##############################] 10/10"), std::string::npos) << s;
    } else {
      EXPECT_EQ(s, "bench 1/1: A: 10 requests\n");
    }
  }
}

}  // namespace
}  // namespace verbatim::test
