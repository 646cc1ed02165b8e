#pragma once
// A server address as users type it: "http://host:port", "host:port", or with a path prefix
// ("http://host:8000/v1" is accepted and the "/v1" dropped, since routes are added per call).
#include <string>

namespace verbatim::client {

struct Url {
  std::string host;
  int port = 80;
  std::string base;  // path prefix without trailing slash or "/v1": "" or "/proxy"

  std::string text() const;   // http://host:port/base
  std::string label() const;  // host:port/base, for table rows
};

// Throws verbatim::Error for anything but an http URL with a host (https: not built in).
Url parse_url(const std::string& text);

}  // namespace verbatim::client
