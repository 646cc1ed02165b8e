#pragma once
// One exception type for every user-facing failure: its message is a complete, one-line sentence
// (what failed, naming the file / tensor / field), fit to print as is.
#include <stdexcept>
#include <string>

namespace verbatim {

// The message with its control bytes escaped (\n, \r, \t, else \xNN): names quoted from a file or
// a request (a tensor, a shard path, a field) may hold any bytes, and a message must stay one line.
std::string one_line(const std::string& msg);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(one_line(msg)) {}
};

// A request the caller got wrong (maps to HTTP 400); `param` names the offending field.
class InvalidRequest : public Error {
 public:
  InvalidRequest(const std::string& msg, std::string param = "") : Error(msg), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

}  // namespace verbatim
