// --tensor-parallel-size through the real binary, on any machine (CPU CI included): the sizes and
// devices it refuses, each with a one-line message before any weight is loaded. The multi-GPU
// behaviour itself is tests/cuda_tp_test (skipped without 2 GPUs).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "support/paths.h"

namespace verbatim {
namespace {

struct RunResult {
  int rc;
  std::string err;
};

RunResult run(const std::string& args, const std::string& tag) {
  const std::string d = test::temp_dir(tag);
  const std::string cmd = test::binary() + " " + args + " >" + d + "/out 2>" + d + "/err";
  const int st = std::system(cmd.c_str());
  std::ifstream in(d + "/err");
  std::stringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, ss.str()};
}

const std::string kModel = " --model " + test::fixture("qwen3-tiny-untied");

TEST(TensorParallelCli, CpuDeviceIsRefusedForEveryCommand) {
  for (const std::string& cmd : {"engine-bench" + kModel + " --device cpu --prefill 0 --batches 1",
                                 "serve" + kModel + " --device cpu --port 0"}) {
    const RunResult r = run(cmd + " --tensor-parallel-size 2", "tp-cli-cpu");
    EXPECT_NE(r.rc, 0) << cmd;
    EXPECT_NE(r.err.find("--tensor-parallel-size 2: needs --device cuda"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

TEST(TensorParallelCli, SizesOtherThanOneTwoFourEightAreRefused) {
  const RunResult zero = run("engine-bench" + kModel + " --device cpu --tensor-parallel-size 0", "tp-cli-zero");
  EXPECT_NE(zero.rc, 0);
  EXPECT_NE(zero.err.find("expected 1, 2, 4 or 8"), std::string::npos) << zero.err;
  // On cuda: refused by the split plan (CUDA build) or for want of CUDA (CPU-only build), before
  // any GPU is needed.
  const RunResult three = run("engine-bench" + kModel + " --device cuda --tensor-parallel-size 3", "tp-cli-three");
  EXPECT_NE(three.rc, 0);
  EXPECT_TRUE(three.err.find("--tensor-parallel-size 3: expected 1, 2, 4 or 8") != std::string::npos ||
              three.err.find("built without CUDA") != std::string::npos)
      << three.err;
}

TEST(TensorParallelCli, MoreGpusThanVisibleOrUnsplittableHeadsAreNamed) {
  // 4 KV heads cannot be split 8 ways (checked before counting GPUs, so any machine says so).
  const RunResult kv = run("engine-bench" + kModel + " --device cuda --tensor-parallel-size 8", "tp-cli-kv");
  EXPECT_NE(kv.rc, 0);
  EXPECT_TRUE(kv.err.find("num_key_value_heads 4 cannot be split") != std::string::npos ||
              kv.err.find("built without CUDA") != std::string::npos)
      << kv.err;
  EXPECT_TRUE(kv.err.find("config.json") != std::string::npos || kv.err.find("built without CUDA") != std::string::npos)
      << kv.err;
}

}  // namespace
}  // namespace verbatim
