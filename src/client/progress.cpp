#include "client/progress.h"

#include <unistd.h>

namespace verbatim::client {

bool Progress::is_tty(std::FILE* f) { return isatty(fileno(f)) == 1; }

void Progress::start(const std::string& label, int total) {
  label_ = label;
  total_ = total;
  last_drawn_ = -1;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
  if (tty_ && !quiet_) draw(0);
}

void Progress::update(int done) {
  if (!tty_ || quiet_ || done == last_drawn_) return;
  auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  draw(done);
}

void Progress::draw(int done) {
  constexpr int kWidth = 30;
  int filled = total_ > 0 ? done * kWidth / total_ : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "\r\033[K%s [%s] %d/%d  %.1f s", label_.c_str(), bar.c_str(), done, total_, secs);
  std::fflush(out_);
  last_drawn_ = done;
  last_draw_ = std::chrono::steady_clock::now();
  bar_shown_ = true;
}

void Progress::clear() {
  if (bar_shown_) std::fprintf(out_, "\r\033[K");
  bar_shown_ = false;
}

void Progress::finish(const std::string& summary) {
  if (quiet_) return;
  clear();
  std::fprintf(out_, "%s: %s\n", label_.c_str(), summary.c_str());
  std::fflush(out_);
}

void Progress::note(const std::string& line) {
  clear();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
  last_drawn_ = -1;
}

}  // namespace verbatim::client
