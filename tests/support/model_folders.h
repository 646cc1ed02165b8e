#pragma once
// Model folders for tests that run over several models: a checked-in fixture, or one that
// `make-model` writes once per process.
#include <string>

namespace verbatim::test {
// "make:<arch>": a make-model folder of that arch (seed 7, bf16, no tokenizer files), made on first
// use and reused; anything else: tests/fixtures/<model>.
std::string model_folder(const std::string& model);
}  // namespace verbatim::test
