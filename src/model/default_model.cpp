#include "model/default_model.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "core/paths.h"
#include "model/make_model.h"

namespace verbatim {

namespace fs = std::filesystem;

std::string ensure_default_model() {
  const fs::path home(verbatim_home());
  const fs::path final_dir = home / "default-tiny-v1";
  std::error_code ec;
  // The folder only ever appears by rename of a finished one, so existing means complete.
  if (fs::is_regular_file(final_dir / "config.json", ec)) return final_dir.string();
  const fs::path tok(default_tokenizer_dir());
  if (!fs::is_regular_file(tok / "tokenizer.json", ec))
    throw Error("the default model needs the Qwen3 tokenizer, which is missing at " + tok.string() +
                " (run scripts/deps.sh, or set VERBATIM_TOKENIZER_DIR)");
  fs::create_directories(home, ec);
  if (!fs::is_directory(home, ec)) throw Error(home.string() + ": cannot create the verbatim home folder");
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const fs::path tmp = home / (".default-tiny-v1.tmp-" + std::to_string(getpid()) + "-" + std::to_string(stamp));
  try {
    MakeModelOptions o;
    o.arch = "tiny";
    o.seed = 0;
    o.dtype = DType::BF16;
    o.out_dir = tmp.string();
    o.tokenizer_dir = tok.string();
    make_model(o);
    fs::rename(tmp, final_dir, ec);
    // Another process may have renamed its copy first: theirs is identical, keep it.
    if (ec && !fs::is_regular_file(final_dir / "config.json"))
      throw Error(final_dir.string() + ": cannot create the default model (" + ec.message() + ")");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(tmp, ec);
  return final_dir.string();
}

}  // namespace verbatim
