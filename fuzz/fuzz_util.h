#pragma once
// Shared by the libFuzzer targets: a private scratch folder per process, file writing, and the
// rule every target enforces: bad input may throw verbatim::Error (a clear one-line message),
// anything else escaping (another exception type, a crash, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>

#include "core/error.h"

namespace verbatim::fuzz {

// A fresh folder under $TMPDIR for this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "verbatim-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch_dir(), ec); });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}
inline void write_file(const std::filesystem::path& path, std::string_view s) {
  write_file(path, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// The one failure that is not a finding: a verbatim::Error with a non-empty, one-line message.
inline void check_error_message(const Error& e) {
  const std::string_view m = e.what();
  if (m.empty() || m.find('\n') != std::string_view::npos) {
    std::fprintf(stderr, "finding: Error message is empty or spans lines: [%s]\n", e.what());
    std::abort();
  }
}

// Runs f; Error is expected on hostile input, every other exception is reported and aborts.
template <class F>
void expect_only_errors(const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    check_error_message(e);
    if (std::getenv("VERBATIM_FUZZ_VERBOSE")) std::fprintf(stderr, "%s: Error: %s\n", what, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: %s threw a non-verbatim exception: %s\n", what, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "finding: %s threw a non-exception object\n", what);
    std::abort();
  }
}

[[noreturn]] inline void finding(const std::string& msg) {
  std::fprintf(stderr, "finding: %s\n", msg.c_str());
  std::abort();
}

// A small cursor over fuzzer bytes, for targets that build structured input.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  uint8_t byte() {
    if (!n_) return 0;
    --n_;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(byte()) << (8 * i);
    return v;
  }
  // Bytes up to (not including) the next `sep`, or all that is left.
  std::string_view until(uint8_t sep) {
    size_t i = 0;
    while (i < n_ && p_[i] != sep) ++i;
    std::string_view s(reinterpret_cast<const char*>(p_), i);
    const size_t eat = i < n_ ? i + 1 : i;
    p_ += eat;
    n_ -= eat;
    return s;
  }
  std::string_view take(size_t k) {
    k = k < n_ ? k : n_;
    std::string_view s(reinterpret_cast<const char*>(p_), k);
    p_ += k;
    n_ -= k;
    return s;
  }
  std::string_view rest() { return take(n_); }

 private:
  const uint8_t* p_;
  size_t n_;
};

}  // namespace verbatim::fuzz

namespace verbatim::fuzz {
// Strict UTF-8 check written here, independent of the tokenizer's own helpers (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    const unsigned c = p[i];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) { n = 2; lo = 0xA0; }
    else if (c == 0xED) { n = 2; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) n = 2;
    else if (c == 0xF0) { n = 3; lo = 0x90; }
    else if (c == 0xF4) { n = 3; hi = 0x8F; }
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else return false;
    if (i + n >= s.size()) return false;  // the character is cut short
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t k = 2; k <= n; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return false;
    i += n + 1;
  }
  return true;
}
}  // namespace verbatim::fuzz
