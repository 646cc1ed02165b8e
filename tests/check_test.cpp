// `verbatim check` end to end: against reproducible servers (our own `verbatim serve`, and the
// noisy test server with its noise off) it prints 0 differing in every row and exits 0; against
// deliberately non-reproducible servers it finds the differences, their positions and the right
// verdict and exits 1; unreachable, failing, hanging or killed servers give a clear message and
// exit 2 quickly. Plus the client pieces the command stands on (URL, SSE, comparison).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "client/compare.h"
#include "client/generation.h"
#include "client/sse.h"
#include "client/url.h"
#include "support/client_noisy_server.h"
#include "support/client_process.h"
#include "support/paths.h"

namespace verbatim::test {
namespace {

using nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The table row whose comparison starts with `name`.
std::string row_of(const std::string& out, const std::string& name) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0) return line;
  return "";
}

std::vector<std::string> check_args(const std::string& url, std::vector<std::string> more) {
  std::vector<std::string> a = {"check", "--url", url, "--num-prompts", "8", "--max-tokens", "12", "--users", "8"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// ---- the client's pieces ---------------------------------------------------------------------

TEST(ClientUrl, AcceptsTheUsualSpellings) {
  auto u = client::parse_url("http://127.0.0.1:8000/v1/");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.base, "");
  EXPECT_EQ(client::parse_url("127.0.0.1:9").port, 9);
  EXPECT_EQ(client::parse_url("http://h:1/proxy/v1").base, "/proxy");
  EXPECT_EQ(client::parse_url("http://[::1]:5").host, "::1");
  EXPECT_EQ(client::parse_url("http://localhost").port, 80);
  EXPECT_THROW(client::parse_url("https://h:1"), Error);
  EXPECT_THROW(client::parse_url("http://h:99999"), Error);
  EXPECT_THROW(client::parse_url("http://:80"), Error);
  EXPECT_THROW(client::parse_url("nohost"), Error);
}

TEST(ClientSse, JoinsEventsSplitAnywhere) {
  std::string stream = "data: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: {\"b\":\ndata: 2}\n\nevent: x\ndata: [DONE]\n\n";
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    std::vector<std::string> got;
    client::SseParser p([&](const std::string& d) { got.push_back(d); });
    for (size_t i = 0; i < stream.size(); i += piece) p.feed(std::string_view(stream).substr(i, piece));
    p.finish();
    ASSERT_EQ(got.size(), 2u) << "piece " << piece;
    EXPECT_EQ(got[0], "{\"a\":1}");
    EXPECT_EQ(got[1], "{\"b\":\n2}");
    EXPECT_TRUE(p.saw_done());
  }
  std::vector<std::string> got;
  client::SseParser p([&](const std::string& d) { got.push_back(d); });
  p.feed("data: last");  // no closing blank line: still delivered at the end
  p.finish();
  EXPECT_EQ(got, std::vector<std::string>{"last"});
}

TEST(ClientCompare, TokensThenLogprobBits) {
  client::Output a, b;
  a.has_token_ids = b.has_token_ids = a.has_logprobs = b.has_logprobs = true;
  a.token_ids = b.token_ids = {1, 2, 3, 4};
  a.logprobs = b.logprobs = {-0.5, -1.0, -0.25, -2.0};
  EXPECT_FALSE(client::compare_outputs(a, b).differs());
  b.logprobs[2] = std::nextafter(-0.25, 0.0);  // one bit
  auto d = client::compare_outputs(a, b);
  EXPECT_FALSE(d.tokens_differ);
  EXPECT_TRUE(d.logprobs_differ);
  EXPECT_EQ(d.first_logprob_diff, 2);
  b.token_ids[3] = 9;
  d = client::compare_outputs(a, b);
  EXPECT_TRUE(d.tokens_differ);
  EXPECT_EQ(d.first_diff, 3);
  b.token_ids = {1, 2};  // a prefix: differs where the shorter ends
  EXPECT_EQ(client::compare_outputs(a, b).first_diff, 2);
  auto row = client::compare_runs({a, a, a}, {a, b, a});
  EXPECT_EQ(row.token_diffs, std::vector<int>{1});
  EXPECT_EQ(row.median_position(), 2.0);
}

// What a client reads besides the tokens is compared too: the same tokens with another text or
// finish reason differ.
TEST(ClientCompare, SameTokensWithAnotherTextOrFinishDiffer) {
  client::Output a;
  a.has_token_ids = true;
  a.token_ids = {1, 2, 3};
  a.text = " a b c";
  a.finish_reason = "length";
  client::Output b = a;
  EXPECT_FALSE(client::compare_outputs(a, b).differs());
  b.text = " a b c extra";
  auto d = client::compare_outputs(a, b);
  EXPECT_FALSE(d.tokens_differ);
  EXPECT_TRUE(d.text_differs);
  b = a;
  b.finish_reason = "stop";
  EXPECT_TRUE(client::compare_outputs(a, b).text_differs);
  auto row = client::compare_runs({a, a}, {a, b});
  EXPECT_TRUE(row.token_diffs.empty());
  EXPECT_EQ(row.text_only, std::vector<int>{1});
  EXPECT_EQ(row.all_differing(), std::vector<int>{1});
}

// vLLM's chat answers name the reasoning "reasoning" now; chat logprobs without token strings
// cannot identify tokens, so the text does.
TEST(ClientParse, ChatReasoningFieldAndLogprobsWithoutTokens) {
  json answer = {{"choices", {{{"message", {{"role", "assistant"}, {"reasoning", "think "}, {"content", "answer"}}},
                               {"logprobs", {{"content", {{{"logprob", -0.5}}, {{"logprob", -0.25}}}}}},
                               {"finish_reason", "stop"}}}}};
  client::Output o = client::parse_answer(answer, true, "test");
  EXPECT_EQ(o.text, "think answer");
  EXPECT_TRUE(o.has_logprobs);
  EXPECT_EQ(o.logprobs.size(), 2u);
  EXPECT_TRUE(o.tokens.empty());
  // A finish reason of a request the server did not complete (vLLM's abort / error) is no answer.
  json aborted = answer;
  aborted["choices"][0]["finish_reason"] = "abort";
  EXPECT_THROW(client::parse_answer(aborted, true, "test"), client::ClientError);
  // Some vLLM versions send the reasoning under both names (one a copy): it is read once.
  answer["choices"][0]["message"]["reasoning_content"] = "think ";
  EXPECT_EQ(client::parse_answer(answer, true, "test").text, "think answer");
  client::Output other = o;
  other.text = "think other";
  EXPECT_EQ(client::common_basis(o, other), client::CompareBasis::TextBytes);
  EXPECT_TRUE(client::compare_outputs(o, other).tokens_differ);
}

// ---- against reproducible and non-reproducible servers ------------------------------------------

TEST(Check, ReproducibleServerGivesZeroInEveryRowAndExitZero) {
  NoisyServer srv({});
  std::string dir = temp_dir("check-clean");
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const char* row : {"flushed repeat against fresh", "fresh against warm cache", "8 users at once against one user"}) {
    std::string line = row_of(r.out, row);
    EXPECT_NE(line.find("0 of 8"), std::string::npos) << row << "\n" << r.out;
    EXPECT_NE(line.find("same tokens and logprobs"), std::string::npos) << line;
  }
  EXPECT_NE(r.out.find("result: reproducible"), std::string::npos);
  json j = read_json_file(dir + "/c.json");
  EXPECT_TRUE(j["reproducible"].get<bool>());
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["runs"]["fresh"].size(), 8u);
  EXPECT_EQ(j["runs"]["fresh"][0]["token_ids"].size(), 12u);
  EXPECT_EQ(j["features"]["token_ids"], true);
  EXPECT_GE(srv.resets(), 3);  // a reset before fresh, flushed and the users run
  // Not vacuous: different prompts gave different tokens.
  EXPECT_NE(j["runs"]["fresh"][0]["token_ids"], j["runs"]["fresh"][1]["token_ids"]);
}

TEST(Check, BatchDependentServerIsCaughtAndBlamedOnTheBatch) {
  NoisyServer srv({.mode = NoiseMode::Concurrency, .noise_from = 5});
  std::string dir = temp_dir("check-batch");
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(row_of(r.out, "flushed repeat against fresh").find("0 of 8"), std::string::npos) << r.out;
  EXPECT_NE(row_of(r.out, "fresh against warm cache").find("0 of 8"), std::string::npos) << r.out;
  std::string users = row_of(r.out, "8 users at once");
  EXPECT_EQ(users.find("0 of 8"), std::string::npos) << r.out;
  EXPECT_NE(users.find("the batch causes it"), std::string::npos) << users;
  EXPECT_NE(r.out.find("NOT reproducible"), std::string::npos);
  json j = read_json_file(dir + "/c.json");
  const json& row = j["rows"][2];
  EXPECT_EQ(row["kind"], "users");
  EXPECT_GT(row["outputs_differ"].get<int>(), 0);
  EXPECT_EQ(row["median_first_diff"].get<double>(), 5.0);  // the noise starts at position 5
  for (const auto& d : row["differing"]) EXPECT_EQ(d["first_diff"], 5);
  EXPECT_TRUE(row["alone_unstable"].empty());
  EXPECT_EQ(row["alone_tested"].size(), row["outputs_differ"].get<size_t>());
}

TEST(Check, ServerThatDiffersEveryCallIsNotReproducibleEvenAlone) {
  NoisyServer srv({.mode = NoiseMode::CallCount, .noise_from = 3});
  std::string dir = temp_dir("check-calls");
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string line = row_of(r.out, "flushed repeat against fresh");
  EXPECT_NE(line.find("8 of 8"), std::string::npos) << r.out;
  EXPECT_NE(line.find("not reproducible even alone"), std::string::npos) << line;
  // The first answer (the probe, before any reset) is one more answer to prompt 0, and differs too.
  EXPECT_NE(r.out.find("sent before the first cache reset) differs"), std::string::npos) << r.out;
  json j = read_json_file(dir + "/c.json");
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["outputs_differ"], 8);
    EXPECT_EQ(row["median_first_diff"].get<double>(), 3.0);
  }
}

TEST(Check, LogprobBitsAreComparedNotJustTokens) {
  NoisyServer srv({.mode = NoiseMode::LogprobBits, .noise_from = 4});
  std::string dir = temp_dir("check-logprobs");
  auto r = run_verbatim(check_args(srv.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string line = row_of(r.out, "flushed repeat against fresh");
  EXPECT_NE(line.find("0 of 8"), std::string::npos) << r.out;  // the tokens all match
  EXPECT_NE(line.find("logprob bits differ"), std::string::npos) << line;
}

TEST(Check, ComparesTwoServersAndNamesWhatDiffers) {
  NoisyServer a({});
  NoisyServer b({.noise_from = 6, .version = "noisy-2", .salt = 1});
  std::string dir = temp_dir("check-compare");
  auto r = run_verbatim(check_args(a.url(), {"--compare-url", b.url()}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string line = row_of(r.out, "127.0.0.1:" + std::to_string(b.port()) + " against");
  EXPECT_NE(line.find("8 of 8"), std::string::npos) << r.out;
  EXPECT_NE(line.find("   6   "), std::string::npos) << line;  // median first difference
  EXPECT_NE(line.find("the servers differ"), std::string::npos) << line;
  EXPECT_NE(line.find("version.version noisy-1 -> noisy-2"), std::string::npos) << line;
  // The same server twice: nothing differs.
  NoisyServer a2({});
  r = run_verbatim(check_args(a.url(), {"--compare-url", a2.url()}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST(Check, RecordThenAgainstSaysWhatChanged) {
  NoisyServer before({});
  NoisyServer after({.noise_from = 2, .version = "noisy-9", .salt = 3});
  std::string dir = temp_dir("check-record");
  std::string rec = dir + "/rec.json";
  auto r = run_verbatim(check_args(before.url(), {"--record", rec}), 60, dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = read_json_file(rec);
  EXPECT_EQ(j["outputs"].size(), 8u);
  EXPECT_EQ(j["sampling"]["max_tokens"], 12);

  r = run_verbatim({"check", "--url", before.url(), "--against", rec, "--users", "4"}, 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(row_of(r.out, "this run against").find("0 of 8"), std::string::npos) << r.out;
  // Sampling options given beside --against lose to the record's, and the note names them.
  r = run_verbatim({"check", "--url", before.url(), "--against", rec, "--users", "4", "--max-tokens", "2", "--temperature",
                    "0.5"},
                   60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("ignored: --max-tokens, --temperature"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("up to 12 tokens, greedy"), std::string::npos) << r.out;

  r = run_verbatim({"check", "--url", after.url(), "--against", rec, "--users", "4"}, 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string line = row_of(r.out, "this run against");
  EXPECT_NE(line.find("8 of 8"), std::string::npos) << r.out;
  EXPECT_NE(line.find("changed since the record"), std::string::npos) << line;
  EXPECT_NE(line.find("noisy-1 -> noisy-9"), std::string::npos) << line;

  // An edited record fails with exit 2 and a line naming the field, before any request is sent.
  struct Edit {
    const char* pointer;
    json value;
    const char* want;
  };
  for (const Edit& e : {Edit{"/sampling/max_tokens", 1e15, "sampling.max_tokens"},
                        Edit{"/sampling/max_tokens", "abc", "sampling.max_tokens"},
                        Edit{"/sampling/temperature", -1, "sampling.temperature"},
                        Edit{"/sampling/chat", "yes", "sampling.chat"}, Edit{"/prompts", json::array(), "holds no prompts"}}) {
    json edited = j;
    edited[json::json_pointer(e.pointer)] = e.value;
    if (std::string(e.pointer) == "/prompts") edited["outputs"] = json::array();
    std::ofstream(dir + "/edited.json") << edited.dump();
    r = run_verbatim({"check", "--url", before.url(), "--against", dir + "/edited.json"}, 60, dir);
    EXPECT_EQ(r.code, 2) << e.pointer << "\n" << r.err;
    EXPECT_NE(r.err.find(e.want), std::string::npos) << e.pointer << "\n" << r.err;
    EXPECT_EQ(r.err.find("unexpected"), std::string::npos) << r.err;
  }
}

TEST(Check, PromptFileWithTextTokenIdsAndChatMessages) {
  NoisyServer srv({});
  std::string dir = temp_dir("check-file");
  std::ofstream(dir + "/p.jsonl") << "\"plain text\"\n[1, 2, 3]\n\n[{\"role\": \"user\", \"content\": \"hi\"}]\n"
                                  << "{\"prompt\": \"obj\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n";
  auto r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/p.jsonl", "--max-tokens", "6", "--users",
                         "5", "--json", dir + "/c.json"},
                        60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(row_of(r.out, "5 users at once").find("0 of 5"), std::string::npos) << r.out;
  EXPECT_EQ(read_json_file(dir + "/c.json")["prompts"].size(), 5u);
  std::ofstream(dir + "/bad.jsonl") << "\"ok\"\n{\"nothing\": 1}\n";
  r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/bad.jsonl"}, 30, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;
}

TEST(Check, WarnsAndGoesOnWhenTheCacheCannotBeReset) {
  NoisyServer srv({.mode = NoiseMode::NoResetRoute});
  std::string dir = temp_dir("check-noreset");
  auto r = run_verbatim(check_args(srv.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("/reset_prefix_cache"), std::string::npos) << r.out;  // the warning
  EXPECT_NE(row_of(r.out, "fresh against warm cache").find("(no cache reset)"), std::string::npos) << r.out;
}

// The mode is real: with a working reset, the warm run's cache hits are caught and blamed.
TEST(Check, CacheDependentServerIsCaughtOnTheWarmRow) {
  NoisyServer srv({.mode = NoiseMode::CacheHit, .noise_from = 3});
  std::string dir = temp_dir("check-cachehit");
  auto r = run_verbatim(check_args(srv.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(row_of(r.out, "flushed repeat against fresh").find("0 of 8"), std::string::npos) << r.out;
  std::string warm = row_of(r.out, "fresh against warm cache");
  EXPECT_NE(warm.find("8 of 8"), std::string::npos) << r.out;
  EXPECT_NE(warm.find("the prefix cache causes it"), std::string::npos) << warm;
  EXPECT_EQ(r.out.find("left the cache warm"), std::string::npos) << r.out;
}

// A reset that answers OK and empties nothing: every run hits a warm cache, so nothing differs,
// and check must say that no run started cold instead of a plain "reproducible".
TEST(Check, ResetThatEmptiesNothingIsNamedNotCalledAPlainPass) {
  NoisyServer srv({.mode = NoiseMode::CacheHit, .noise_from = 3, .reset_noop = true});
  std::string dir = temp_dir("check-reset-noop");
  run_verbatim(check_args(srv.url(), {}), 60, dir);  // fills the server's cache with every prompt
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("the reset empties nothing"), std::string::npos) << r.out;
  EXPECT_NE(row_of(r.out, "fresh against warm cache").find("(the reset left the cache warm)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("but not every run started from an emptied prefix cache"), std::string::npos) << r.out;
  EXPECT_FALSE(read_json_file(dir + "/c.json")["cache_reset"].get<bool>());
}

// A reset that fails: the rows say so, and the batch is not blamed for what the cache may cause.
TEST(Check, FailedResetMarksTheRowsAndTheBatchIsNotBlamedAlone) {
  NoisyServer srv({.mode = NoiseMode::CacheHit, .noise_from = 3, .reset_status = 500});
  std::string dir = temp_dir("check-reset-500");
  auto r = run_verbatim(check_args(srv.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("resetting the prefix cache failed"), std::string::npos) << r.out;
  std::string users = row_of(r.out, "8 users at once");
  EXPECT_NE(users.find("(no cache reset)"), std::string::npos) << r.out;
  EXPECT_EQ(users.find("the batch causes it"), std::string::npos) << users;
}

// Same token ids and logprobs, another text under concurrency: a client reads the text.
TEST(Check, TextIsComparedWhenTheTokensMatch) {
  NoisyServer srv({.mode = NoiseMode::TextUnderConcurrency});
  std::string dir = temp_dir("check-text");
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string users = row_of(r.out, "8 users at once");
  EXPECT_EQ(users.find("0 of 8"), std::string::npos) << r.out;
  EXPECT_NE(users.find("text or finish_reason differs"), std::string::npos) << users;
  EXPECT_FALSE(read_json_file(dir + "/c.json")["rows"][2]["text_only"].empty());
}

// Chat logprobs that carry no token strings, and no token ids: the text identifies the tokens
// (before, every token read "" and a batch-dependent server passed).
TEST(Check, ChatLogprobsWithoutTokenStringsAreComparedByText) {
  NoisyServer srv({.mode = NoiseMode::Concurrency, .noise_from = 4, .strict_fields = true, .chat_lp_without_token = true});
  std::string dir = temp_dir("check-chat-notoken");
  auto r = run_verbatim(check_args(srv.url(), {"--chat"}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("compared  by text bytes"), std::string::npos) << r.out;
  EXPECT_EQ(row_of(r.out, "8 users at once").find("0 of 8"), std::string::npos) << r.out;
}

// Not vacuous: a server whose output ignores the prompt, or the seed, is named.
TEST(Check, OutputsThatIgnoreThePromptOrTheSeedAreNamed) {
  NoisyServer same({.same_for_every_prompt = true});
  std::string dir = temp_dir("check-vacuous");
  auto r = run_verbatim(check_args(same.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all 8 prompts got the same answer"), std::string::npos) << r.out;
  NoisyServer seedless({});  // its tokens hash the prompt only: every seed samples the same
  r = run_verbatim(check_args(seedless.url(), {"--temperature", "0.8", "--seed", "5"}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("seed 6 gave the same answers as seed 5"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("prompts got the same answer"), std::string::npos) << r.out;
}

// A prompt file mixing chat and completions: what the probe (prompt 0, chat) found is not asked of
// completions answers, which on some servers (here: no logprobs) differ by route.
TEST(Check, MixedRoutePromptFileHoldsOnlyTheProbesRoute) {
  NoisyServer srv({.completions_without_logprobs = true});
  std::string dir = temp_dir("check-mixed-routes");
  std::ofstream(dir + "/p.jsonl") << "[{\"role\": \"user\", \"content\": \"hi\"}]\n\"plain text\"\n[1, 2, 3]\n";
  auto r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/p.jsonl", "--max-tokens", "6", "--users", "3"}, 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// One prompt (or --users 1): the users row ran nothing at once, and says so.
TEST(Check, AUsersRowOfOneUserSaysNothingRanAtOnce) {
  NoisyServer srv({});
  std::string dir = temp_dir("check-one-user");
  auto r = run_verbatim({"check", "--url", srv.url(), "--num-prompts", "3", "--max-tokens", "4", "--users", "1"}, 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("nothing ran at once"), std::string::npos) << r.out;
}

// A second server that cannot repeat itself alone is not the first server's instability.
TEST(Check, EachServersAloneRunsJudgeOnlyItsOwnRows) {
  NoisyServer a({.mode = NoiseMode::Concurrency, .noise_from = 5});
  NoisyServer b({.mode = NoiseMode::CallCount, .noise_from = 3});
  std::string dir = temp_dir("check-compare-unstable");
  auto r = run_verbatim(check_args(a.url(), {"--compare-url", b.url()}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  std::string users = row_of(r.out, "8 users at once");
  EXPECT_NE(users.find("the batch causes it"), std::string::npos) << r.out;
  std::string cmp = row_of(r.out, "127.0.0.1:" + std::to_string(b.port()) + " against");
  EXPECT_NE(cmp.find("not reproducible even alone"), std::string::npos) << cmp;
}

TEST(Check, FallsBackToLogprobTokensWhenTheServerRejectsReturnTokenIds) {
  NoisyServer srv({.mode = NoiseMode::Concurrency, .noise_from = 4, .strict_fields = true});
  std::string dir = temp_dir("check-strict");
  auto r = run_verbatim(check_args(srv.url(), {"--json", dir + "/c.json"}), 60, dir);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("compared  by token strings and logprobs"), std::string::npos) << r.out;
  json j = read_json_file(dir + "/c.json");
  EXPECT_EQ(j["features"]["token_ids"], false);
  EXPECT_EQ(j["rows"][2]["compared_by"], "token strings");
  EXPECT_EQ(j["rows"][2]["median_first_diff"].get<double>(), 4.0);  // positions still found
  EXPECT_FALSE(j["runs"]["fresh"][0].contains("token_ids"));
}

// 429 and 503 answers are sent again up to ClientOptions::retries times, plain or streamed,
// honouring Retry-After, each resend counted; past the budget the refusal is the error and says
// how often it was resent. Another status (500) is never resent.
TEST(ClientRetry, RefusedRequestsAreSentAgainPlainAndStreamed) {
  client::Prompt p;
  p.text = "hi";
  client::SamplingOptions s;
  s.max_tokens = 6;
  client::ServerFeatures f;
  auto opts = [](int retries) {
    client::ClientOptions o;
    o.retries = retries;
    o.tally = std::make_shared<client::RetryTally>();
    return o;
  };
  {  // plain, 429 with Retry-After: 0 twice
    NoisyServer srv({.retry_after = "0", .refuse_first = 2, .refuse_status = 429});
    client::ClientOptions o = opts(3);
    client::HttpClient c(client::parse_url(srv.url()), o);
    client::Output out = client::generate(c, p, s, f);
    EXPECT_EQ(out.token_ids.size(), 6u);
    EXPECT_EQ(o.tally->resent_429.load(), 2);
    EXPECT_EQ(o.tally->resent_503.load(), 0);
  }
  {  // streamed, 503 without Retry-After once (a 0.5-0.75 s backoff)
    NoisyServer srv({.refuse_first = 1, .refuse_status = 503});
    client::ClientOptions o = opts(3);
    client::HttpClient c(client::parse_url(srv.url()), o);
    auto t0 = std::chrono::steady_clock::now();
    client::StreamTiming t = client::generate_streaming(c, p, s, f);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(t.completion_tokens, 6);
    EXPECT_EQ(o.tally->resent_503.load(), 1);
    EXPECT_GE(waited, 0.5) << "the backoff without Retry-After";
  }
  {  // refused more often than the budget allows: the error says so
    NoisyServer srv({.retry_after = "0", .refuse_first = 5, .refuse_status = 429});
    client::ClientOptions o = opts(2);
    client::HttpClient c(client::parse_url(srv.url()), o);
    try {
      client::generate(c, p, s, f);
      ADD_FAILURE() << "a third refusal past --retries 2 was not an error";
    } catch (const client::ClientError& e) {
      EXPECT_EQ(e.status(), 429);
      EXPECT_NE(std::string(e.what()).find("again after 2 resends"), std::string::npos) << e.what();
    }
    EXPECT_EQ(o.tally->resent_429.load(), 2);
    EXPECT_EQ(srv.generation_requests(), 3);
    client::ClientOptions o1 = opts(1);  // streamed: the same end, and the same words
    client::HttpClient c1(client::parse_url(srv.url()), o1);
    try {
      client::generate_streaming(c1, p, s, f);
      ADD_FAILURE() << "a second streamed refusal past --retries 1 was not an error";
    } catch (const client::ClientError& e) {
      EXPECT_EQ(e.status(), 429);
      EXPECT_NE(std::string(e.what()).find("again after 1 resends"), std::string::npos) << e.what();
    }
    EXPECT_EQ(srv.generation_requests(), 5);
  }
  {  // a 500 is an answer, not a refusal for now: no resend
    NoisyServer srv({.mode = NoiseMode::Errors500});
    client::ClientOptions o = opts(3);
    client::HttpClient c(client::parse_url(srv.url()), o);
    EXPECT_THROW(client::generate(c, p, s, f), client::ClientError);
    EXPECT_EQ(o.tally->total(), 0);
    EXPECT_EQ(srv.generation_requests(), 1);
  }
}

// ---- failures: clear message, exit 2, never a hang ---------------------------------------------

TEST(CheckFailures, NothingListening) {
  int port;
  {
    NoisyServer gone({});
    port = gone.port();
  }  // stopped: the port is free again
  std::string dir = temp_dir("check-refused");
  auto r = run_verbatim({"check", "--url", "http://127.0.0.1:" + std::to_string(port)}, 30, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot connect to http://127.0.0.1:" + std::to_string(port)), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 10);
  r = run_verbatim({"check", "--url", "ftp://x"}, 30, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad URL"), std::string::npos) << r.err;
}

TEST(CheckFailures, ServerAnsweringErrors) {
  NoisyServer srv({.mode = NoiseMode::Errors500});
  std::string dir = temp_dir("check-500");
  auto r = run_verbatim(check_args(srv.url(), {}), 30, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("HTTP 500"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fails on purpose"), std::string::npos) << r.err;  // the server's own message
}

TEST(CheckFailures, EchoAgainstAServerThatIgnoresItIsAClearError) {
  NoisyServer srv({});  // answers with the generated tokens' logprobs only, whatever echo says
  std::string dir = temp_dir("check-echo-ignored");
  auto r = run_verbatim(check_args(srv.url(), {"--echo"}), 30, dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("carries no prompt logprobs"), std::string::npos) << r.err;
}

TEST(CheckFailures, ServerThatNeverAnswersTimesOut) {
  NoisyServer srv({.mode = NoiseMode::Hang});
  std::string dir = temp_dir("check-hang");
  auto r = run_verbatim(check_args(srv.url(), {"--timeout", "1"}), 30, dir);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no answer from"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 10);
}

// Each read quick, the whole answer not: --timeout bounds the whole answer.
TEST(CheckFailures, AnAnswerDribbledPastTheTimeoutEndsTheRun) {
  NoisyServer srv({.mode = NoiseMode::Dribble});
  std::string dir = temp_dir("check-dribble");
  auto r = run_verbatim(check_args(srv.url(), {"--timeout", "1"}), 30, dir);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no whole answer from"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 10);
}

// Answers after the first that drop what the first had (token ids, logprobs) are not compared on
// less than the header claims: two bare texts would match where the tokens are unknown.
TEST(CheckFailures, AnswersThatDropWhatTheFirstHadAreRefused) {
  NoisyServer srv({.mode = NoiseMode::BareAfterFirst});
  std::string dir = temp_dir("check-bare-later");
  auto r = run_verbatim(check_args(srv.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("has no token ids, though the server's first answer had them"), std::string::npos) << r.err;
}

// An answer with nothing to compare (null text, no token ids or logprobs) must not pass as equal.
TEST(CheckFailures, AnswersWithoutTextAreRefusedNotCalledReproducible) {
  NoisyServer srv({.mode = NoiseMode::NullText});
  std::string dir = temp_dir("check-null-text");
  for (bool chat : {false, true}) {
    std::vector<std::string> extra;
    if (chat) extra.push_back("--chat");
    auto r = run_verbatim(check_args(srv.url(), extra), 60, dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("has no text"), std::string::npos) << r.err;
  }
  // The same server with text passes (the refusal is about the missing text, not the server).
  NoisyServer ok({});
  auto r = run_verbatim(check_args(ok.url(), {}), 60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// Options whose values would hang, crash or silently mislead are refused up front, naming the option.
TEST(CliOptions, NonFiniteAndOutOfRangeValuesAreOneLineErrors) {
  std::string dir = temp_dir("cli-options");
  struct Case {
    std::vector<std::string> args;
    const char* want;
  };
  const std::vector<Case> cases = {
      {{"check", "--url", "http://127.0.0.1:1", "--timeout", "nan"}, "--timeout"},
      {{"check", "--url", "http://127.0.0.1:1", "--temperature", "nan"}, "--temperature"},
      {{"bench", "--url", "http://127.0.0.1:1", "--timeout", "inf"}, "--timeout"},
      {{"bench", "--url", "http://127.0.0.1:1", "--num-prompts", "0"}, "--num-prompts"},
      {{"serve", "--port", "0", "--status-interval", "1e300"}, "--status-interval"},
      {{"make-model", "--arch", "tiny", "--out", dir + "/m", "--init-std", "inf"}, "--init-std"},
      {{"spec-bench", "--model", dir, "--batches", "0"}, "--batches"},
      {{"spec-bench", "--model", dir, "--reps", "0"}, "--reps"},
      {{"spec-bench", "--model", dir, "--workloads", "bogus"}, "--workloads"},
      {{"engine-bench", "--model", dir, "--batches", "0,1"}, "--batches"},
      {{"engine-bench", "--model", dir, "--steps", "0"}, "--steps"},
      {{"dump-logits", "--model", dir, "--prompts", dir + "/p.json", "--out", dir + "/o.safetensors", "--greedy", "-3"},
       "--greedy"},
      {{"serve", "--port", "0", "--max-model-len", "0x100"}, "--max-model-len"},
      // Every integer option reads decimal only (CLI11's Range took 0x1F40 as 8000).
      {{"serve", "--port", "0x1F40"}, "--port"},
      {{"serve", "--port", "0", "--max-num-seqs", "0x10"}, "--max-num-seqs"},
      {{"check", "--url", "http://127.0.0.1:1", "--users", "0x10"}, "--users"},
      {{"bench", "--url", "http://127.0.0.1:1", "--users", "1,0x2"}, "--users"},
      {{"generate", "--ngram-min", "0x2"}, "--ngram-min"},
      // A leading zero is refused too: CLI11 reads "010" as octal 8.
      {{"serve", "--port", "010"}, "--port"},
      {{"bench", "--url", "http://127.0.0.1:1", "--users", "1,010"}, "--users"},
      {{"make-model", "--arch", "tiny", "--out", dir + "/m", "--seed", "010"}, "--seed"},
      {{"generate", "--max-model-len", "0"}, "--max-model-len"},
      // Positions past the model's max_position_embeddings (the fixture's 4,096), checked once loaded.
      {{"engine-bench", "--model", fixture("qwen3-tiny-tied"), "--device", "cpu", "--context", "5000", "--prefill", "0"},
       "max_position_embeddings of 4096"},
      // Seeds are plain decimal integers that fit: never saturated, wrapped or read as hex.
      {{"make-model", "--arch", "tiny", "--out", dir + "/m", "--seed", "-1"}, "--seed"},
      {{"make-model", "--arch", "tiny", "--out", dir + "/m", "--seed", "18446744073709551616"}, "--seed"},
      {{"make-model", "--arch", "tiny", "--out", dir + "/m", "--seed", "0x10"}, "--seed"},
      {{"serve", "--port", "0", "--seed", "-1"}, "--seed"},
      {{"check", "--url", "http://127.0.0.1:1", "--seed", "99999999999999999999"}, "--seed"},
      {{"bench", "--url", "http://127.0.0.1:1", "--seed", "1e3"}, "--seed"},
      // Output files are checked before any work: a missing folder, a folder given as the file.
      {{"check", "--url", "http://127.0.0.1:1", "--json", dir + "/no-such-folder/out.json"}, "--json"},
      {{"check", "--url", "http://127.0.0.1:1", "--record", dir}, "--record"},
      {{"bench", "--url", "http://127.0.0.1:1", "--plot", dir + "/no-such-folder/p.svg"}, "--plot"},
      {{"engine-bench", "--model", dir, "--json", dir + "/no-such-folder/e.json"}, "--json"},
      {{"spec-bench", "--model", dir, "--json", dir + "/no-such-folder/s.json"}, "--json"},
  };
  for (const Case& c : cases) {
    auto r = run_verbatim(c.args, 30, dir);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_FALSE(r.timed_out) << cmd;
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_LT(r.code, 128) << cmd << ": killed by a signal\n" << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << cmd << "\n" << r.err;
  }
  // A usage error CLI11 catches exits 2 (check / bench document 2 as "could not run"), not CLI11's
  // own codes (105 for a failed validator).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"check", "--url", "http://127.0.0.1:1", "--json", dir + "/no-such-folder/out.json"},
        std::vector<std::string>{"bench", "--url", "http://127.0.0.1:1", "--num-prompts", "0"},
        std::vector<std::string>{"make-model", "--arch", "tiny"}})
    EXPECT_EQ(run_verbatim(args, 30, dir).code, 2) << args[0] << " " << args.back();
  // An unknown command is named; `help` is --help.
  auto unknown = run_verbatim({"foo"}, 30, dir);
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("unknown command 'foo'"), std::string::npos) << unknown.err;
  auto help = run_verbatim({"help"}, 30, dir);
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("serve"), std::string::npos) << help.out;
  // In range, the same options are taken (the first fails later, on the missing server).
  auto ok = run_verbatim({"check", "--url", "http://127.0.0.1:1", "--timeout", "0.5", "--temperature", "0.5"}, 30, dir);
  EXPECT_EQ(ok.code, 2) << ok.err;
  EXPECT_NE(ok.err.find("cannot connect"), std::string::npos) << ok.err;
}

TEST(CheckFailures, ServerKilledMidRun) {
  NoisyServerProcess srv({.hold_ms = 150});
  std::string dir = temp_dir("check-killed");
  ChildProcess check({binary(), "check", "--url", srv.url(), "--num-prompts", "40", "--max-tokens", "8", "--users", "8"},
                     dir, "check");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_TRUE(check.running()) << check.err();
  srv.kill_now();
  int code = check.wait(30);
  EXPECT_FALSE(check.timed_out());
  EXPECT_EQ(code, 2) << check.out() << check.err();
  std::string err = check.err();
  EXPECT_TRUE(err.find("closed the connection") != std::string::npos || err.find("cannot connect") != std::string::npos)
      << err;
}

// ---- against our own server ---------------------------------------------------------------------

// The fresh, warm, flushed and users rows of a check of n prompts all say "0 of n".
void expect_no_row_differs(const std::string& out, int n) {
  const std::string zero = "0 of " + std::to_string(n);
  for (const std::string& row : {std::string("flushed repeat against fresh"), std::string("fresh against warm cache"),
                                std::to_string(n) + " users at once against one user"})
    EXPECT_NE(row_of(out, row).find(zero), std::string::npos) << row << "\n" << out;
}

// n token-id prompts: a shared prefix of prefix_len ids (cache hits), then a tail of 1 + i % tails ids.
void write_id_prompts(const std::string& path, int n, int prefix_len, int tails) {
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    json ids = json::array();
    for (int t = 0; t < prefix_len; ++t) ids.push_back(10 + (t * 7) % 500);
    for (int t = 0; t <= i % tails; ++t) ids.push_back(20 + (i * 31 + t * 3) % 480);
    f << ids.dump() << "\n";
  }
}

TEST(CheckOurServer, TokenIdPromptsOnTheTinyModel) {
  std::string dir = temp_dir("check-serve");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  write_id_prompts(dir + "/ids.jsonl", 12, 40, 5);
  auto r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens", "16", "--users",
                         "12", "--json", dir + "/c.json"},
                        300, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 0) << r.out << r.err << srv.log();
  expect_no_row_differs(r.out, 12);
  json j = read_json_file(dir + "/c.json");
  EXPECT_EQ(j["features"]["token_ids"], true) << "compared by token ids";
  EXPECT_EQ(j["features"]["logprobs"], true);
  EXPECT_EQ(j["runs"]["fresh"][0]["token_ids"].size(), 16u);
  EXPECT_NE(j["runs"]["fresh"][0]["token_ids"], j["runs"]["fresh"][1]["token_ids"]);  // not vacuous
  // The cache rows are not vacuous either: the warm run hit the cache, and each reset emptied it.
  EXPECT_EQ(j["runs"]["fresh"][0]["cached_tokens"], 0);
  EXPECT_GT(j["runs"]["warm"][0]["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(j["runs"]["flushed"][0]["cached_tokens"], 0);
  EXPECT_NE(r.out.find("cache:   the warm run found"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning:"), std::string::npos) << r.out;
  std::cout << r.out;
  // Seeded sampling on verbatim: reproducible, and the seed matters (no warning that it is ignored).
  r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens", "16", "--users", "12",
                    "--temperature", "1.0", "--seed", "11"},
                   300, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("warning:"), std::string::npos) << r.out;
}

// A server whose queue is full answers 503 with Retry-After (our engine's queue bound, for real):
// the check sends those requests again instead of ending, counts the resends, and still finds
// every row equal. With --retries 0 the first refusal ends it, naming the status and the reason.
TEST(CheckOurServer, RequestsRefusedForAFullQueueAreSentAgain) {
  std::string dir = temp_dir("check-queue-full");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu", "--max-num-seqs", "2", "--max-queue-len", "1"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  write_id_prompts(dir + "/ids.jsonl", 16, 40, 5);
  const std::vector<std::string> args = {"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens",
                                         "24", "--users", "16"};
  std::vector<std::string> with = args;
  for (const char* a : {"--retries", "12", "--json"}) with.push_back(a);
  with.push_back(dir + "/c.json");
  auto r = run_verbatim(with, 300, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 0) << r.out << r.err << srv.log();
  expect_no_row_differs(r.out, 16);
  json j = read_json_file(dir + "/c.json");
  const int resent = j["resends"]["503"].get<int>();
  EXPECT_GT(resent, 0) << "the queue bound refused nothing: the test proves nothing\n" << r.out;
  EXPECT_EQ(j["resends"]["429"], 0);
  EXPECT_NE(r.out.find("retries: " + std::to_string(resent) + " requests sent again"), std::string::npos) << r.out;
  // The progress output says why the run waits, and its line counts the resends.
  EXPECT_NE(r.err.find("note: the server refused requests for now"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" resent after a refusal"), std::string::npos) << r.err;
  std::vector<std::string> without = args;
  for (const char* a : {"--retries", "0"}) without.push_back(a);
  r = run_verbatim(without, 300, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("HTTP 503"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queue is full"), std::string::npos) << r.err;
}

// --echo: every prompt token's logprob is compared too, as loglikelihood evals read them.
TEST(CheckOurServer, EchoComparesEveryPromptTokensLogprob) {
  std::string dir = temp_dir("check-serve-echo");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  write_id_prompts(dir + "/ids.jsonl", 8, 30, 4);
  auto r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens", "4", "--users",
                         "8", "--echo", "--json", dir + "/c.json"},
                        300, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 0) << r.out << r.err << srv.log();
  EXPECT_NE(r.out.find("every prompt token's too: echo"), std::string::npos) << r.out;
  expect_no_row_differs(r.out, 8);
  json j = read_json_file(dir + "/c.json");
  EXPECT_EQ(j["sampling"]["echo"], true);
  for (int i : {0, 5}) {
    const json& out = j["runs"]["fresh"][i];
    const size_t prompt_len = 30 + size_t(i % 4) + 1;
    ASSERT_EQ(out["logprobs"].size(), prompt_len + 4) << out.dump();
    EXPECT_TRUE(out["logprobs"][0].is_null()) << "nothing predicts the first prompt token";
    EXPECT_TRUE(out["logprobs"][1].is_number());
    EXPECT_EQ(out["token_ids"].size(), 4u);
  }
  // Not vacuous: the prompts' own logprobs are compared, and differ where the prompts do.
  EXPECT_EQ(j["runs"]["fresh"][0]["logprobs"][20], j["runs"]["fresh"][5]["logprobs"][20]) << "same prefix";
  EXPECT_NE(j["runs"]["fresh"][0]["logprobs"][30], j["runs"]["fresh"][5]["logprobs"][30]);
  // Chat has no echo: refused before anything is sent.
  r = run_verbatim({"check", "--url", srv.url(), "--echo", "--chat"}, 30, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--echo needs /v1/completions"), std::string::npos) << r.err;
}

TEST(CheckOurServer, ApiKeyIsSentAndAWrongOneIsAClearError) {
  std::string dir = temp_dir("check-serve-key");
  ServeProcess srv(fixture("qwen3-tiny-tied"), {"--device", "cpu", "--api-key", "sesame"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  std::ofstream(dir + "/ids.jsonl") << "[1, 2, 3]\n[4, 5, 6, 7]\n";
  auto r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens", "4", "--api-key",
                         "wrong"},
                        60, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  r = run_verbatim({"check", "--url", srv.url(), "--prompts", dir + "/ids.jsonl", "--max-tokens", "4", "--api-key",
                    "sesame"},
                   60, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST(CheckOurServer, BuiltinPromptsAsChatWithTheRealTokenizer) {
  std::string dir = temp_dir("check-serve-chat");
  auto made = run_verbatim({"make-model", "--arch", "tiny", "--out", dir + "/model"}, 120, dir);
  ASSERT_EQ(made.code, 0) << made.err;
  ServeProcess srv(dir + "/model", {"--device", "cpu"}, dir);
  ASSERT_TRUE(srv.ready()) << srv.log();
  auto r = run_verbatim({"check", "--url", srv.url(), "--chat", "--num-prompts", "4", "--max-tokens", "6", "--users",
                         "4", "--json", dir + "/c.json"},
                        300, dir);
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.code, 0) << r.out << r.err << srv.log();
  EXPECT_NE(r.out.find("chat completions, thinking off"), std::string::npos) << r.out;
  expect_no_row_differs(r.out, 4);
  json j = read_json_file(dir + "/c.json");
  EXPECT_EQ(j["runs"]["fresh"][0]["token_ids"].size(), 6u);
  EXPECT_FALSE(j["runs"]["fresh"][0]["text"].get<std::string>().empty());
  EXPECT_NE(j["runs"]["fresh"][0]["token_ids"], j["runs"]["fresh"][1]["token_ids"]);
}

}  // namespace
}  // namespace verbatim::test
