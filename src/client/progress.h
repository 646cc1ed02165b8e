#pragma once
// Progress for long runs: a bar redrawn in place on a terminal, one plain line per finished task
// otherwise (logs, CI), so output stays readable either way. Used from one thread only.
#include <chrono>
#include <cstdio>
#include <string>

namespace verbatim::client {

class Progress {
 public:
  Progress(std::FILE* out, bool tty, bool quiet = false) : out_(out), tty_(tty), quiet_(quiet) {}
  static bool is_tty(std::FILE* f);

  void start(const std::string& label, int total);
  void update(int done);                     // redraws at most ~10 times a second
  void finish(const std::string& summary);   // "label: summary" on its own line
  void note(const std::string& line);        // a message that does not break the bar

 private:
  void draw(int done);
  void clear();

  std::FILE* out_;
  bool tty_;
  bool quiet_;
  std::string label_;
  int total_ = 0;
  int last_drawn_ = -1;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace verbatim::client
