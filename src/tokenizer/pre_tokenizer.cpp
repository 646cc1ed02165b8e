#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utf8proc.h>

#include "core/error.h"
#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

namespace verbatim {
namespace {
constexpr std::string_view kOnigSpaceSet = "\\t-\\r\\x{85}\\p{Z}";

// Class members for \p{L} / \p{N} as HF's Oniguruma (Unicode 16.0) has them: PCRE2's own property
// plus the code points newer than PCRE2's Unicode tables.
std::string property_members(char name) {
  std::string out = std::string("\\p{") + name + "}";
  const auto table = name == 'L' ? unicode::letter_additions() : unicode::number_additions();
  char buf[40];
  for (const auto& r : table) {
    std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(r.first), static_cast<unsigned>(r.last));
    out += buf;
  }
  return out;
}

// Recognizes \p{L}, \pL, \p{N}, \pN, \P{..} at p[i] (p[i] == '\\'); returns the escape length or 0.
size_t property_escape(std::string_view p, size_t i, char* name, bool* negated) {
  if (i + 2 >= p.size() || (p[i + 1] != 'p' && p[i + 1] != 'P')) return 0;
  *negated = p[i + 1] == 'P';
  if (p[i + 2] == 'L' || p[i + 2] == 'N') {
    *name = p[i + 2];
    return 3;
  }
  if (p.substr(i + 2, 3) == "{L}" || p.substr(i + 2, 3) == "{N}") {
    *name = p[i + 3];
    return 5;
  }
  return 0;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match resources: the compiled pattern is shared, these are not thread-safe.
struct ThreadScratch {
  pcre2_match_data* md = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  ThreadScratch() {
    md = pcre2_match_data_create(1, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (ctx && jit_stack) pcre2_jit_stack_assign(ctx, nullptr, jit_stack);
    // The default match limit (10M steps) fails on a ~10 MB whitespace run, where one match attempt
    // backtracks \s*[\r\n]+ across the whole run; every match consumes its run, so the total work
    // stays linear and the limit only has to not stop it.
    if (ctx) {
      pcre2_set_match_limit(ctx, UINT32_MAX);
      pcre2_set_depth_limit(ctx, UINT32_MAX);
    }
  }
  ~ThreadScratch() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(jit_stack);
  }
};
ThreadScratch& scratch() {
  thread_local ThreadScratch s;
  return s;
}
}  // namespace

std::string translate_oniguruma(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  int class_depth = 0;  // inside [...]; Oniguruma allows nested classes
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    char prop;
    bool negated;
    if (c == '\\') {
      if (const size_t len = property_escape(p, i, &prop, &negated)) {
        if (negated && class_depth > 0) throw Error("tokenizer: \\P{..} inside a character class is not supported in the split regex");
        if (class_depth > 0) out += property_members(prop);
        else out += std::string(negated ? "[^" : "[") + property_members(prop) + "]";
        i += len - 1;
        continue;
      }
    }
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        if (class_depth > 0) out.append(kOnigSpaceSet);
        else out.append("[").append(kOnigSpaceSet).append("]");
      } else if (e == 'S') {
        if (class_depth > 0) throw Error("tokenizer: \\S inside a character class is not supported in the split regex");
        out.append("[^").append(kOnigSpaceSet).append("]");
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out.push_back(c);
  }
  return out;
}

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal) : impl_(std::make_unique<Impl>()) {
  const std::string translated = literal ? pattern : translate_oniguruma(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : 0);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options, &err, &offset, nullptr);
  if (!impl_->code)
    throw Error("tokenizer: the split regex does not compile (" + pcre2_message(err) + " at offset " + std::to_string(offset) + ")");
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(impl_->code); }

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces, size_t max_pieces) const {
  ThreadScratch& s = scratch();
  if (!s.md || !s.ctx) throw Error("tokenizer: out of memory for regex matching");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t done = 0, pos = 0;
  const size_t stop_at = pieces.size() + std::min(max_pieces, SIZE_MAX - pieces.size());
  while (pos <= text.size()) {
    if (pieces.size() >= stop_at) return;
    // Text was validated once up front, so PCRE2 need not re-check UTF-8 on every call.
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, s.md, s.ctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long runs: retry in the interpreter (heap-backed)
      rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, s.md, s.ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("tokenizer: split regex failed (" + pcre2_message(rc) + ")");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.md);
    const size_t b = ov[0], e = ov[1];
    if (b > done) pieces.push_back(text.substr(done, b - done));
    if (e > b) {
      pieces.push_back(text.substr(b, e - b));
      done = pos = e;
    } else {  // empty match: step over one character, as Oniguruma's find_iter does
      if (pos >= text.size()) break;
      ++pos;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      done = b;
    }
  }
  if (done < text.size()) pieces.push_back(text.substr(done));
}

namespace {
std::string utf8proc_nfc(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                              &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw Error(std::string("tokenizer: NFC normalization failed (") + utf8proc_errmsg(n) + ")");
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}
}  // namespace

std::string nfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);  // ASCII is already NFC
  // HF's NFC treats marks newer than its Unicode 9.0 tables as plain starters: they pass through
  // untouched and nothing reorders or composes across them, so the text between them is
  // normalized on its own.
  const auto opaque = unicode::nfc_opaque();
  std::string result;
  size_t done = 0, i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) { ++i; continue; }
    utf8proc_int32_t cp = -1;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i), static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    const size_t len = n > 0 ? static_cast<size_t>(n) : 1;
    if (cp >= 0 && unicode::contains(opaque, static_cast<char32_t>(cp))) {
      result += utf8proc_nfc(text.substr(done, i - done));
      result.append(text.substr(i, len));
      done = i + len;
    }
    i += len;
  }
  if (done == 0) return utf8proc_nfc(text);
  result += utf8proc_nfc(text.substr(done));
  return result;
}

}  // namespace verbatim
