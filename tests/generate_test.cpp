// `verbatim generate` as a user runs it: JSON lines in, /v1/completions responses out, in order.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "server_harness.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::test {
namespace {

struct GenerateRun {
  int exit_code = -1;
  std::vector<json> lines;
  std::string err;
};

GenerateRun run_generate(const std::vector<std::string>& args, const std::vector<std::string>& input,
                         const std::string& env = "") {
  static int n = 0;
  std::string dir = temp_dir("generate" + std::to_string(n++));
  {
    std::ofstream in(dir + "/in.jsonl");
    for (const auto& l : input) in << l << "\n";
  }
  std::string cmd = env + " '" + binary() + "' generate";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " < '" + dir + "/in.jsonl' > '" + dir + "/out.jsonl' 2> '" + dir + "/err.txt'";
  int status = std::system(cmd.c_str());
  GenerateRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream out(dir + "/out.jsonl");
  std::string line;
  while (std::getline(out, line)) r.lines.push_back(json::parse(line));
  r.err = slurp(dir + "/err.txt");
  return r;
}

json golden(const std::string& model) {
  std::ifstream f(fixture(model + "/golden_greedy.json"));
  return json::parse(f);
}

// Every golden prompt in one run (so they share batches): each must still give HF's fp32 greedy tokens.
TEST(Generate, MatchesHfGreedyWithAllPromptsBatched) {
  for (const char* model : {"qwen3-tiny-tied", "qwen3-tiny-untied"}) {
    json g = golden(model);
    std::vector<std::string> in;
    for (const auto& c : g)
      in.push_back(json({{"prompt", c["prompt"]}, {"max_tokens", c["greedy_fp32"].size()}, {"temperature", 0}}).dump());
    auto r = run_generate({"--model", fixture(model), "--dtype", "float32"}, in);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.lines.size(), g.size());
    for (size_t i = 0; i < g.size(); ++i) {
      const json& choice = r.lines[i]["choices"][0];
      EXPECT_EQ(choice["token_ids"], g[i]["greedy_fp32"]) << model << " prompt " << i;
      EXPECT_FALSE(choice.contains("text")) << "a folder without tokenizer files has no text fields";
      EXPECT_EQ(choice["finish_reason"], "length");
      EXPECT_EQ(r.lines[i]["object"], "text_completion");
      EXPECT_TRUE(r.lines[i]["system_fingerprint"].get<std::string>().rfind("fp_", 0) == 0);
      EXPECT_EQ(r.lines[i]["usage"]["completion_tokens"], g[i]["greedy_fp32"].size());
      EXPECT_EQ(r.lines[i]["usage"]["prompt_tokens"], g[i]["prompt"].size());
    }
  }
}

TEST(Generate, BadLinesGiveErrorLinesInOrderAndNonZeroExit) {
  std::vector<std::string> in = {
      R"({"prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0})",
      R"(this is not json)",
      R"({"prompt": [1, 2, 99999], "max_tokens": 3})",
      R"({"prompt": "text needs a tokenizer", "max_tokens": 3})",
      R"({"prompt": [1, 2], "max_tokens": "ten"})",
      R"({"prompt": [1, 2], "temperature": -1})",
      R"({"prompt": []})",
      R"({"prompt": [4, 5, 6], "max_tokens": 2, "temperature": 0})",
  };
  auto r = run_generate({"--model", fixture("qwen3-tiny-tied")}, in);
  EXPECT_NE(r.exit_code, 0);
  ASSERT_EQ(r.lines.size(), in.size()) << r.err;
  EXPECT_EQ(r.lines[0]["choices"][0]["token_ids"].size(), 3u);
  const char* params[] = {nullptr, "body", "prompt", "prompt", "max_tokens", "temperature", "prompt", nullptr};
  for (size_t i = 1; i + 1 < in.size(); ++i) {
    ASSERT_TRUE(r.lines[i].contains("error")) << i << ": " << r.lines[i].dump();
    EXPECT_EQ(r.lines[i]["error"]["code"], 400);
    EXPECT_EQ(r.lines[i]["error"]["param"], params[i]) << r.lines[i].dump();
  }
  EXPECT_EQ(r.lines.back()["choices"][0]["token_ids"].size(), 2u);
}

// A device fault (injected after 2 forward calls) fails every line with an error naming it, in
// order, and the exit status is 1: before, each line came out as a short answer with
// finish_reason "abort" and the run exited 0, so an eval read truncated outputs as results.
TEST(Generate, ADeviceFaultIsAnErrorLineAndExitOne) {
  std::vector<std::string> in = {R"({"prompt": [1, 2, 3], "max_tokens": 8, "temperature": 0})",
                                 R"({"prompt": [4, 5, 6], "max_tokens": 8, "temperature": 0})"};
  auto fine = run_generate({"--model", fixture("qwen3-tiny-tied")}, in);  // the control: no fault
  ASSERT_EQ(fine.exit_code, 0) << fine.err;
  ASSERT_EQ(fine.lines.size(), 2u);
  auto r = run_generate({"--model", fixture("qwen3-tiny-tied")}, in, "VERBATIM_FAULT_AFTER_FORWARDS=2");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  ASSERT_EQ(r.lines.size(), 2u) << r.err;
  for (const json& l : r.lines) {
    ASSERT_TRUE(l.contains("error")) << l.dump();
    EXPECT_EQ(l["error"]["code"], 500);
    EXPECT_NE(l["error"]["message"].get<std::string>().find("the engine failed this request: injected device fault"),
              std::string::npos)
        << l.dump();
  }
}

// Seeded sampling: the same tokens and logprobs alone or batched with the rest; another seed differs.
TEST(Generate, SeededSamplingIsBatchInvariantAndSeedSensitive) {
  json g = golden("qwen3-tiny-tied");
  auto body = [&](size_t i, int seed) {
    return json({{"prompt", g[i]["prompt"]}, {"max_tokens", 12}, {"temperature", 1.0}, {"top_p", 0.95},
                 {"seed", seed}, {"logprobs", 2}})
        .dump();
  };
  std::vector<std::string> all, other_seed;
  for (size_t i = 0; i < g.size(); ++i) {
    all.push_back(body(i, 5));
    other_seed.push_back(body(i, 6));
  }
  std::string model = fixture("qwen3-tiny-tied");
  auto batched = run_generate({"--model", model}, all);
  auto chunked = run_generate({"--model", model, "--max-num-batched-tokens", "3"}, all);
  auto reseeded = run_generate({"--model", model}, other_seed);
  ASSERT_EQ(batched.exit_code, 0) << batched.err;
  ASSERT_EQ(chunked.exit_code, 0) << chunked.err;
  int differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    auto alone = run_generate({"--model", model}, {all[i]});
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    const json& a = alone.lines[0]["choices"][0];
    for (const auto* other : {&batched, &chunked}) {
      const json& b = other->lines[i]["choices"][0];
      EXPECT_EQ(a["token_ids"], b["token_ids"]) << "prompt " << i;
      EXPECT_EQ(a["logprobs"], b["logprobs"]) << "prompt " << i;  // bit-equal floats print equal
    }
    differ += reseeded.lines[i]["choices"][0]["token_ids"] != a["token_ids"];
  }
  EXPECT_GE(differ, int(g.size()) - 1) << "a different seed must change sampled outputs";
}

TEST(Generate, TextPromptsStopStringsEchoAndTokenIds) {
  std::string model = text_model_dir();
  auto tok = Tokenizer::load(model);
  auto base = run_generate({"--model", model},
                           {R"({"prompt": "The capital of France is", "max_tokens": 24, "temperature": 0, "return_token_ids": true})"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const json& c = base.lines[0]["choices"][0];
  std::vector<int32_t> ids = c["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), 24u);
  std::string text = c["text"];
  EXPECT_EQ(text, tok->decode(ids, true));
  EXPECT_EQ(c["prompt_token_ids"].get<std::vector<int32_t>>(), tok->encode("The capital of France is"));

  // A stop string taken from the middle of the greedy text: the answer ends right before it.
  std::string prefix = tok->decode(std::vector<int32_t>(ids.begin(), ids.begin() + 10), true);
  std::string rest = text.substr(prefix.size());
  ASSERT_GE(rest.size(), 3u);
  size_t len = 3;  // whole UTF-8 characters only
  while (len < rest.size() && (static_cast<unsigned char>(rest[len]) & 0xC0) == 0x80) ++len;
  std::string stop = rest.substr(0, len);
  size_t at = text.find(stop);
  json req = {{"prompt", "The capital of France is"}, {"max_tokens", 24}, {"temperature", 0},
              {"stop", {stop}}, {"return_token_ids", true}};
  json echo = {{"prompt", "The capital of France is"}, {"max_tokens", 1}, {"temperature", 0}, {"echo", true},
               {"logprobs", 1}};
  auto r = run_generate({"--model", model}, {req.dump(), echo.dump()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json& s = r.lines[0]["choices"][0];
  EXPECT_EQ(s["text"], text.substr(0, at));
  EXPECT_EQ(s["finish_reason"], "stop");
  EXPECT_EQ(s["stop_reason"], stop);
  EXPECT_LT(s["token_ids"].size(), 24u);
  // lm-evaluation-harness's loglikelihood shape: prompt tokens with a null first logprob, then one more.
  const json& e = r.lines[1]["choices"][0];
  size_t n_prompt = tok->encode("The capital of France is").size();
  EXPECT_EQ(e["text"].get<std::string>().rfind("The capital of France is", 0), 0u);
  ASSERT_EQ(e["logprobs"]["tokens"].size(), n_prompt + 1);
  EXPECT_TRUE(e["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_TRUE(e["logprobs"]["top_logprobs"][0].is_null());
  for (size_t i = 1; i <= n_prompt; ++i) EXPECT_TRUE(e["logprobs"]["token_logprobs"][i].is_number()) << i;
}

TEST(Generate, NoModelUsesTheEmbeddedDefault) {
  std::string home = temp_dir("generate-home");
  auto r = run_generate({}, {R"({"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0})"},
                        "VERBATIM_HOME='" + home + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_TRUE(r.lines[0]["choices"][0]["text"].is_string());
  EXPECT_EQ(r.lines[0]["choices"][0]["token_ids"].size(), 5u) << "generate always shows token_ids";
  EXPECT_FALSE(r.lines[0]["choices"][0].contains("prompt_token_ids")) << "only with return_token_ids";
  EXPECT_EQ(r.lines[0]["usage"]["completion_tokens"], 5);
}

// A failed write (a full disk: /dev/full) or a failed read (stdin is a folder) is an error with a
// non-zero exit, for generate and tokenize alike, not a silent success with the output lost.
TEST(Generate, FailedOutputOrInputIsAnErrorNotSuccess) {
  const std::string dir = temp_dir("generate-io");
  {
    std::ofstream(dir + "/gen.jsonl") << R"({"prompt": [1, 2, 3], "max_tokens": 2, "temperature": 0})" << "\n";
    std::ofstream(dir + "/tok.jsonl") << "\"hello\"\n";
  }
  // cmd(command, stdin, stdout): the shell line, built with a stream (GCC 12's -Wrestrict misfires
  // on chains of std::string + here).
  auto cmd = [&](const char* command, const std::string& in, const std::string& out) {
    std::ostringstream c;
    c << "'" << binary() << "' " << command;
    if (std::string(command) == "generate") c << " --model '" << fixture("qwen3-tiny-tied") << "'";
    c << " < '" << in << "' > '" << out << "' 2> '" << dir << "/err.txt'";
    const int status = std::system(c.str().c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir + "/err.txt"));
  };
  for (const char* command : {"generate", "tokenize"}) {
    const std::string input = dir + (std::string(command) == "generate" ? "/gen.jsonl" : "/tok.jsonl");
    auto [code, err] = cmd(command, input, "/dev/full");
    EXPECT_EQ(code, 1) << command << "\n" << err;
    EXPECT_NE(err.find("writing standard output failed"), std::string::npos) << command << "\n" << err;
    std::tie(code, err) = cmd(command, dir, "/dev/null");
    EXPECT_EQ(code, 1) << command << "\n" << err;
    EXPECT_NE(err.find("reading standard input failed"), std::string::npos) << command << "\n" << err;
    // The same command with a good stdin and stdout succeeds: the failures above are the I/O's.
    std::tie(code, err) = cmd(command, input, "/dev/null");
    EXPECT_EQ(code, 0) << command << "\n" << err;
  }
}

}  // namespace
}  // namespace verbatim::test
