#pragma once
// Real processes for the check and bench tests: the verbatim command under a time limit, a
// `verbatim serve` on a free port, and the noisy test server in a forked child (so a test can
// kill a server mid-run with SIGKILL, as a crash would).
#include <sys/types.h>

#include <string>
#include <vector>

#include "support/client_noisy_server.h"

namespace verbatim::test {

class ChildProcess {
 public:
  // Runs args[0] (a path) with args; stdout and stderr go to files in `dir`.
  ChildProcess(const std::vector<std::string>& args, const std::string& dir, const std::string& tag);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Waits up to timeout_s, then SIGKILLs it. The exit status, or 128 + signal when killed.
  int wait(double timeout_s);
  bool timed_out() const { return timed_out_; }
  void kill_now(int sig);
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
  bool timed_out_ = false;
  std::string out_path_, err_path_;
};

struct CommandResult {
  int code = -1;
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
};

// Runs the verbatim binary with `args` (after "verbatim") and waits at most timeout_s.
CommandResult run_verbatim(const std::vector<std::string>& args, double timeout_s, const std::string& dir);

// `verbatim serve MODEL_DIR --host 127.0.0.1 --port 0 EXTRA...`, ready when /health says 200.
class ServeProcess {
 public:
  ServeProcess(const std::string& model_dir, const std::vector<std::string>& extra, const std::string& dir,
               double ready_timeout_s = 120);
  ~ServeProcess();
  bool ready() const { return !url_.empty(); }
  const std::string& url() const { return url_; }
  std::string log() const { return proc_.err() + proc_.out(); }
  void kill_now() { proc_.kill_now(9); }

 private:
  ChildProcess proc_;
  std::string url_;
};

// The noisy server in a forked child process.
class NoisyServerProcess {
 public:
  explicit NoisyServerProcess(NoisyServerOptions o);
  ~NoisyServerProcess();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void kill_now();

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// GET path on 127.0.0.1:port; the HTTP status, or -1 when nothing answers.
int http_status(const std::string& url, const std::string& path);

}  // namespace verbatim::test
