#include "support/paths.h"

#include <filesystem>
#include <unistd.h>

#include "core/paths.h"

namespace verbatim::test {
std::string fixture(const std::string& rel) { return std::string(VERBATIM_FIXTURES) + "/" + rel; }
std::string tokenizer_dir() { return verbatim::default_tokenizer_dir(); }
std::string binary() { return VERBATIM_BINARY; }
std::string temp_dir(const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("verbatim-test-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}
}  // namespace verbatim::test
