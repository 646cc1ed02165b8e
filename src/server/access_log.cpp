#include "server/access_log.h"

#include <chrono>
#include <cstdio>

namespace verbatim::server {
namespace {

using Clock = std::chrono::steady_clock;

thread_local std::optional<Clock::time_point> t_begin;
thread_local std::optional<GenerationNote> t_note;
thread_local std::string t_error;

// Quoted for the log: printable ASCII kept, '"' and '\' escaped, other bytes as \xHH; at most
// `max` bytes of input, then "...".
std::string quoted(const std::string& s, size_t max) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  if (s.size() > max) out += "...";
  return out + "\"";
}

}  // namespace

std::string access_line(const AccessRecord& r) {
  std::string line = r.client + " " + quoted(r.method + " " + r.path, 200) + " " + std::to_string(r.status);
  if (r.ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.1f ms", *r.ms);
    line += buf;
  } else {
    line += " - ms";
  }
  if (const auto& g = r.generation) {
    line += " " + g->id + (g->stream ? " stream" : "") + " prompt " + std::to_string(g->prompt_tokens);
    if (g->cached_tokens > 0) line += " (cached " + std::to_string(g->cached_tokens) + ")";
    line += " completion " + std::to_string(g->completion_tokens) + " finish " + (g->finish.empty() ? "-" : g->finish);
    if (g->client_gone) line += " client gone";
  }
  if (!r.request_id.empty()) line += " x-request-id " + r.request_id;
  if (!r.error.empty()) line += " error " + quoted(r.error, 200);
  return line;
}

bool is_probe(const std::string& method, const std::string& path, int status) {
  return (method == "GET" || method == "HEAD") && (path == "/health" || path == "/metrics") && status >= 200 &&
         status < 300;
}

std::string sanitize_request_id(const std::string& raw) {
  std::string out;
  for (char c : raw)
    if (c > 0x20 && c < 0x7f && out.size() < 128) out += c;
  return out;
}

void access_begin() {
  t_begin = Clock::now();
  t_note.reset();
}

void access_note(GenerationNote note) { t_note = std::move(note); }
void access_note_error(std::string message) { t_error = std::move(message); }

AccessTaken access_take() {
  AccessTaken t;
  if (t_begin) t.ms = std::chrono::duration<double, std::milli>(Clock::now() - *t_begin).count();
  t.generation = std::move(t_note);
  t.error = std::move(t_error);
  t_begin.reset();
  t_note.reset();
  t_error.clear();
  return t;
}

}  // namespace verbatim::server
