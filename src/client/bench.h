#pragma once
// `verbatim bench`: latency and throughput of any OpenAI-compatible server at several numbers of
// concurrent users, optionally against a second server in the seed page's A, B, A order, with a
// cache reset before every run. Times come from streamed answers (first token excluded from TPOT).
#include <map>
#include <string>
#include <vector>

#include "client/generation.h"
#include "client/progress.h"
#include "client/server_info.h"

namespace verbatim::client {

struct BenchOptions {
  std::string url;
  std::string vs_url;               // --vs: server B
  ClientOptions client;
  SamplingOptions sampling;
  std::vector<int> users = {1, 8, 32, 64};
  std::vector<Prompt> prompts;      // built-in or --prompts (ignored with input_len)
  std::string prompt_source = "built-in";
  int input_len = 0;                // > 0: synthetic token-id prompts of this length
  int num_prompts = 0;              // per run; 0: max(16, 4 x users)
  int seeds = 2;                    // runs per (server, users), each with its own prompt order
};

// The figures of one run, or of several runs of one server pooled.
struct BenchFigures {
  int runs = 0;
  int requests = 0;                 // answered in full: every figure is over these
  int failed = 0;                   // refused with an HTTP error, or ended by an error event
  int64_t output_tokens = 0;
  int64_t input_tokens = 0;
  double duration_s = 0;
  double median_tpot_ms = 0, p99_tpot_ms = 0;
  double median_itl_ms = 0, p99_itl_ms = 0;
  double median_ttft_ms = 0, p99_ttft_ms = 0;
  double output_tok_s = 0;          // mean over runs of (output tokens / run time)
  double req_s = 0;
};

struct BenchRun {
  int server = 0;                   // 0: A, 1: B
  int round = 1;                    // A's second turn in A, B, A is round 2
  int users = 1;
  int seed = 1;
  int requests = 0;
  // Requests the server failed (an HTTP error status, or 0 for a stream's error event), counted
  // by status, and the first message of each: the run goes on (a saturated server's refusals are
  // a result), while a lost connection or a malformed answer still ends the bench.
  std::map<int, int> failed;
  std::map<int, std::string> failed_message;
  double duration_s = 0;
  int64_t output_tokens = 0, input_tokens = 0;
  std::vector<double> ttft_s, itl_s, e2e_s;
  std::vector<double> tpot_s;       // per request, in order; NaN where it has none (fewer than two tokens, or one event)
  std::vector<int64_t> request_output_tokens;
  bool cache_reset = false;
  int failed_requests() const;      // the sum over `failed`
  BenchFigures figures() const;
};

struct BenchReport {
  std::vector<ServerInfo> servers;  // A, then B with --vs
  std::vector<int> users;
  std::vector<BenchRun> runs;
  std::vector<std::string> warnings;
  int num_prompts_note = 0;

  BenchFigures pooled(int server, int users, int round = 0) const;  // round 0: every round
  std::string header(const BenchOptions& o) const;
  std::string table() const;        // the seed page's shape with --vs, else one server's figures
  json to_json(const BenchOptions& o) const;
  std::string svg() const;          // TPOT and output tok/s against users, one line per server
};

BenchReport run_bench(const BenchOptions& o, Progress& progress);

// The n prompts of one run (its seed orders them), a prompt's repeats made distinct at their end
// (" (2)", " (3)", ...) so none finds its own earlier copy in the prefix cache; token-id prompts
// repeat as they are. With --input-len, fresh synthetic prompts.
std::vector<Prompt> prompts_for_run(const BenchOptions& o, int n, int seed);

}  // namespace verbatim::client
