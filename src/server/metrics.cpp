#include "server/metrics.h"

#include <cstdio>

namespace verbatim::server {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escape_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

void metric(std::string& out, const std::string& name, const char* type, const std::string& help,
            const std::string& labels, double v) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += name + "{" + labels + "} " + num(v) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++buckets_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += buckets_[i];
    std::string le = i < bounds_.size() ? num(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_sum{" + labels + "} " + num(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

// Bucket bounds as vLLM's.
Metrics::Metrics(std::string model_name)
    : labels_("model_name=\"" + escape_label(model_name) + "\""),
      ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
             40.0, 80.0, 160.0, 640.0, 2560.0}),
      itl_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
            80.0}),
      e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
            480.0, 960.0, 1920.0, 7680.0}) {}

void Metrics::observe_ttft(double s) { std::lock_guard l(mu_); ttft_.observe(s); }
void Metrics::observe_inter_token(double s) { std::lock_guard l(mu_); itl_.observe(s); }
void Metrics::observe_e2e(double s) { std::lock_guard l(mu_); e2e_.observe(s); }
void Metrics::request_finished(const std::string& reason) { std::lock_guard l(mu_); ++finished_[reason]; }
void Metrics::http_error(int status) { std::lock_guard l(mu_); ++errors_[status]; }

std::string Metrics::render(const EngineStats& s) const {
  std::lock_guard l(mu_);
  std::string out;
  metric(out, "verbatim:num_requests_running", "gauge", "Requests in the running batch.", labels_, s.running);
  metric(out, "verbatim:num_requests_waiting", "gauge", "Requests waiting to be scheduled.", labels_, s.waiting);
  metric(out, "verbatim:kv_cache_usage_perc", "gauge", "Fraction of KV-cache blocks in use (1 = full).", labels_,
         s.kv_blocks_total ? double(s.kv_blocks_used) / s.kv_blocks_total : 0.0);
  metric(out, "verbatim:num_kv_blocks", "gauge", "KV-cache blocks in total.", labels_, s.kv_blocks_total);
  metric(out, "verbatim:num_preemptions_total", "counter", "Preemptions (a request's KV freed, recomputed later).",
         labels_, double(s.preemptions));
  metric(out, "verbatim:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         labels_, double(s.prefix_queries));
  metric(out, "verbatim:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.", labels_,
         double(s.prefix_hits));
  metric(out, "verbatim:prompt_tokens_total", "counter", "Prompt tokens processed.", labels_, double(s.prompt_tokens));
  metric(out, "verbatim:generation_tokens_total", "counter", "Tokens generated.", labels_,
         double(s.generation_tokens));
  metric(out, "verbatim:engine_steps_total", "counter", "Engine steps run.", labels_, double(s.steps));
  metric(out, "verbatim:spec_decode_num_draft_tokens_total", "counter",
         "Draft tokens verified by speculative decoding.", labels_, double(s.spec_draft_tokens));
  metric(out, "verbatim:spec_decode_num_accepted_tokens_total", "counter",
         "Draft tokens accepted (equal to the token the target chose there).", labels_,
         double(s.spec_accepted_tokens));
  out += "# HELP verbatim:request_success_total Finished requests by finish reason.\n"
         "# TYPE verbatim:request_success_total counter\n";
  for (const char* r : {"stop", "length", "abort"}) {
    auto it = finished_.find(r);
    out += "verbatim:request_success_total{" + labels_ + ",finished_reason=\"" + r + "\"} " +
           std::to_string(it == finished_.end() ? 0 : it->second) + "\n";
  }
  out += "# HELP verbatim:http_errors_total Error answers by HTTP status.\n# TYPE verbatim:http_errors_total counter\n";
  for (const auto& [status, n] : errors_)
    out += "verbatim:http_errors_total{" + labels_ + ",status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  ttft_.render(out, "verbatim:time_to_first_token_seconds", "Time from arrival to the first generated token.", labels_);
  itl_.render(out, "verbatim:inter_token_latency_seconds", "Time between successive token deliveries of a request.",
              labels_);
  e2e_.render(out, "verbatim:e2e_request_latency_seconds", "Time from arrival to the last token.", labels_);
  return out;
}

}  // namespace verbatim::server
