#include "client/sse.h"

namespace verbatim::client {

void SseParser::feed(std::string_view bytes) {
  partial_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view l(partial_.data() + start, nl - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    line(l);
  }
  partial_.erase(0, start);
}

void SseParser::finish() {
  if (!partial_.empty()) {
    std::string rest;
    rest.swap(partial_);
    if (!rest.empty() && rest.back() == '\r') rest.pop_back();
    line(rest);
  }
  dispatch();
}

void SseParser::line(std::string_view l) {
  if (l.empty()) {
    dispatch();
    return;
  }
  if (l[0] == ':') return;  // comment / keep-alive
  size_t colon = l.find(':');
  std::string_view field = l.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (field != "data") return;  // event:, id:, retry: carry nothing the API uses
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

void SseParser::dispatch() {
  if (!has_data_) return;
  std::string payload;
  payload.swap(data_);
  has_data_ = false;
  ++events_;
  if (payload == "[DONE]") {
    done_ = true;
    return;
  }
  on_data_(payload);
}

}  // namespace verbatim::client
