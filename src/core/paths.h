#pragma once
// Well-known locations: the installed Qwen3 tokenizer and the embedded default model.
#include <string>

namespace verbatim {

// $VERBATIM_TOKENIZER_DIR, else the folder scripts/deps.sh filled at build time.
std::string default_tokenizer_dir();
// $VERBATIM_HOME, else $XDG_CACHE_HOME/verbatim, else ~/.cache/verbatim.
std::string verbatim_home();

}  // namespace verbatim
