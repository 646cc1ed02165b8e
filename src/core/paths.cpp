#include "core/paths.h"

#include <cstdlib>

namespace verbatim {

std::string default_tokenizer_dir() {
  if (const char* e = std::getenv("VERBATIM_TOKENIZER_DIR"); e && *e) return e;
  return VERBATIM_TOKENIZER_DIR;
}

std::string verbatim_home() {
  if (const char* e = std::getenv("VERBATIM_HOME"); e && *e) return e;
  if (const char* e = std::getenv("XDG_CACHE_HOME"); e && *e) return std::string(e) + "/verbatim";
  if (const char* e = std::getenv("HOME"); e && *e) return std::string(e) + "/.cache/verbatim";
  return "/tmp/verbatim";
}

}  // namespace verbatim
