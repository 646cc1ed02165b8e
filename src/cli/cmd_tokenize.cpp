// `verbatim tokenize [--tokenizer DIR]`: one JSON string per stdin line -> one JSON array of token
// ids per stdout line (HF encode with add_special_tokens=False: special tokens written in the text
// are matched). A line that is not a JSON string prints `null` on stdout (so output lines stay
// aligned with input lines) and a one-line error on stderr; the remaining lines are still
// processed and the command exits 1 at the end.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/stdio_checks.h"
#include "core/error.h"
#include "core/paths.h"
#include "tokenizer/tokenizer.h"

namespace verbatim::cli {
namespace {

int run_tokenize(const std::string& dir) {
  const std::unique_ptr<Tokenizer> tok = Tokenizer::load(dir);
  std::string line;
  size_t line_no = 0, bad = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string error;
    std::string out = "null";
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (!j.is_string()) throw Error(std::string("not a JSON string but a JSON ") + j.type_name());
      out = nlohmann::json(tok->encode(j.get_ref<const std::string&>())).dump();
    } catch (const nlohmann::json::exception& e) {
      // nlohmann's message quotes the bytes it read last: escape them, the message stays one printable line.
      std::string what;
      for (unsigned char c : std::string(e.what())) {
        if (c >= 0x20 && c < 0x7f) {
          what += char(c);
        } else {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02X", c);
          what += hex;
        }
      }
      error = "not a JSON string (" + what + ")";
    } catch (const Error& e) {
      error = e.what();
    }
    if (!error.empty()) {
      ++bad;
      std::fprintf(stderr, "verbatim tokenize: line %zu: %s\n", line_no, error.c_str());
    }
    // Flushed per line so a caller can drive this as a coprocess, one line at a time.
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    check_stdout_written("tokenize");
  }
  check_stdin_read("tokenize");
  if (bad) std::fprintf(stderr, "verbatim tokenize: %zu of %zu lines were not JSON strings\n", bad, line_no);
  return bad ? 1 : 0;
}

const Registrar reg(70, [](CLI::App& app) -> std::function<int()> {
  auto dir = std::make_shared<std::string>(default_tokenizer_dir());
  CLI::App* sub = app.add_subcommand(
      "tokenize",
      "Read one JSON string per stdin line, print its token ids as a JSON array per line "
      "(a bad line prints null, an error on stderr, and makes the exit status 1)");
  sub->add_option("--tokenizer", *dir, "folder holding tokenizer.json")->capture_default_str();
  return [dir] { return run_tokenize(*dir); };
});

}  // namespace
}  // namespace verbatim::cli
