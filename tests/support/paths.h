#pragma once
// Where tests find their fixtures, the tokenizer and the verbatim binary.
#include <string>

namespace verbatim::test {
std::string fixture(const std::string& rel);   // tests/fixtures/<rel>
std::string tokenizer_dir();                   // the real Qwen3 tokenizer (scripts/deps.sh)
std::string binary();                          // build/verbatim
std::string temp_dir(const std::string& tag);  // a fresh, empty folder under the build tree
}  // namespace verbatim::test
