// Speculative decoding as a user turns it on: `verbatim serve --speculative ngram ...` answers
// every request with the same tokens, logprobs and system_fingerprint as a server without it
// (real processes, real HTTP on 127.0.0.1), counts drafts in /metrics, and `verbatim generate`
// with the flags prints the same lines as without.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "server_harness.h"
#include "support/paths.h"

namespace verbatim::test {
namespace {

const char* kDraftMetric = "verbatim:spec_decode_num_draft_tokens_total";
const char* kAcceptedMetric = "verbatim:spec_decode_num_accepted_tokens_total";

std::vector<std::string> spec_flags() {
  return {"--speculative", "ngram", "--num-speculative-tokens", "4", "--ngram-min", "1", "--ngram-max", "3"};
}

// Bodies: a token repeated (the fixture's greedy output loops: drafts get accepted), a random-ish
// prompt, greedy and seeded (low temperature, so seeded drafts get accepted too), with logprobs.
std::vector<json> bodies() {
  std::vector<json> out;
  const std::vector<int> loop(24, 7), pair = {9, 300, 9, 300, 9, 300, 9, 300, 9, 300, 9, 300};
  const std::vector<int> mixed = {5, 17, 99, 3, 250, 7, 41, 480, 12, 77, 301, 2};
  for (const auto& prompt : {loop, pair, mixed}) {
    out.push_back({{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", 2}});
    out.push_back({{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0.3}, {"seed", 5}, {"logprobs", 1}});
  }
  return out;
}

TEST(SpecDecodeServer, SameAnswersWithAndWithoutSpeculationAndMetricsCount) {
  const std::vector<std::string> base = {fixture("qwen3-tiny-tied"), "--max-model-len", "128"};
  std::vector<std::string> with = base;
  for (const auto& f : spec_flags()) with.push_back(f);
  ServerProcess off(base), on(with);
  EXPECT_EQ(metric(on.port(), kDraftMetric), 0);
  for (const json& b : bodies()) {
    auto a = post(off.port(), "/v1/completions", b);
    auto s = post(on.port(), "/v1/completions", b);
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(s.j["choices"], a.j["choices"]) << b.dump();
    EXPECT_EQ(s.j["system_fingerprint"], a.j["system_fingerprint"]) << "speculation changes no numerics";
    EXPECT_EQ(s.j["usage"], a.j["usage"]);
    // Streaming through the speculative server: the same tokens, in order.
    json sb = b;
    sb["stream"] = true;
    auto st = post_stream(on.port(), "/v1/completions", sb);
    ASSERT_EQ(st.status, 200);
    EXPECT_TRUE(st.done);
    json ids = json::array();  // no tokenizer in the fixture: chunks carry token_ids
    for (const json& ev : st.events)
      if (ev.contains("choices") && !ev["choices"].empty() && ev["choices"][0].contains("token_ids"))
        for (const json& id : ev["choices"][0]["token_ids"]) ids.push_back(id);
    EXPECT_EQ(ids, a.j["choices"][0]["token_ids"]);
  }
  const double drafted = metric(on.port(), kDraftMetric), accepted = metric(on.port(), kAcceptedMetric);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0.5 * drafted) << accepted << " of " << drafted;
  EXPECT_EQ(metric(off.port(), kDraftMetric), 0);
  EXPECT_EQ(metric(off.port(), kAcceptedMetric), 0);
  // Fewer engine steps than generated tokens (each request decodes alone): accepted drafts saved steps.
  EXPECT_LT(metric(on.port(), "verbatim:engine_steps_total"), 0.8 * metric(on.port(), "verbatim:generation_tokens_total"));
  EXPECT_GE(metric(off.port(), "verbatim:engine_steps_total"), metric(off.port(), "verbatim:generation_tokens_total"));
}

// 'arg' for the shell (built by append: GCC 12's -Wrestrict misfires on "lit" + string).
std::string quoted(const std::string& arg) {
  std::string q(1, '\'');
  q.append(arg).push_back('\'');
  return q;
}

std::vector<std::string> generate_lines(const std::vector<std::string>& args, const std::vector<json>& input) {
  static int n = 0;
  const std::string dir = temp_dir("spec-generate" + std::to_string(n++));
  {
    std::ofstream in(dir + "/in.jsonl");
    for (const json& l : input) in << l.dump() << "\n";
  }
  std::string cmd = quoted(binary());
  cmd.append(" generate");
  for (const auto& a : args) cmd.append(" ").append(quoted(a));
  cmd.append(" < ").append(quoted(dir + "/in.jsonl")).append(" > ").append(quoted(dir + "/out.jsonl"));
  cmd.append(" 2> ").append(quoted(dir + "/err.txt"));
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/err.txt");
  std::vector<std::string> lines;
  std::ifstream out(dir + "/out.jsonl");
  std::string line;
  while (std::getline(out, line)) {
    json j = json::parse(line);
    j.erase("id");  // per-run fields
    j.erase("created");
    lines.push_back(j.dump());
  }
  return lines;
}

TEST(SpecDecodeServer, GenerateWithFlagsPrintsTheSameLines) {
  const std::vector<std::string> base = {"--model", fixture("qwen3-tiny-untied")};
  std::vector<std::string> with = base;
  for (const auto& f : spec_flags()) with.push_back(f);
  const auto off = generate_lines(base, bodies());
  ASSERT_EQ(off.size(), bodies().size());
  EXPECT_EQ(generate_lines(with, bodies()), off);
  // A bad value is refused before anything runs.
  std::string cmd = quoted(binary());
  cmd.append(" generate --speculative eagle < /dev/null > /dev/null 2>&1");
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace verbatim::test
