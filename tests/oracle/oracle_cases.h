#pragma once
// Reads reference cases that tests/oracle/cases.mjs prints (the npm @huggingface/tokenizers and
// @huggingface/jinja oracles), so a C++ test can compare our tokenizer and chat template to them.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/paths.h"

namespace verbatim::test {

// The seed of a run: fixed in CI so a failure reruns the same; VERBATIM_ORACLE_SEED explores more.
inline int oracle_seed(int fallback) {
  const char* s = std::getenv("VERBATIM_ORACLE_SEED");
  return s && *s ? std::atoi(s) : fallback;
}

inline int oracle_count(int fallback) {
  const char* s = std::getenv("VERBATIM_ORACLE_COUNT");
  return s && *s ? std::atoi(s) : fallback;
}

// Runs `node tests/oracle/cases.mjs` and parses its JSON lines. Throws with the command line on
// any failure (node or the npm packages missing: run scripts/deps.sh).
inline std::vector<nlohmann::json> oracle_cases(const std::string& kind, int seed, int count) {
  std::string src = VERBATIM_SOURCE_DIR;
  std::string cmd = "VERBATIM_TOKENIZER_DIR='" + tokenizer_dir() + "' node '" + src + "/tests/oracle/cases.mjs' --kind " +
                    kind + " --seed " + std::to_string(seed) + " --count " + std::to_string(count);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + cmd);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) throw std::runtime_error("the oracle failed (exit " + std::to_string(rc) + "; run scripts/deps.sh?): " + cmd);
  std::vector<nlohmann::json> cases;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) cases.push_back(nlohmann::json::parse(line));
  if (static_cast<int>(cases.size()) != count)
    throw std::runtime_error("the oracle printed " + std::to_string(cases.size()) + " cases, not " + std::to_string(count));
  return cases;
}

// Regression cases kept in the repo (tests/oracle/regressions_*.jsonl), one JSON object a line.
inline std::vector<nlohmann::json> regression_cases(const std::string& file) {
  std::vector<nlohmann::json> cases;
  FILE* f = std::fopen((std::string(VERBATIM_SOURCE_DIR) + "/tests/oracle/" + file).c_str(), "r");
  if (!f) return cases;
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') cases.push_back(nlohmann::json::parse(line));
  return cases;
}

// JSON-escaped, so a mismatch report shows invisible characters and U+FFFD exactly.
inline std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}
inline std::string ids_str(const std::vector<int32_t>& v) { return nlohmann::json(v).dump(); }

}  // namespace verbatim::test
