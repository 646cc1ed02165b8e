// --mode contract|fast and --gpu-memory-utilization on `serve` and `generate`: the values reach the
// backend factory, and the ones that cannot work are refused with a one-line message before any
// weight is loaded: --mode fast on the CPU (it has only the contract kernels: running them would
// report the contract's cost as zero), an unknown mode, and a share outside (0, 1] (NaN included).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/backend_factory.h"
#include "support/client_process.h"
#include "support/paths.h"

namespace verbatim::test {
namespace {

std::string error_of(const server::DeviceSpec& d, const server::BackendOptions& o) {
  try {
    server::validate_backend_options(d, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BackendOptions, FactoryRefusesFastOnCpuUnknownModesAndSharesOutsideZeroToOne) {
  const server::DeviceSpec cpu = server::parse_device("cpu");
  server::BackendOptions o;
  EXPECT_EQ(error_of(cpu, o), "");  // the defaults: contract, 0.9
  o.gpu_memory_utilization = 1.0;
  EXPECT_EQ(error_of(cpu, o), "");
  o.gpu_memory_utilization = 0.05;
  EXPECT_EQ(error_of(cpu, o), "");

  o.tp_reduce = "bogus";  // refused on every device, not only where TP > 1 would read it
  EXPECT_NE(error_of(cpu, o).find("--tp-reduce bogus: expected allgather or allreduce"), std::string::npos);
  o.tp_reduce = "allreduce";
  EXPECT_EQ(error_of(cpu, o), "");
  o.tp_reduce = "allgather";
#ifdef VERBATIM_HAVE_CUDA
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:1234"})  // "cuda:" was taken as cuda
    EXPECT_THROW(server::parse_device(bad), Error) << bad;
#endif

  o.kernels = "fast";
  EXPECT_NE(error_of(cpu, o).find("--mode fast: only --device cuda"), std::string::npos) << error_of(cpu, o);
  o.kernels = "turbo";
  EXPECT_NE(error_of(cpu, o).find("--mode turbo: expected contract or fast"), std::string::npos);
  o.kernels = "contract";
  for (double bad : {0.0, -0.5, 1.01, 90.0, double(NAN)}) {
    o.gpu_memory_utilization = bad;
    const std::string err = error_of(cpu, o);
    EXPECT_NE(err.find("--gpu-memory-utilization"), std::string::npos) << bad;
    EXPECT_NE(err.find("(0, 1]"), std::string::npos) << bad << ": " << err;
  }
  // make_backend checks before it loads anything: a missing folder is not what it reports.
  o.gpu_memory_utilization = 2;
  try {
    server::make_backend("cpu", "/nonexistent-model-folder", DType::BF16, o);
    ADD_FAILURE() << "make_backend accepted --gpu-memory-utilization 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu-memory-utilization 2:"), std::string::npos) << e.what();
  }
#ifdef VERBATIM_HAVE_CUDA
  // On cuda both modes and any share in (0, 1] pass the check (the device itself is not needed).
  const server::DeviceSpec gpu = server::parse_device("cuda:1");
  EXPECT_EQ(gpu.index, 1);
  o.gpu_memory_utilization = 0.3;
  o.kernels = "fast";
  EXPECT_EQ(error_of(gpu, o), "");
  o.gpu_memory_utilization = 1.5;
  EXPECT_NE(error_of(gpu, o).find("--gpu-memory-utilization 1.5"), std::string::npos);
#endif
}

class BackendFlags : public ::testing::TestWithParam<std::string> {
 protected:
  // `verbatim <cmd> --model tiny ... extra`: generate reads /dev/null as stdin (no lines), serve
  // would listen; both must fail at startup for the bad cases, before answering anything.
  CommandResult run(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {GetParam(), "--model", fixture("qwen3-tiny-tied"), "--device", "cpu"};
    if (GetParam() == "serve") args.insert(args.end(), {"--host", "127.0.0.1", "--port", "0"});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_verbatim(args, 60, temp_dir("backend-flags"));
  }
};

TEST_P(BackendFlags, BadValuesExitOneWithAClearMessage) {
  struct Bad {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {{"--mode", "fast"}, "verbatim: --mode fast: only --device cuda has fast kernels"},
      {{"--mode", "turbo"}, "verbatim: --mode turbo: expected contract or fast"},
      {{"--gpu-memory-utilization", "1.5"}, "verbatim: --gpu-memory-utilization 1.5: expected a share"},
      {{"--gpu-memory-utilization", "0"}, "verbatim: --gpu-memory-utilization 0: expected a share"},
      {{"--gpu-memory-utilization", "-0.2"}, "--gpu-memory-utilization -0.2: expected a share"},
  };
  for (const Bad& b : cases) {
    const CommandResult r = run(b.flags);
    EXPECT_FALSE(r.timed_out) << b.flags[0] << " " << b.flags[1];
    EXPECT_EQ(r.code, 1) << b.flags[0] << " " << b.flags[1] << "\n" << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << r.err;
  }
  // Not a number: CLI11 refuses it (exit code of a parse error).
  const CommandResult r = run({"--gpu-memory-utilization", "lots"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--gpu-memory-utilization"), std::string::npos) << r.err;
}

TEST(BackendFlagsGenerate, ContractModeAndAnyShareRunOnTheCpuWithTheSameOutput) {
  const std::string dir = temp_dir("backend-flags-ok");
  const std::string in = dir + "/in.jsonl";
  {
    FILE* f = std::fopen(in.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs("{\"prompt\": [1, 2, 3, 4], \"max_tokens\": 5, \"temperature\": 0}\n", f);
    std::fclose(f);
  }
  auto gen = [&](const std::vector<std::string>& extra) {
    std::string cmd = "'" + binary() + "' generate --model '" + fixture("qwen3-tiny-tied") + "' --device cpu";
    for (const auto& a : extra) cmd += " '" + a + "'";
    cmd += " < '" + in + "' 2>/dev/null";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return out;
  };
  const std::string plain = gen({});
  ASSERT_NE(plain.find("\"token_ids\""), std::string::npos) << plain;
  // The output (and its fingerprint) do not depend on flags the CPU backend does not use; the
  // "created" time may tick, so compare from the fingerprint on.
  auto tail = [](const std::string& s) { return s.substr(s.find("system_fingerprint")); };
  EXPECT_EQ(tail(gen({"--mode", "contract", "--gpu-memory-utilization", "0.25"})), tail(plain));
}

// --max-model-len above the model's max_position_embeddings (4096 here) is refused from the
// folder's config.json before the port is bound, as vLLM refuses it before loading weights: not
// after a load that takes minutes on a real checkpoint, with the port open meanwhile.
TEST(ServeFlags, MaxModelLenAboveTheModelsIsRefusedBeforeListening) {
  const CommandResult r = run_verbatim({"serve", "--model", fixture("qwen3-tiny-tied"), "--host", "127.0.0.1", "--port",
                                        "0", "--max-model-len", "1000000"},
                                       60, temp_dir("serve-max-model-len"));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("max_model_len 1000000 exceeds the model's max_position_embeddings 4096"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
}

// --served-model-name takes every word after it, as vLLM's does: a model folder written after it
// would become a name and the embedded default would be served under it. Refused, naming the fix;
// the folder before the option serves it under both names.
TEST(ServeFlags, ModelFolderAfterServedModelNameIsRefused) {
  const CommandResult r = run_verbatim({"serve", "--host", "127.0.0.1", "--port", "0", "--served-model-name", "a",
                                        fixture("qwen3-tiny-tied")},
                                       60, temp_dir("serve-names-folder"));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is a model folder given as a --served-model-name"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Commands, BackendFlags, ::testing::Values("generate", "serve"));

}  // namespace
}  // namespace verbatim::test
