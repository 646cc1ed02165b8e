#include "client/url.h"

#include <cctype>

#include "core/error.h"

namespace verbatim::client {

std::string Url::text() const { return "http://" + label(); }

std::string Url::label() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port) + base;
}

Url parse_url(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return Error("bad URL '" + text + "': " + why + " (expected e.g. http://127.0.0.1:8000)");
  };
  std::string rest = text;
  size_t scheme_end = rest.find("://");
  if (scheme_end != std::string::npos) {
    std::string scheme = rest.substr(0, scheme_end);
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme == "https") throw fail("https is not supported by this build; use http:// or a local proxy");
    if (scheme != "http") throw fail("unknown scheme '" + scheme + "'");
    rest = rest.substr(scheme_end + 3);
  }
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) throw fail("user info in URLs is not supported; use --api-key");

  Url url;
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    size_t close = authority.find(']');
    if (close == std::string::npos) throw fail("unclosed '['");
    url.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw fail("expected ':' after ']'");
      port_text = authority.substr(close + 2);
    }
  } else {
    size_t colon = authority.rfind(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (url.host.empty()) throw fail("no host");
  if (scheme_end == std::string::npos && port_text.empty()) throw fail("no scheme and no port");
  if (!port_text.empty()) {
    if (port_text.size() > 5) throw fail("port out of range");
    for (char c : port_text)
      if (!std::isdigit(static_cast<unsigned char>(c))) throw fail("port is not a number");
    url.port = std::stoi(port_text);
    if (url.port < 1 || url.port > 65535) throw fail("port out of range");
  }
  size_t q = path.find_first_of("?#");
  if (q != std::string::npos) path = path.substr(0, q);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) path.resize(path.size() - 3);
  url.base = path;
  return url;
}

}  // namespace verbatim::client
