#pragma once
// httplib's task queue for `serve`: one thread per open connection, started on demand up to a cap.
// httplib gives a connection a worker for its whole life (a streaming answer, a request waiting
// for the engine, an idle keep-alive socket), so a fixed pool smaller than the open connections
// let /health, /metrics and every new request wait unanswered in the accept queue, and the
// engine's queue limit (503) never applied. Here a connection waits only past `max_threads`;
// threads above `min_threads` end after `idle` without work.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace verbatim::server {

class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t min_threads, size_t max_threads, std::chrono::milliseconds idle = std::chrono::seconds(30));
  ~ConnectionPool() override;
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // runs every queued task, then joins every thread

  size_t threads() const;  // threads alive now
  size_t peak_threads() const;

 private:
  void work(std::list<std::thread>::iterator self);
  void reap_locked();  // joins threads that ended (each ends right after it lists itself)

  const size_t min_threads_, max_threads_;
  const std::chrono::milliseconds idle_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::list<std::thread> threads_;
  std::vector<std::list<std::thread>::iterator> ended_;
  size_t live_ = 0, idle_count_ = 0, peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace verbatim::server
