#include "client/server_info.h"

#include <algorithm>
#include <map>

namespace verbatim::client {

void ServerInfo::saw_fingerprint(const std::string& fp) {
  if (fp.empty()) return;
  if (std::find(fingerprints.begin(), fingerprints.end(), fp) == fingerprints.end()) fingerprints.push_back(fp);
}

namespace {

void flatten(const json& j, const std::string& prefix, json& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (!prefix.empty()) {
    out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
  }
}

// Parts that change between two starts of the very same build and setup.
bool is_volatile(const std::string& part) {
  static const char* words[] = {"time", "created", "started", "uptime", "pid", "permission", "port", "host"};
  for (const char* w : words)
    if (part.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

json ServerInfo::describe() const {
  json out = json::object();
  out["system_fingerprint"] = fingerprints.empty() ? std::string("(none)") : fingerprints.front();
  if (fingerprints.size() > 1) {
    std::string all;
    for (const auto& f : fingerprints) all += (all.empty() ? "" : ",") + f;
    out["system_fingerprint"] = all;
  }
  out["model"] = model;
  if (models.is_object()) {
    json m = models;
    m.erase("id");
    m.erase("object");
    flatten(m, "model", out);
  }
  if (!version.is_null()) {
    if (version.is_object()) flatten(version, "version", out);
    else out["version"] = version.is_string() ? version.get<std::string>() : version.dump();
  }
  return out;
}

ServerInfo discover_server(HttpClient& c, const std::string& requested_model) {
  ServerInfo info;
  info.url = c.url();
  json models = c.get_json("/v1/models");
  const json* list = models.is_object() && models.contains("data") && models["data"].is_array() ? &models["data"]
                                                                                               : nullptr;
  if (list)
    for (const auto& m : *list)
      if (m.is_object() && m.contains("id") && m["id"].is_string() &&
          (requested_model.empty() || m["id"].get<std::string>() == requested_model)) {
        info.model = m["id"];
        info.models = m;
        break;
      }
  if (info.model.empty()) {
    if (!requested_model.empty()) {
      info.model = requested_model;  // the server may still accept it (aliases); it will say if not
    } else {
      throw ClientError(FailureKind::BadAnswer, 0,
                        "GET /v1/models on " + c.url().text() + " lists no model; pass --model NAME");
    }
  }
  HttpResponse v = c.get("/version");
  if (v.status >= 200 && v.status < 300) {
    try {
      info.version = json::parse(v.body);
    } catch (const std::exception&) {
      info.version = v.body;
    }
  }
  return info;
}

std::vector<PartDiff> describe_differences(const json& a, const json& b) {
  std::vector<PartDiff> out;
  std::map<std::string, std::pair<std::string, std::string>> parts;
  for (auto it = a.begin(); it != a.end(); ++it) parts[it.key()].first = it.value().get<std::string>();
  for (auto it = b.begin(); it != b.end(); ++it) parts[it.key()].second = it.value().get<std::string>();
  for (const auto& [part, v] : parts) {
    if (is_volatile(part) || v.first == v.second) continue;
    PartDiff d{part, a.contains(part) ? v.first : "(absent)", b.contains(part) ? v.second : "(absent)"};
    // The same change reported twice (system_fingerprint in the answers and in /version): once.
    if (std::any_of(out.begin(), out.end(), [&](const PartDiff& o) { return o.a == d.a && o.b == d.b; })) continue;
    out.push_back(d);
  }
  // system_fingerprint first: it is the summary the others explain.
  std::stable_sort(out.begin(), out.end(), [](const PartDiff& x, const PartDiff& y) {
    return (x.part == "system_fingerprint") > (y.part == "system_fingerprint");
  });
  return out;
}

std::string format_differences(const std::vector<PartDiff>& d) {
  if (d.empty()) return "";
  std::string s;
  for (const auto& p : d) s += (s.empty() ? "" : ", ") + p.part + " " + p.a + " -> " + p.b;
  return s;
}

bool CacheResetter::reset() {
  if (state_ == State::None) return false;
  std::vector<std::string> routes =
      state_ == State::Found ? std::vector<std::string>{route_}
                             : std::vector<std::string>{"/reset_prefix_cache", "/flush_cache"};
  std::string last_error;
  for (const auto& r : routes) {
    HttpResponse res = c_.post(r, json::object());
    if (res.status >= 200 && res.status < 300) {
      state_ = State::Found;
      route_ = r;
      return true;
    }
    if (state_ == State::Unknown && (res.status == 404 || res.status == 405)) {  // no such route: try the next
      last_error = "HTTP " + std::to_string(res.status);
      continue;
    }
    // The route exists but refused this time (e.g. requests still running, or a key needed).
    state_ = State::Found;
    route_ = r;
    if (!warned_failure_)
      warnings_.push_back(std::string("resetting the prefix cache failed: ") +
                          http_status_error(c_.url(), "POST", r, res).what() + "; the runs go on without a reset");
    warned_failure_ = true;
    return false;
  }
  state_ = State::None;
  warnings_.push_back(c_.url().text() +
                      " has neither POST /reset_prefix_cache (vLLM: start it with VLLM_SERVER_DEV_MODE=1) nor "
                      "POST /flush_cache (SGLang), last answer " + last_error +
                      ": the prefix cache is not reset, so every run after the first may hit a warm cache");
  return false;
}

std::vector<std::string> CacheResetter::take_warnings() {
  std::vector<std::string> w;
  w.swap(warnings_);
  return w;
}

}  // namespace verbatim::client
