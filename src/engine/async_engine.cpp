#include "engine/async_engine.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace verbatim {

AsyncEngine::AsyncEngine(std::unique_ptr<Backend> backend, EngineOptions opts) : opts_(opts) {
  EngineOptions inner = opts;
  inner.max_waiting = INT_MAX;  // the bound is enforced here, where the inbox is counted too
  backend_ = backend.get();
  engine_ = std::make_unique<Engine>(std::move(backend), inner);
  max_model_len_ = engine_->max_model_len();
  stats_ = engine_->stats();
  thread_ = std::thread([this] { run(); });
  thread_id_ = thread_.get_id();
}

AsyncEngine::~AsyncEngine() { stop(); }

bool AsyncEngine::accepting() const {
  std::lock_guard lk(mu_);
  return accepting_;
}

double AsyncEngine::step_running_for() const {
  const int64_t began = step_began_ns_.load(std::memory_order_relaxed);
  if (began == 0) return 0.0;
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1);
  return double(std::max<int64_t>(0, now - began)) * 1e-9;
}

std::string AsyncEngine::failure() const {
  std::lock_guard lk(mu_);
  return failure_;
}

void AsyncEngine::on_failure(std::function<void(const std::string&)> handler) {
  std::lock_guard lk(mu_);
  on_failure_ = std::move(handler);
}

uint64_t AsyncEngine::submit(std::vector<int32_t> prompt, const SamplingParams& params, Callback cb) {
  std::vector<NewRequest> one;
  one.push_back({std::move(prompt), params, std::move(cb)});
  return submit_all(std::move(one))[0];
}

std::vector<uint64_t> AsyncEngine::submit_all(std::vector<NewRequest> requests, const std::string& count_param) {
  for (const NewRequest& r : requests) engine_->validate(r.prompt, r.params);  // immutable engine state: safe off-thread
  // More choices than seats and queue together can never be admitted: a 400, not a 503 to retry.
  const int64_t room = int64_t(opts_.max_num_seqs) + int64_t(opts_.max_waiting);
  if (int64_t(requests.size()) > room)
    throw InvalidRequest(std::to_string(requests.size()) + " choices (prompts x n) exceed the " + std::to_string(room) +
                             " this server can hold at once (max-num-seqs + max-queue-len)",
                         count_param);
  std::vector<uint64_t> ids;
  ids.reserve(requests.size());
  std::lock_guard lk(mu_);
  if (!failure_.empty()) throw EngineFailed(failure_);
  if (!accepting_) throw ShuttingDown();
  // Not yet running: the inbox, what the engine thread took from it this round, the engine's queue
  // (exact counts). Free seats take some of them at the next step, unless the last step left
  // requests waiting: then KV room, not seats, limits admission (FIFO) and nothing more is seated.
  // Across a step the difference is unchanged, as a seated request leaves both terms.
  const int64_t not_running = int64_t(inbox_.size()) + in_transit_ + stats_.waiting;
  const int64_t free_seats =
      stats_.waiting > 0 ? 0 : std::max<int64_t>(0, int64_t(opts_.max_num_seqs) - stats_.running);
  if (not_running + int64_t(requests.size()) - free_seats > int64_t(opts_.max_waiting)) throw QueueFull();
  const size_t before = inbox_.size();
  try {
    for (NewRequest& r : requests) {
      ids.push_back(next_id_);  // reserved: cannot throw
      inbox_.push_back({next_id_++, std::move(r.prompt), r.params, std::move(r.cb)});
    }
  } catch (...) {  // all or none, even on bad_alloc
    inbox_.resize(before);
    throw;
  }
  wake_.notify_one();
  return ids;
}

void AsyncEngine::abort(uint64_t id) {
  std::lock_guard lk(mu_);
  aborts_.push_back(id);
  wake_.notify_one();
}

EngineStats AsyncEngine::stats() const {
  std::lock_guard lk(mu_);
  EngineStats s = stats_;
  s.waiting += int(inbox_.size() + size_t(in_transit_));
  return s;
}

void AsyncEngine::reset_prefix_cache() {
  if (std::this_thread::get_id() == thread_id_) {  // from a callback: already between steps
    engine_->reset_prefix_cache();
    return;
  }
  std::unique_lock lk(mu_);
  if (exited_) {  // no thread owns the engine any more
    engine_->reset_prefix_cache();
    return;
  }
  const uint64_t ticket = ++reset_asked_;
  wake_.notify_one();
  reset_done_cv_.wait(lk, [&] { return reset_done_ >= ticket || exited_; });
}

void AsyncEngine::drain_and_stop() {
  {
    std::lock_guard lk(mu_);
    accepting_ = false;
    draining_ = true;
    wake_.notify_one();
  }
  join();
}

void AsyncEngine::stop() {
  {
    std::lock_guard lk(mu_);
    accepting_ = false;
    stopping_ = true;
    wake_.notify_one();
  }
  join();
}

void AsyncEngine::join() {
  if (thread_.joinable() && std::this_thread::get_id() != thread_id_) thread_.join();
}

void AsyncEngine::deliver(const std::vector<RequestUpdate>& updates) {
  for (const RequestUpdate& u : updates) {
    auto pid = public_id_.find(u.id);
    if (pid == public_id_.end()) continue;
    const uint64_t id = pid->second;
    auto live = live_.find(id);
    RequestUpdate out = u;
    out.id = id;
    Callback cb = live->second.cb;
    if (u.finished) {
      live_.erase(live);
      public_id_.erase(pid);
    }
    try {
      if (cb) cb(out);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "verbatim: a request callback threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "verbatim: a request callback threw\n");
    }
  }
}

void AsyncEngine::fail_all(const std::string& why) {
  std::vector<RequestUpdate> updates;
  for (auto& [pub, live] : live_) {
    engine_->abort(live.engine_id);
    (void)pub;
  }
  // The aborts come back as the engine's pending updates.
  try {
    updates = engine_->step();
  } catch (...) {
  }
  for (RequestUpdate& u : updates) u.error = why;
  deliver(updates);
  // Anything the engine could not report still gets its final update.
  std::vector<RequestUpdate> rest;
  for (auto& [pub, live] : live_) {
    RequestUpdate u;
    u.id = live.engine_id;
    u.finished = true;
    u.reason = FinishReason::Abort;
    u.error = why;
    rest.push_back(u);
  }
  deliver(rest);
}

void AsyncEngine::fail_submission(Submission& s, const std::string& why) {
  RequestUpdate u;
  u.id = s.id;
  u.finished = true;
  u.reason = FinishReason::Abort;
  u.error = why;
  try {
    if (s.cb) s.cb(u);
  } catch (...) {
  }
}

void AsyncEngine::publish() {
  stats_ = engine_->stats();
  in_transit_ = 0;  // now counted in stats_.waiting (or running)
  has_work_ = engine_->has_work();
}

void AsyncEngine::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    wake_.wait(lk, [&] {
      return !inbox_.empty() || !aborts_.empty() || reset_asked_ > reset_done_ || stopping_ || draining_ || has_work_;
    });
    std::deque<Submission> inbox = std::move(inbox_);
    inbox_.clear();
    in_transit_ = int64_t(inbox.size());
    std::vector<uint64_t> aborts = std::move(aborts_);
    aborts_.clear();
    const uint64_t reset_ticket = reset_asked_;
    const bool do_reset = reset_asked_ > reset_done_;
    const bool stopping = stopping_;
    lk.unlock();

    std::vector<RequestUpdate> updates;
    for (Submission& s : inbox) {
      try {
        const uint64_t eid = engine_->add(std::move(s.prompt), s.params);
        live_.emplace(s.id, Live{eid, std::move(s.cb)});
        public_id_.emplace(eid, s.id);
      } catch (const std::exception& e) {  // validated already; only an engine fault lands here
        fail_submission(s, e.what());
      }
    }
    for (uint64_t id : aborts)
      if (auto it = live_.find(id); it != live_.end()) engine_->abort(it->second.engine_id);
    if (do_reset) engine_->reset_prefix_cache();  // between steps: no plan holds a block key

    std::string failure;
    if (!stopping) {
      try {
        if (engine_->has_work()) {
          step_began_ns_ = std::max<int64_t>(1, std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1));
          updates = engine_->step();
          step_began_ns_ = 0;
        }
        failure = engine_->failure();  // the step ended every request with it (in updates)
      } catch (const std::exception& e) {  // a fault outside the backend call: the same end
        step_began_ns_ = 0;
        failure = e.what();
        if (failure.empty()) failure = "the engine step threw an exception with no message";
      }
    }
    // Stats go out before the callbacks, so a client that saw its update sees a queue count that
    // already includes the step (the QueueFull bound is exact, not stale). Likewise the failure: a
    // client told of the fault finds the engine dead.
    lk.lock();
    if (!failure.empty()) {
      failure_ = failure;
      accepting_ = false;
    }
    publish();
    if (do_reset) {
      reset_done_ = reset_ticket;
      reset_done_cv_.notify_all();
    }
    lk.unlock();

    if (stopping) {
      fail_all("");
    } else if (!failure.empty()) {
      deliver(updates);    // the failed step's final updates, the fault as their error
      fail_all(failure);   // anything it did not report (nothing, as the engine is written)
      lk.lock();
      std::deque<Submission> late = std::move(inbox_);  // queued before failure_ was set
      inbox_.clear();
      std::function<void(const std::string&)> handler = on_failure_;
      publish();
      lk.unlock();
      for (Submission& sub : late) fail_submission(sub, failure);
      if (handler) handler(failure);
      else std::fprintf(stderr, "verbatim: the engine failed: %s\n", failure.c_str());
      lk.lock();
      break;
    } else {
      deliver(updates);
    }

    lk.lock();
    publish();
    if (stopping || (draining_ && inbox_.empty() && !has_work_)) break;
  }
  exited_ = true;
  reset_done_cv_.notify_all();
}

}  // namespace verbatim
