#pragma once
// The access log: one line per answered request, written when its last byte has gone (a stream
// at its [DONE]), so an operator can follow each request (client, status, time, and for a
// generation its id, tokens and finish) and join it with a client's X-Request-Id. Probes (2xx on
// GET /health and /metrics) are left out, so health checks and scrapes do not bury the rest.
//
// The request-scoped state is thread-local: httplib reads, routes and writes one request, its
// streamed body included, on one worker thread, and calls the logger on that thread at the end.
#include <cstdint>
#include <optional>
#include <string>

namespace verbatim::server {

// What a generation route says of its request (set by the route, read by the logger).
struct GenerationNote {
  std::string id;  // cmpl-... / chatcmpl-...
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  std::string finish;  // the choices' finish reasons, distinct ones joined by '+'; "abort" when cut off
  bool stream = false;
  bool client_gone = false;  // the client hung up before the answer was complete
};

struct AccessRecord {
  std::string client;  // address:port
  std::string method, path;
  int status = 0;
  std::optional<double> ms;    // from routing to the last byte written; absent if routing never began
  std::string request_id;      // the client's X-Request-Id, sanitised (empty: none sent)
  std::string error;           // the error message of a 4xx / 5xx answer, shortened
  std::optional<GenerationNote> generation;
};

// The line, without the "verbatim serve: " prefix. Pure, so it is unit-tested without a server.
std::string access_line(const AccessRecord& r);
// True for the probes that are not logged: a 2xx answer to GET / HEAD /health or /metrics.
bool is_probe(const std::string& method, const std::string& path, int status);
// A client-sent X-Request-Id as it may be echoed and logged: printable ASCII, at most 128 chars,
// anything else dropped (empty if nothing is left).
std::string sanitize_request_id(const std::string& raw);

// Thread-local, per request: begin when routing starts, note from the generation route, take in
// the logger (which also clears both for the next request on this thread).
void access_begin();
void access_note(GenerationNote note);
// The error message of an answer whose body the logger cannot read (one sent through a content
// provider, as close_after_answer does).
void access_note_error(std::string message);
struct AccessTaken {
  std::optional<double> ms;
  std::optional<GenerationNote> generation;
  std::string error;
};
AccessTaken access_take();

}  // namespace verbatim::server
