// The engine on its own thread: submissions from many threads give the bits the synchronous
// engine gives; abort, drain-and-stop, stop, the bounded queue, reset and stats behave.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "engine/async_engine.h"
#include "engine/cpu_backend.h"
#include "engine/fault_backend.h"
#include "engine/sampler.h"
#include "support/paths.h"

using namespace verbatim;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Backend> tiny_backend() { return make_cpu_backend(test::fixture("qwen3-tiny-tied"), DType::BF16); }

EngineOptions small_options() {
  EngineOptions o;
  o.num_kv_blocks = 256;
  return o;
}

// small_options with `seqs` seats and a queue bound of `waiting`, for the QueueFull tests.
EngineOptions queue_options(int seqs, int waiting) {
  EngineOptions o = small_options();
  o.max_num_seqs = seqs;
  o.max_waiting = waiting;
  return o;
}

// Collects callbacks (run on the engine thread) and lets the test wait for them.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::vector<int32_t>> tokens;
  std::map<uint64_t, std::vector<uint32_t>> logprob_bits;
  std::map<uint64_t, RequestUpdate> final;
  std::map<uint64_t, int> updates;

  AsyncEngine::Callback callback() {
    return [this](const RequestUpdate& u) {
      std::lock_guard lk(mu);
      ++updates[u.id];
      for (const TokenLogprob& t : u.tokens) {
        tokens[u.id].push_back(t.token);
        logprob_bits[u.id].push_back(f32_bits(t.logprob));
      }
      if (u.finished) final[u.id] = u;
      cv.notify_all();
    };
  }
  bool wait_finished(size_t n, std::chrono::seconds timeout = 120s) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, timeout, [&] { return final.size() >= n; });
  }
  bool wait_first_update(uint64_t id) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, 60s, [&] { return updates.count(id) > 0; });
  }
};

// Polls cond every millisecond for up to 60 s.
bool wait_until(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

SamplingParams params_for(int r) {
  SamplingParams p;
  p.max_tokens = 8;
  p.logprobs = 0;
  p.temperature = r % 2 ? 0.8f : 0.0f;
  p.seed = uint64_t(r);
  return p;
}

std::vector<int32_t> prompt_for(int r) {
  std::vector<int32_t> p = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};
  for (int i = 0; i < r % 11 + 1; ++i) p.push_back(int32_t(sample_uniform(9, uint64_t(r), i) * 512));
  return p;
}

}  // namespace

TEST(AsyncEngine, ManyThreadsGetTheSynchronousEnginesBits) {
  const int n = 16;
  // Reference: the synchronous engine, one request at a time.
  std::vector<std::vector<int32_t>> want_tokens(n);
  std::vector<std::vector<uint32_t>> want_bits(n);
  {
    Engine e(tiny_backend(), small_options());
    for (int r = 0; r < n; ++r) {
      e.add(prompt_for(r), params_for(r));
      while (e.has_work())
        for (const RequestUpdate& u : e.step())
          for (const TokenLogprob& t : u.tokens) {
            want_tokens[size_t(r)].push_back(t.token);
            want_bits[size_t(r)].push_back(f32_bits(t.logprob));
          }
    }
  }
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  std::vector<uint64_t> ids(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = t; r < n; r += 4) ids[size_t(r)] = ae.submit(prompt_for(r), params_for(r), c.callback());
    });
  for (auto& th : threads) th.join();
  ASSERT_TRUE(c.wait_finished(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(c.tokens[ids[size_t(r)]], want_tokens[size_t(r)]) << r;
    EXPECT_EQ(c.logprob_bits[ids[size_t(r)]], want_bits[size_t(r)]) << r;
    EXPECT_EQ(c.final[ids[size_t(r)]].reason, FinishReason::Length);
  }
  EngineStats s = ae.stats();
  EXPECT_EQ(s.generation_tokens, uint64_t(8 * n));
  EXPECT_EQ(s.kv_blocks_used, 0);
}

TEST(AsyncEngine, SubmitValidatesOnTheCallersThread) {
  AsyncEngine ae(tiny_backend(), small_options());
  EXPECT_THROW(ae.submit({}, params_for(0), nullptr), InvalidRequest);
  SamplingParams bad = params_for(0);
  bad.top_p = 0.0f;
  EXPECT_THROW(ae.submit({1, 2}, bad, nullptr), InvalidRequest);
}

TEST(AsyncEngine, AbortFromAnotherThreadEndsTheRequest) {
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 4000;
  const uint64_t id = ae.submit({1, 2, 3}, p, c.callback());
  ASSERT_TRUE(c.wait_first_update(id));
  std::thread([&] { ae.abort(id); }).join();
  ASSERT_TRUE(c.wait_finished(1, 60s));
  EXPECT_EQ(c.final[id].reason, FinishReason::Abort);
  EXPECT_LT(c.tokens[id].size(), 4000u);
  ae.abort(id);    // already finished: ignored
  ae.abort(999);   // unknown: ignored
  ae.drain_and_stop();
  EXPECT_EQ(ae.stats().kv_blocks_used, 0);
}

TEST(AsyncEngine, DrainFinishesEverythingThenRefusesNewWork) {
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  for (int r = 0; r < 6; ++r) ae.submit(prompt_for(r), params_for(r), c.callback());
  ae.drain_and_stop();  // returns once all six are done
  {
    std::lock_guard lk(c.mu);
    ASSERT_EQ(c.final.size(), 6u);
    for (auto& [id, u] : c.final) {
      EXPECT_EQ(u.reason, FinishReason::Length);
      EXPECT_EQ(c.tokens[id].size(), 8u);
    }
  }
  EXPECT_FALSE(ae.accepting());
  EXPECT_THROW(ae.submit({1}, params_for(0), c.callback()), ShuttingDown);
}

TEST(AsyncEngine, StopAbortsWhatIsLeft) {
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 4000;
  const uint64_t a = ae.submit({1, 2, 3}, p, c.callback());
  const uint64_t b = ae.submit({4, 5, 6}, p, c.callback());
  ASSERT_TRUE(c.wait_first_update(a));
  ae.stop();
  std::lock_guard lk(c.mu);
  ASSERT_EQ(c.final.size(), 2u);
  EXPECT_EQ(c.final[a].reason, FinishReason::Abort);
  EXPECT_EQ(c.final[b].reason, FinishReason::Abort);
}

// A device fault ends the async engine: every request gets a final update naming the fault, the
// failure handler runs once (the server exits on it), submit throws EngineFailed, stats stay
// readable and stop() still returns.
TEST(AsyncEngine, ADeviceFaultEndsTheEngineAndRunsTheHandlerOnce) {
  EngineOptions o = queue_options(2, 64);
  AsyncEngine ae(std::make_unique<FaultBackend>(tiny_backend(), 3), o);
  std::mutex hmu;
  std::vector<std::string> handled;
  ae.on_failure([&](const std::string& why) {
    std::lock_guard lk(hmu);
    handled.push_back(why);
  });
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 50;
  std::vector<AsyncEngine::NewRequest> five;  // queued at once: none can meet the failed engine
  for (int r = 0; r < 5; ++r) five.push_back({prompt_for(r), p, c.callback()});
  ae.submit_all(std::move(five));  // 2 run, 3 wait
  ASSERT_TRUE(c.wait_finished(5));
  {
    std::lock_guard lk(c.mu);
    for (auto& [id, u] : c.final) {
      EXPECT_EQ(u.reason, FinishReason::Abort) << id;
      EXPECT_NE(u.error.find("injected device fault"), std::string::npos) << id << ": " << u.error;
    }
  }
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lk(hmu);
    return !handled.empty();
  }));
  EXPECT_NE(ae.failure().find("injected device fault"), std::string::npos);
  EXPECT_FALSE(ae.accepting());
  EXPECT_THROW(ae.submit({1}, params_for(0), c.callback()), EngineFailed);
  EXPECT_EQ(ae.stats().running, 0);
  ae.reset_prefix_cache();  // the engine thread has ended: runs here, does not hang
  ae.stop();
  std::lock_guard lk(hmu);
  ASSERT_EQ(handled.size(), 1u);
  EXPECT_NE(handled[0].find("injected device fault"), std::string::npos);
}

TEST(AsyncEngine, BoundedQueueThrowsQueueFull) {
  AsyncEngine ae(tiny_backend(), queue_options(1, 2));
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 4000;  // runs until stopped
  const uint64_t running = ae.submit({1, 2, 3}, p, c.callback());
  ASSERT_TRUE(c.wait_first_update(running));  // it runs; the queue is empty
  ae.submit({4}, p, c.callback());
  ae.submit({5}, p, c.callback());
  EXPECT_THROW(ae.submit({6}, p, c.callback()), QueueFull);
  EXPECT_EQ(ae.stats().waiting, 2);
  EXPECT_EQ(ae.stats().running, 1);
  ae.stop();
}

// The bound counts requests waiting for a seat: a burst that free seats take at once is not
// refused (it was: requests just taken from the inbox counted as waiting for a whole step).
TEST(AsyncEngine, QueueBoundLeavesOutRequestsFreeSeatsTake) {
  AsyncEngine ae(tiny_backend(), queue_options(8, 2));
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 4000;  // runs until stopped
  for (int i = 0; i < 10; ++i) EXPECT_NO_THROW(ae.submit({1, 2, int32_t(3 + i)}, p, c.callback())) << i;
  EXPECT_THROW(ae.submit({9}, p, c.callback()), QueueFull) << "8 seats + 2 waiting are full";
  ae.stop();
}

// When KV room, not seats, holds the queue back (the last step left a request waiting), free
// seats are not counted: the bound is max_waiting again. The engine thread is held inside a
// callback so the published stats stay still while the test submits.
TEST(AsyncEngine, QueueBoundHoldsWhenKvRoomLimitsAdmission) {
  EngineOptions o;
  o.num_kv_blocks = 8;  // 128 tokens: once A decodes past its 112-token prompt, no block is free
  o.max_num_seqs = 8;
  o.max_waiting = 2;
  AsyncEngine ae(tiny_backend(), o);
  std::mutex m;
  std::condition_variable cv;
  int a_updates = 0;
  bool b_submitted = false, held = false, release = false;
  SamplingParams p = params_for(0);
  p.max_tokens = 16;
  const std::vector<int32_t> long_prompt(112, 7);
  ae.submit(long_prompt, p, [&](const RequestUpdate&) {
    std::unique_lock lk(m);
    ++a_updates;
    cv.notify_all();
    // A's first update holds the engine until B is submitted, so the step of its second began with
    // B in the engine (and left B waiting); the second holds it while the test submits.
    if (a_updates == 1) cv.wait(lk, [&] { return b_submitted; });
    if (a_updates == 2) {
      held = true;
      cv.notify_all();
      cv.wait(lk, [&] { return release; });
    }
  });
  {
    std::unique_lock lk(m);
    ASSERT_TRUE(cv.wait_for(lk, 60s, [&] { return a_updates >= 1; }));
  }
  Collector c;
  ae.submit(long_prompt, p, c.callback());  // B: no KV room while A runs
  {
    std::unique_lock lk(m);
    b_submitted = true;
    cv.notify_all();
    ASSERT_TRUE(cv.wait_for(lk, 60s, [&] { return held; }));
  }
  EXPECT_EQ(ae.stats().running, 1);
  EXPECT_EQ(ae.stats().waiting, 1);
  EXPECT_NO_THROW(ae.submit({1, 2}, p, c.callback()));  // 2 waiting: the bound
  EXPECT_THROW(ae.submit({3, 4}, p, c.callback()), QueueFull) << "7 free seats must not count while KV holds B back";
  {
    std::lock_guard lk(m);
    release = true;
  }
  cv.notify_all();
  ae.stop();
}

// submit_all is all or nothing: refused for the queue or for one invalid request, none is queued.
TEST(AsyncEngine, SubmitAllQueuesEveryRequestOrNone) {
  AsyncEngine ae(tiny_backend(), queue_options(1, 2));
  Collector c;
  SamplingParams p = params_for(0);
  p.max_tokens = 4000;  // runs until stopped
  const uint64_t running = ae.submit({1, 2, 3}, p, c.callback());
  ASSERT_TRUE(c.wait_first_update(running));
  auto three = [&] {
    std::vector<AsyncEngine::NewRequest> r;
    for (int i = 0; i < 3; ++i) r.push_back({{4, 5, int32_t(6 + i)}, p, c.callback()});
    return r;
  };
  EXPECT_THROW(ae.submit_all(three()), QueueFull);
  EXPECT_EQ(ae.stats().waiting, 0) << "none of the three was queued";
  std::vector<AsyncEngine::NewRequest> bad = three();
  bad.resize(2);
  bad[1].prompt.assign(size_t(ae.max_model_len()) + 1, 7);  // past max_model_len: InvalidRequest
  EXPECT_THROW(ae.submit_all(std::move(bad)), InvalidRequest);
  EXPECT_EQ(ae.stats().waiting, 0);
  std::vector<AsyncEngine::NewRequest> four = three();  // more than 1 seat + 2 queued: never fits
  four.push_back(three()[0]);
  try {
    ae.submit_all(std::move(four));
    ADD_FAILURE() << "4 choices accepted where 3 fit";
  } catch (const InvalidRequest& e) {
    EXPECT_EQ(e.param(), "n");
    EXPECT_NE(std::string(e.what()).find("exceed the 3 this server can hold at once"), std::string::npos) << e.what();
  }
  std::vector<AsyncEngine::NewRequest> two = three();
  two.resize(2);
  EXPECT_EQ(ae.submit_all(std::move(two)).size(), 2u);
  EXPECT_EQ(ae.stats().waiting, 2);
  ae.stop();
}

TEST(AsyncEngine, ResetPrefixCacheRunsBetweenSteps) {
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  const std::vector<int32_t> prompt(40, 11);
  SamplingParams p = params_for(0);
  ae.submit(prompt, p, c.callback());
  ASSERT_TRUE(c.wait_finished(1));
  const uint64_t second = ae.submit(prompt, p, c.callback());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.final[second].num_cached_tokens, 32);
  ae.reset_prefix_cache();
  const uint64_t third = ae.submit(prompt, p, c.callback());
  ASSERT_TRUE(c.wait_finished(3));
  EXPECT_EQ(c.final[third].num_cached_tokens, 0);
  EXPECT_EQ(c.tokens[third], c.tokens[second]);
}

TEST(AsyncEngine, ACallbackMaySubmitMore) {
  AsyncEngine ae(tiny_backend(), small_options());
  Collector c;
  std::mutex mu;
  std::condition_variable cv;
  bool chained_done = false;
  AsyncEngine::Callback chained = [&](const RequestUpdate& u) {
    if (!u.finished) return;
    std::lock_guard lk(mu);
    chained_done = true;
    cv.notify_all();
  };
  AsyncEngine::Callback first = [&](const RequestUpdate& u) {
    if (u.finished) ae.submit({7, 7, 7}, params_for(0), chained);  // from the engine thread
  };
  ae.submit({1, 2}, params_for(0), first);
  std::unique_lock lk(mu);
  EXPECT_TRUE(cv.wait_for(lk, 60s, [&] { return chained_done; }));
}
