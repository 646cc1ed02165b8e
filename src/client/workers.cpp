#include "client/workers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace verbatim::client {

void run_users(int users, int count, const std::function<void(int user, int item)>& work,
               const std::function<void(int done)>& on_progress) {
  int threads = std::max(1, std::min(users, count));
  std::atomic<int> next{0};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr failure;
  std::mutex mu;
  std::condition_variable cv;
  std::latch go(threads);  // every user is ready before the first request leaves
  int finished_threads = 0;

  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int u = 0; u < threads; ++u)
    pool.emplace_back([&, u] {
      go.arrive_and_wait();
      for (int i; !stop.load() && (i = next.fetch_add(1)) < count;) {
        try {
          work(u, i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failure) failure = std::current_exception();
          stop = true;
        }
        done.fetch_add(1);
        cv.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu);
      ++finished_threads;
      cv.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mu);
    while (finished_threads < threads) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      lock.unlock();
      if (on_progress) on_progress(done.load());
      lock.lock();
    }
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace verbatim::client
