#include "server/connection_pool.h"

#include <algorithm>

namespace verbatim::server {

ConnectionPool::ConnectionPool(size_t min_threads, size_t max_threads, std::chrono::milliseconds idle)
    : min_threads_(std::min(min_threads, std::max<size_t>(max_threads, 1))),
      max_threads_(std::max<size_t>(max_threads, 1)),
      idle_(idle) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard l(mu_);
  jobs_.push_back(std::move(fn));
  reap_locked();
  // Start a thread when every live one is busy (idle ones take queued jobs first).
  if (idle_count_ < jobs_.size() && live_ < max_threads_ && !shutdown_) {
    threads_.emplace_front();
    auto it = threads_.begin();
    ++live_;
    peak_ = std::max(peak_, live_);
    *it = std::thread([this, it] { work(it); });
  } else {
    cv_.notify_one();
  }
}

void ConnectionPool::work(std::list<std::thread>::iterator self) {
  std::unique_lock l(mu_);
  for (;;) {
    ++idle_count_;
    const bool got = cv_.wait_for(l, idle_, [&] { return shutdown_ || !jobs_.empty(); });
    --idle_count_;
    if (jobs_.empty() && (shutdown_ || (!got && live_ > min_threads_))) break;
    if (jobs_.empty()) continue;  // timed out, but this thread is one of the kept ones
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    l.unlock();
    job();
    job = nullptr;  // the connection's state goes with its task, outside the lock
    l.lock();
  }
  --live_;
  ended_.push_back(self);
  cv_.notify_all();  // shutdown() waits for live_ == 0
}

void ConnectionPool::reap_locked() {
  for (auto it : ended_) {
    it->join();  // it listed itself as its last step under the lock: join returns at once
    threads_.erase(it);
  }
  ended_.clear();
}

void ConnectionPool::shutdown() {
  std::unique_lock l(mu_);
  shutdown_ = true;
  cv_.notify_all();
  cv_.wait(l, [&] { return live_ == 0; });
  reap_locked();
}

size_t ConnectionPool::threads() const {
  std::lock_guard l(mu_);
  return live_;
}

size_t ConnectionPool::peak_threads() const {
  std::lock_guard l(mu_);
  return peak_;
}

}  // namespace verbatim::server
