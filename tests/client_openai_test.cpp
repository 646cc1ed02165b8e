// Real clients against a real `verbatim serve`: the official `openai` npm package (chat,
// streaming, seed, logprobs, errors; tests/client_openai_test.cjs) and curl.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "server_harness.h"

namespace verbatim::test {
namespace {

struct Command {
  int exit_code = -1;
  std::string out;
};

Command run(const std::string& cmd) {
  Command c;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return c;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) c.out.append(buf, n);
  int status = pclose(p);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

class RealClients : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({text_model_dir(), "--served-model-name", "verbatim-tiny", "--api-key", "test-key"});
  }
  static void TearDownTestSuite() { delete server_; }
  static std::string base() { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  static ServerProcess* server_;
};
ServerProcess* RealClients::server_ = nullptr;

TEST_F(RealClients, OfficialOpenAiNodePackage) {
  const std::string modules = std::string(VERBATIM_SOURCE_DIR) + "/.deps/node/node_modules";
  if (run("node --version").exit_code != 0) GTEST_SKIP() << "node is not installed (scripts/deps.sh installs it)";
  if (!std::filesystem::exists(modules + "/openai"))
    GTEST_SKIP() << "the openai npm package is not installed in " << modules << " (scripts/deps.sh installs it)";
  std::string script = std::string(VERBATIM_SOURCE_DIR) + "/tests/client_openai_test.cjs";
  Command c = run("NODE_PATH='" + modules + "' node '" + script + "' '" + base() + "/v1' verbatim-tiny test-key");
  EXPECT_EQ(c.exit_code, 0) << c.out << "\nserver log:\n" << server_->log();
  EXPECT_NE(c.out.find("all checks passed"), std::string::npos) << c.out;
}

TEST_F(RealClients, Curl) {
  if (run("curl --version").exit_code != 0) GTEST_SKIP() << "curl is not installed";
  const std::string auth = " -H 'Authorization: Bearer test-key' -H 'Content-Type: application/json' ";
  const std::string body =
      R"({"model":"verbatim-tiny","messages":[{"role":"user","content":"Say hi"}],"max_tokens":8,"temperature":0.7,"seed":5)";
  Command whole = run("curl -sS" + auth + base() + "/v1/chat/completions -d '" + body + "}'");
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  json w = json::parse(whole.out);
  std::string content = w["choices"][0]["message"]["content"];

  Command streamed = run("curl -sS -N" + auth + base() + "/v1/chat/completions -d '" + body + R"(,"stream":true})" + "'");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.out;
  SseResult s = parse_sse(200, streamed.out);
  EXPECT_TRUE(s.done);
  std::string joined;
  for (auto& e : s.events)
    if (e["choices"][0]["delta"].contains("content")) joined += e["choices"][0]["delta"]["content"].get<std::string>();
  EXPECT_EQ(joined, content);

  Command unauth = run("curl -s -o /dev/null -w '%{http_code}' " + base() + "/v1/models");
  EXPECT_EQ(unauth.out, "401");
  Command health = run("curl -s -o /dev/null -w '%{http_code}' " + base() + "/health");
  EXPECT_EQ(health.out, "200");
  Command metrics = run("curl -sS " + base() + "/metrics");
  EXPECT_GE(metric(metrics.out, "verbatim:generation_tokens_total"), 16);
}

}  // namespace
}  // namespace verbatim::test
