#pragma once
// What a server says about itself (model list, /version, system_fingerprint) and how to empty its
// prefix cache, for any OpenAI-compatible server: vLLM, SGLang, llama.cpp, verbatim.
#include <string>
#include <vector>

#include "client/http_client.h"

namespace verbatim::client {

struct ServerInfo {
  Url url;
  std::string model;               // the model id requests name
  json models;                     // /v1/models' entry for that model (null when absent)
  json version;                    // /version's answer (null when the route is missing)
  std::vector<std::string> fingerprints;  // distinct system_fingerprint values seen, in order

  void saw_fingerprint(const std::string& fp);
  // Flat "part -> value" view of everything that identifies the build and setup.
  json describe() const;
};

// GET /v1/models (model: `requested`, else the first id) and GET /version (optional).
// Throws ClientError when the server cannot be reached or /v1/models answers badly.
ServerInfo discover_server(HttpClient& c, const std::string& requested_model);

struct PartDiff {
  std::string part, a, b;  // b == "(absent)" when only one side has the part
};
// The parts of two describe() views that differ; volatile ones (times, ids) are left out.
std::vector<PartDiff> describe_differences(const json& a, const json& b);
// "dtype bfloat16 -> float16, engine 0.1.0 -> 0.2.0", or "" when nothing differs.
std::string format_differences(const std::vector<PartDiff>& d);

// Empties the prefix cache between runs: /reset_prefix_cache (vLLM, verbatim), /flush_cache
// (SGLang), else nothing, with a warning. The working route is found once, then reused.
class CacheResetter {
 public:
  explicit CacheResetter(HttpClient& c) : c_(c) {}
  // True when the cache was reset. False after a warning (no route, or the route failed).
  bool reset();
  bool available() const { return state_ != State::None; }
  // A route was found and no reset on it has failed (so far).
  bool every_reset_worked() const { return state_ == State::Found && !warned_failure_; }
  const std::string& route() const { return route_; }
  // Warnings to show the user (each once); cleared by take_warnings().
  std::vector<std::string> take_warnings();

 private:
  enum class State { Unknown, Found, None };
  HttpClient& c_;
  State state_ = State::Unknown;
  std::string route_;
  std::vector<std::string> warnings_;
  bool warned_failure_ = false;  // a reset on the found route failed (warned once)
};

}  // namespace verbatim::client
