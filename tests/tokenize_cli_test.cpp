// `verbatim tokenize` as a real process: JSON-string lines in, id arrays out, bad lines reported.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <spawn.h>
#include <sys/wait.h>

#include "support/paths.h"

extern char** environ;

namespace verbatim {
namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the verbatim binary with `args`, stdin from `input`, and collects stdout/stderr.
Result run_verbatim(const std::vector<std::string>& args, const std::string& input) {
  const std::string dir = test::temp_dir("tokenize-cli");
  const std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
  std::ofstream(in) << input;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = {test::binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  Result r;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << argv[0];
    return r;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

TEST(TokenizeCli, PrintsIdsPerLine) {
  const Result r = run_verbatim({"tokenize", "--tokenizer", test::tokenizer_dir()},
                                "\"Hello, world!\"\n\"<|im_start|>user\\nHi<|im_end|>\"\n\"\"\n\"caf\\u00e9\"\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,11,1879,0]\n[151644,872,198,13048,151645]\n[]\n[924,58858]\n");
  EXPECT_EQ(r.err, "");
}

TEST(TokenizeCli, BadLinesPrintNullAndFailAtTheEnd) {
  const Result r = run_verbatim({"tokenize"}, "42\n\"a\"\nnot json\n\"b\"\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "null\n[64]\nnull\n[65]\n");  // later lines are still tokenized
  EXPECT_NE(r.err.find("line 1: not a JSON string"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3: not a JSON string"), std::string::npos) << r.err;
}

TEST(TokenizeCli, MissingTokenizerNamesTheFile) {
  const std::string dir = test::temp_dir("tokenize-cli-missing");
  const Result r = run_verbatim({"tokenize", "--tokenizer", dir}, "\"a\"\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(dir + "/tokenizer.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verbatim
