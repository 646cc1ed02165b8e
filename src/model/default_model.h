#pragma once
// The embedded default model: a tiny random Qwen3 with the real tokenizer, made on first use.
#include <string>

namespace verbatim {

// "<verbatim_home()>/default-tiny-v1" (make-model --arch tiny --seed 0 --dtype bfloat16 plus the
// real Qwen3 tokenizer), created on first use. Creation is atomic (built in a temporary folder,
// then renamed), so concurrent first uses never see half a folder. Throws Error when the
// tokenizer is missing ("run scripts/deps.sh") or the folder cannot be written.
std::string ensure_default_model();

}  // namespace verbatim
