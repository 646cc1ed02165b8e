#pragma once
// Server-sent events as OpenAI-compatible servers stream them: "data: {...}" lines, events
// separated by a blank line, "[DONE]" at the end. Bytes arrive in arbitrary pieces.
#include <functional>
#include <string>
#include <string_view>

namespace verbatim::client {

class SseParser {
 public:
  // on_data gets the payload of each event (multi-line data joined with '\n').
  explicit SseParser(std::function<void(const std::string&)> on_data) : on_data_(std::move(on_data)) {}
  void feed(std::string_view bytes);
  // End of stream: an event without its closing blank line is still delivered.
  void finish();
  bool saw_done() const { return done_; }
  size_t events() const { return events_; }

 private:
  void line(std::string_view l);
  void dispatch();

  std::function<void(const std::string&)> on_data_;
  std::string partial_;  // bytes after the last '\n'
  std::string data_;
  bool has_data_ = false;
  bool done_ = false;
  size_t events_ = 0;
};

}  // namespace verbatim::client
