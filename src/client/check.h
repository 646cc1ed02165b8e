#pragma once
// `verbatim check`: the seed page's reproducibility test against any OpenAI-compatible server.
// Runs the prompt set fresh after a cache reset, again against the warm cache, again after a
// reset, and from N users at once; then sends every prompt that differed alone twice to tell the
// batch (or cache) from plain nondeterminism. Optionally compares a second server or a record.
#include <optional>
#include <string>
#include <vector>

#include "client/compare.h"
#include "client/generation.h"
#include "client/progress.h"
#include "client/server_info.h"

namespace verbatim::client {

struct CheckOptions {
  std::string url;
  std::string compare_url;          // --compare-url: a second server, same prompts
  ClientOptions client;
  SamplingOptions sampling;         // sampling.model empty: the first id of /v1/models
  std::vector<Prompt> prompts;
  std::string prompt_source = "built-in";
  int users = 64;
  std::optional<json> against;      // --against: a record made by --record
  std::string against_name;         // its file name, for the table
};

struct CheckRow {
  std::string name;
  std::string kind;                 // flushed_repeat, warm_cache, users, compare_url, against
  RowDiff diff;
  std::vector<int> alone_tested;    // the differing prompts sent alone twice
  std::vector<int> alone_unstable;  // of those, the ones whose two alone answers differ
  std::string verdict;
  std::string note;                 // e.g. why a row is weaker than it looks
  bool differs() const { return !diff.token_diffs.empty() || !diff.logprob_only.empty() || !diff.text_only.empty(); }
};

struct CheckReport {
  ServerInfo server;
  std::optional<ServerInfo> other;  // --compare-url
  ServerFeatures features;
  int users = 0;
  bool cache_reset = true;
  std::vector<CheckRow> rows;
  std::vector<std::pair<std::string, std::vector<Output>>> runs;  // name -> one output per prompt
  std::vector<std::pair<int, std::pair<Output, Output>>> alone;   // prompt -> its two alone answers
  std::vector<std::string> warnings;
  std::string compare_diff;         // what differs between the two servers' fingerprints
  std::string against_diff;         // what differs from the record's fingerprint
  std::string against_file;        // the record's file when --against was given
  int resent_429 = 0, resent_503 = 0;  // requests sent again after the server refused them for now

  // "the warm run found 5,120 of 6,000 prompt tokens in the cache (fresh: 0)", when the server
  // reports usage.prompt_tokens_details.cached_tokens; shows the cache rows are not vacuous.
  std::string cache_evidence() const;
  bool any_difference() const;
  std::string header(const CheckOptions& o) const;
  std::string table() const;
  std::string summary() const;
  json to_json(const CheckOptions& o) const;
  const std::vector<Output>& run(const std::string& name) const;
};

CheckReport run_check(const CheckOptions& o, Progress& progress);

// --record: the fresh run with everything needed to repeat and compare it later.
json make_record(const CheckOptions& o, const CheckReport& r);
// --against: the prompts and sampling a record was made with; Error naming the file when malformed.
void apply_record(const json& record, const std::string& file, CheckOptions& o);

}  // namespace verbatim::client
