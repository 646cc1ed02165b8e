#pragma once
// Prometheus metrics of the server (/metrics): the engine's gauges and counters, finished requests
// by reason, HTTP errors by status, and latency histograms (time to first token, inter-token
// latency, end-to-end), named like vLLM's with the `verbatim:` prefix. Thread-safe.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace verbatim::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // cumulative counts are built when rendering
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);
  void observe_ttft(double seconds);
  void observe_inter_token(double seconds);
  void observe_e2e(double seconds);
  void request_finished(const std::string& reason);
  void http_error(int status);
  std::string render(const EngineStats& s) const;

 private:
  mutable std::mutex mu_;
  std::string labels_;  // model_name="..."
  Histogram ttft_, itl_, e2e_;
  std::map<std::string, uint64_t> finished_;
  std::map<int, uint64_t> errors_;
};

}  // namespace verbatim::server
