#pragma once
// For the server tests: a real `verbatim serve` process on 127.0.0.1 (--port 0, the chosen port
// read from its log), and a small HTTP client (cpp-httplib, plus raw sockets where a test must
// hang up mid-answer) with JSON, SSE and Prometheus helpers. No mocks: real process, real HTTP.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/paths.h"

namespace verbatim::test {

using json = nlohmann::json;

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A tiny random Qwen3 with the real tokenizer (make-model --arch tiny --seed 3), made once per
// build tree and shared by every test process (ctest runs each test case as its own process).
// Built in a private folder and renamed into place, so concurrent first uses never see half of it.
inline std::string text_model_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    fs::path final_dir = fs::path(binary()).parent_path() / "test-models" / "tiny-seed3";
    if (fs::exists(final_dir / "tokenizer.json") && fs::exists(final_dir / "model.safetensors")) return final_dir.string();
    fs::create_directories(final_dir.parent_path());
    fs::path tmp = final_dir.string() + ".tmp-" + std::to_string(getpid());
    std::string cmd = "'";  // appended piece by piece: GCC 12's -Wrestrict misfires on "lit" + string
    cmd.append(binary()).append("' make-model --arch tiny --seed 3 --out '").append(tmp.string()).append("' >/dev/null 2>&1");
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("make-model failed: " + cmd);
    std::error_code ec;
    fs::rename(tmp, final_dir, ec);  // fails if another process won the race: use theirs
    if (ec) fs::remove_all(tmp);
    return final_dir.string();
  }();
  return dir;
}

class ServerProcess {
 public:
  // Starts `verbatim serve --host 127.0.0.1 --port 0 ARGS...` and waits until /health says 200
  // (wait_ready false: only until the port is known, while the model may still be loading).
  explicit ServerProcess(const std::vector<std::string>& args, bool wait_ready = true, double timeout_s = 180) {
    static std::atomic<int> counter{0};
    log_path_ = temp_dir("server" + std::to_string(counter++)) + "/server.log";
    std::vector<std::string> argv_s = {binary(), "serve", "--host", "127.0.0.1", "--port", "0", "--status-interval", "1"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!running()) throw std::runtime_error("verbatim serve exited during startup:\n" + log());
      if (port_ == 0) {  // "listening on http://127.0.0.1:PORT"
        const std::string mark = "listening on http://127.0.0.1:";
        std::string l = log();
        size_t at = l.find(mark);
        if (at != std::string::npos && at + mark.size() < l.size() && std::isdigit(static_cast<unsigned char>(l[at + mark.size()])))
          port_ = std::atoi(l.c_str() + at + mark.size());
      }
      if (port_ != 0 && (!wait_ready || health() == 200)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ready ? 50 : 2));
    }
    throw std::runtime_error("verbatim serve did not become ready:\n" + log());
  }
  ~ServerProcess() {
    if (running()) stop(SIGTERM, 60);
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return slurp(log_path_); }

  bool running() {
    if (exited_) return false;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_status_ = status;
      return false;
    }
    return true;
  }
  // Sends `sig` and waits up to timeout_s; returns the exit code (-1: still running, 128+N: killed by N).
  int stop(int sig = SIGTERM, double timeout_s = 60) {
    if (running()) kill(pid_, sig);
    return wait_exit(timeout_s);
  }
  int wait_exit(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (running()) return -1;
    if (WIFEXITED(exit_status_)) return WEXITSTATUS(exit_status_);
    return 128 + WTERMSIG(exit_status_);
  }

  int health() {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(1);
    c.set_read_timeout(2);
    auto r = c.Get("/health");
    return r ? r->status : 0;
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool exited_ = false;
  int exit_status_ = 0;
};

// A "Vm..." field of /proc/PID/status (VmRSS, VmHWM: KiB), -1 when absent.
inline long proc_status_kib(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

struct HttpResult {
  int status = 0;  // 0: no answer (connection refused / reset)
  std::string body;
  json j;          // the parsed body (null when not JSON)
  httplib::Headers headers;
};

inline HttpResult to_result(const httplib::Result& r) {
  HttpResult out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  out.j = json::parse(out.body, nullptr, false);
  if (out.j.is_discarded()) out.j = nullptr;
  return out;
}

inline httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(10);
  c.set_read_timeout(600);
  c.set_write_timeout(60);
  return c;
}

inline HttpResult post_raw(int port, const std::string& path, const std::string& body, const httplib::Headers& h = {},
                           const std::string& content_type = "application/json") {
  auto c = client(port);
  return to_result(c.Post(path.c_str(), h, body, content_type.c_str()));
}
inline HttpResult post(int port, const std::string& path, const json& body, const httplib::Headers& h = {}) {
  return post_raw(port, path, body.dump(), h);
}
// Polls cond every 20 ms until it holds or timeout_s passes; its last answer.
inline bool wait_for(const std::function<bool()>& cond, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

inline HttpResult get(int port, const std::string& path, const httplib::Headers& h = {}) {
  auto c = client(port);
  return to_result(c.Get(path.c_str(), h));
}

struct SseResult {
  int status = 0;
  std::vector<json> events;  // every `data:` payload but [DONE]
  bool done = false;         // `data: [DONE]` came last
  std::string raw;
};

inline SseResult parse_sse(int status, const std::string& raw) {
  SseResult s;
  s.status = status;
  s.raw = raw;
  std::istringstream in(raw);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    std::string payload = line.substr(6);
    if (payload == "[DONE]") {
      s.done = true;
      continue;
    }
    s.events.push_back(json::parse(payload));
  }
  return s;
}

inline SseResult post_stream(int port, const std::string& path, const json& body, const httplib::Headers& h = {}) {
  auto r = post(port, path, body, h);
  return parse_sse(r.status, r.body);
}

// The value of the first sample line of `name` whose labels contain `label` ("" for any).
inline double metric(const std::string& text, const std::string& name, const std::string& label = "") {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}
inline double metric(int port, const std::string& name, const std::string& label = "") {
  return metric(get(port, "/metrics").body, name, label);
}

// A raw HTTP/1.1 POST over a socket, so a test can hang up at a chosen moment.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  }
  ~RawConnection() { close(); }
  // extra_headers: whole header lines, each ending in \r\n.
  void send_post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
    send_raw("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra_headers +
             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  void send_raw(const std::string& bytes) {
    if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) != ssize_t(bytes.size())) throw std::runtime_error("send failed");
  }
  // Reads until `needle` occurs `count` times in what arrived (or the peer closes / timeout).
  std::string read_until(const std::string& needle, int count, double timeout_s = 120) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      int seen = 0;
      for (size_t p = got_.find(needle); p != std::string::npos; p = got_.find(needle, p + 1)) ++seen;
      if (seen >= count) break;
      timeval tv{1, 0};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) break;
      if (n > 0) got_.append(buf, size_t(n));
    }
    return got_;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string got_;
};

}  // namespace verbatim::test
