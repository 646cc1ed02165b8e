// The server's connection pool (src/server/connection_pool.h): a thread for every task in flight
// up to the cap, tasks past the cap wait their turn, idle threads above the minimum end, and
// shutdown runs what was queued before it joins.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/connection_pool.h"

namespace verbatim::server {
namespace {

using namespace std::chrono_literals;

// Tasks that block until `open()`, counting how many run at once.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool is_open = false;
  int running = 0, most = 0, done = 0;
  std::function<void()> task() {
    return [this] {
      std::unique_lock l(mu);
      most = std::max(most, ++running);
      cv.notify_all();
      cv.wait(l, [&] { return is_open; });
      --running;
      ++done;
      cv.notify_all();
    };
  }
  bool wait_running(int n, std::chrono::milliseconds t = 10s) {
    std::unique_lock l(mu);
    return cv.wait_for(l, t, [&] { return running >= n; });
  }
  void open() {
    std::lock_guard l(mu);
    is_open = true;
    cv.notify_all();
  }
};

TEST(ConnectionPool, EveryTaskInFlightGetsAThreadUpToTheCap) {
  ConnectionPool pool(2, 64);
  Gate g;
  for (int i = 0; i < 40; ++i) pool.enqueue(g.task());
  EXPECT_TRUE(g.wait_running(40)) << "40 blocked tasks must all run at once; a fixed pool of 2 would hold 38 back";
  EXPECT_GE(pool.peak_threads(), 40u);
  g.open();
  pool.shutdown();
  EXPECT_EQ(g.done, 40);
}

TEST(ConnectionPool, TasksPastTheCapWaitAndThenRun) {
  ConnectionPool pool(1, 4);
  Gate g;
  for (int i = 0; i < 12; ++i) pool.enqueue(g.task());
  EXPECT_TRUE(g.wait_running(4));
  std::this_thread::sleep_for(50ms);
  {
    std::lock_guard l(g.mu);
    EXPECT_EQ(g.most, 4) << "never more threads than the cap";
  }
  g.open();
  pool.shutdown();
  EXPECT_EQ(g.done, 12) << "the queued tasks ran before shutdown returned";
  EXPECT_LE(pool.peak_threads(), 4u);
}

TEST(ConnectionPool, IdleThreadsAboveTheMinimumEnd) {
  ConnectionPool pool(1, 16, 30ms);
  Gate g;
  for (int i = 0; i < 8; ++i) pool.enqueue(g.task());
  ASSERT_TRUE(g.wait_running(8));
  EXPECT_EQ(pool.threads(), 8u);
  g.open();
  for (int i = 0; i < 200 && pool.threads() > 1; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(pool.threads(), 1u) << "the kept thread stays, the others ended";
  // The pool still works after its threads ended (and were joined).
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) pool.enqueue([&] { ++ran; });
  pool.shutdown();
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace verbatim::server
