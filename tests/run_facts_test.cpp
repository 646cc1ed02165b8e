// The binary says what it is and what it ran: `--version` names the commit it was built from, and
// the benchmark JSON (issue 4: "GPU name, clocks, commit, every setting") records that commit, the
// environment's speed knobs and every prefill rep. Here through the real binary on the CPU backend,
// where the GPU facts and the measured SM clock are null; on a GPU the device scripts read them
// from the same fields.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/paths.h"

namespace verbatim {
namespace {

using nlohmann::json;

json engine_bench(const std::string& env, const std::string& tag, const std::string& args = "") {
  const std::string d = test::temp_dir(tag);
  const std::string cmd = env + " " + test::binary() + " engine-bench --model " + test::fixture("qwen3-tiny-untied") +
                          " --device cpu --batches 1 --steps 2 --context 8 --prefill 16 " + args + " --json " + d +
                          "/e.json >" + d + "/out 2>&1";
  const int st = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd;
  std::ifstream in(d + "/e.json");
  return json::parse(in, nullptr, false);
}

std::string source_head() {
  const std::string cmd = std::string("git -C ") + VERBATIM_SOURCE_DIR + " rev-parse --short=12 HEAD 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[64];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

TEST(BenchJson, EngineBenchRecordsCommitSettingsAndEveryPrefillRep) {
  const json j = engine_bench("VERBATIM_GEMM_STREAM_STAGES=4", "bench-json");
  ASSERT_TRUE(j.is_object());
  const std::string head = source_head();
  const std::string commit = j.at("commit");
  if (head.empty()) EXPECT_EQ(commit, "unknown");
  else EXPECT_EQ(commit.substr(0, head.size()), head) << "the binary's commit is the source tree's HEAD";
  EXPECT_EQ(j.at("environment").value("VERBATIM_GEMM_STREAM_STAGES", ""), "4");
  const json& p = j.at("prefill");
  ASSERT_EQ(p.at("times_ms").size(), 5u);
  std::vector<double> t = p.at("times_ms").get<std::vector<double>>();
  std::sort(t.begin(), t.end());
  EXPECT_EQ(p.at("ttft_median_ms").get<double>(), t[2]) << "the median is of the reps recorded";
  // No GPU here: its facts and the measured clock are null, not invented.
  EXPECT_TRUE(j.at("gpu").is_null());
  EXPECT_TRUE(p.at("sm_clock_mhz_after").is_null());
  EXPECT_TRUE(j.at("decode").at(0).at("sm_clock_mhz_after").is_null());
  // Not vacuous: the environment field follows the run's environment.
  const json plain = engine_bench("env -u VERBATIM_GEMM_STREAM_STAGES", "bench-json-plain");
  ASSERT_TRUE(plain.is_object());
  EXPECT_FALSE(plain.at("environment").contains("VERBATIM_GEMM_STREAM_STAGES"));
}

// --logprobs N: every decode row asks for its token's logprob and the top N, as an eval does (the
// sampler's logprob work is then in the step time); the JSON records N and what row 0 got back.
// Without it, no logprob work: null, 0 top (not vacuous). Out of range is a one-line error.
TEST(BenchJson, EngineBenchLogprobsAsksTheSamplerForThem) {
  const json with = engine_bench("", "bench-lp", "--logprobs 5");
  const json without = engine_bench("", "bench-lp-none");
  ASSERT_TRUE(with.is_object() && without.is_object());
  EXPECT_EQ(with.at("logprobs"), 5);
  EXPECT_TRUE(without.at("logprobs").is_null());
  for (const json& row : with.at("decode")) {
    EXPECT_EQ(row.at("row0_top_logprobs"), 5) << row;
    ASSERT_TRUE(row.at("row0_logprob").is_number()) << row;
    EXPECT_LE(row.at("row0_logprob").get<double>(), 0.0) << row;
  }
  for (const json& row : without.at("decode")) {
    EXPECT_EQ(row.at("row0_top_logprobs"), 0) << row;
    EXPECT_TRUE(row.at("row0_logprob").is_null()) << row;
  }
  const std::string d = test::temp_dir("bench-lp-bad");
  const std::string cmd = test::binary() + " engine-bench --model " + test::fixture("qwen3-tiny-untied") +
                          " --device cpu --logprobs 21 >" + d + "/out 2>&1";
  const int st = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  std::ifstream in(d + "/out");
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("--logprobs"), std::string::npos) << out;
}

// The bound's bandwidth is the H200's 4.3 TB/s unless --bandwidth-tbs names the card's, and every
// decode row's bound and ratio follow it; a bandwidth that is not a positive number is refused.
TEST(BenchJson, EngineBenchBoundFollowsTheBandwidthGiven) {
  const json h200 = engine_bench("", "bench-bw-default");
  const json h100 = engine_bench("", "bench-bw-3", "--bandwidth-tbs 3.0");
  ASSERT_TRUE(h200.is_object() && h100.is_object());
  EXPECT_EQ(h200.at("bandwidth_bytes_per_s").get<double>(), 4.3e12);
  EXPECT_EQ(h100.at("bandwidth_bytes_per_s").get<double>(), 3.0e12);
  const json& row = h100.at("decode").at(0);
  const double bytes = row.at("bytes_per_step").get<double>(), bound = row.at("bound_ms").get<double>();
  EXPECT_DOUBLE_EQ(bound, bytes / 3.0e12 * 1e3);
  EXPECT_DOUBLE_EQ(row.at("ratio_to_bound").get<double>(), row.at("median_ms").get<double>() / bound);
  EXPECT_DOUBLE_EQ(h200.at("decode").at(0).at("bound_ms").get<double>(), bytes / 4.3e12 * 1e3)
      << "the same bytes, the other bandwidth";
  for (const char* bad : {"0", "-1", "inf", "fast"}) {
    const std::string d = test::temp_dir("bench-bw-bad");
    const std::string cmd = test::binary() + " engine-bench --model " + test::fixture("qwen3-tiny-untied") +
                            " --device cpu --bandwidth-tbs " + bad + " >" + d + "/out 2>&1";
    const int st = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << bad;
    std::ifstream in(d + "/out");
    const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(out.find("--bandwidth-tbs"), std::string::npos) << out;
  }
}

TEST(BuildInfo, VersionNamesTheCommit) {
  const std::string d = test::temp_dir("version");
  const int st = std::system((test::binary() + " --version >" + d + "/out 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  std::ifstream in(d + "/out");
  std::string line;
  std::getline(in, line);
  const std::string head = source_head();
  EXPECT_EQ(line.rfind(VERBATIM_VERSION " (commit ", 0), 0u) << line;
  EXPECT_NE(line.find(head.empty() ? "unknown" : head), std::string::npos) << line;
}

}  // namespace
}  // namespace verbatim
