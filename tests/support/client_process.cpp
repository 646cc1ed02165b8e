#include "support/client_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/paths.h"

extern char** environ;

namespace verbatim::test {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args, const std::string& dir, const std::string& tag)
    : out_path_(dir + "/" + tag + ".out"), err_path_(dir + "/" + tag + ".err") {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill_now(SIGKILL);
    wait(10);
  }
}

bool ChildProcess::running() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void ChildProcess::kill_now(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

int ChildProcess::wait(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out_ = true;
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

std::string ChildProcess::out() const { return slurp(out_path_); }
std::string ChildProcess::err() const { return slurp(err_path_); }

CommandResult run_verbatim(const std::vector<std::string>& args, double timeout_s, const std::string& dir) {
  static int counter = 0;
  std::vector<std::string> full = {binary()};
  full.insert(full.end(), args.begin(), args.end());
  auto t0 = std::chrono::steady_clock::now();
  ChildProcess p(full, dir, "cmd" + std::to_string(counter++));
  CommandResult r;
  r.code = p.wait(timeout_s);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.timed_out = p.timed_out();
  r.out = p.out();
  r.err = p.err();
  return r;
}

int http_status(const std::string& url, const std::string& path) {
  httplib::Client c(url);
  c.set_connection_timeout(1, 0);
  c.set_read_timeout(5, 0);
  auto r = c.Get(path);
  return r ? r->status : -1;
}

ServeProcess::ServeProcess(const std::string& model_dir, const std::vector<std::string>& extra, const std::string& dir,
                           double ready_timeout_s)
    : proc_([&] {
        std::vector<std::string> a = {binary(), "serve", model_dir, "--host", "127.0.0.1", "--port", "0"};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
      }(),
            dir, "serve") {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(ready_timeout_s);
  static const std::regex listening("listening on (http://127\\.0\\.0\\.1:[0-9]+)");
  std::string found;
  while (std::chrono::steady_clock::now() < deadline && proc_.running()) {
    std::smatch m;
    std::string log = proc_.err() + proc_.out();
    if (found.empty() && std::regex_search(log, m, listening)) found = m[1];
    if (!found.empty() && http_status(found, "/health") == 200) {
      url_ = found;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ServeProcess::~ServeProcess() {
  proc_.kill_now(SIGKILL);
  proc_.wait(10);
}

NoisyServerProcess::NoisyServerProcess(NoisyServerOptions o) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::close(fds[0]);
    NoisyServer::serve_forever(o, fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[32];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<size_t>(n));
    if (text.find('\n') != std::string::npos) break;
  }
  ::close(fds[0]);
  port_ = text.empty() ? 0 : std::stoi(text);
  if (port_ <= 0) throw std::runtime_error("the noisy server child did not report a port");
}

void NoisyServerProcess::kill_now() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

NoisyServerProcess::~NoisyServerProcess() { kill_now(); }

}  // namespace verbatim::test
