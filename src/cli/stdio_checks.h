#pragma once
// The line-oriented commands (generate, tokenize) read stdin and write stdout: a failed read must
// not pass for the end of the input, nor a failed write (disk full, stdout closed) for success.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.h"

namespace verbatim::cli {

// After the read loop: throws when stdin ended by an error (e.g. it is a folder), not at its end.
inline void check_stdin_read(const char* command) {
  if (std::cin.bad() || std::ferror(stdin))
    throw Error(std::string(command) + ": reading standard input failed" + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// After a line is written and flushed: throws when stdout no longer takes output.
inline void check_stdout_written(const char* command) {
  if (!std::cout || std::ferror(stdout))
    throw Error(std::string(command) + ": writing standard output failed" + (errno ? std::string(": ") + std::strerror(errno) : "") +
                " (disk full, or stdout closed?)");
}

}  // namespace verbatim::cli
