#include "core/error.h"

namespace verbatim {

std::string one_line(const std::string& msg) {
  std::string out;
  out.reserve(msg.size());
  for (const char ch : msg) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;  // printable ASCII and every byte of a UTF-8 sequence
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace verbatim
