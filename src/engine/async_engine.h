#pragma once
// The engine on its own thread. That thread alone owns the Engine (and so the running batch);
// HTTP threads submit, abort and read stats through a mutex-guarded inbox (design.md: one engine
// thread, requests handed over a queue). Idle, the thread sleeps on a condition variable.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace verbatim {

// submit() after drain_and_stop() / stop() began (maps to HTTP 503).
class ShuttingDown : public std::runtime_error {
 public:
  ShuttingDown() : std::runtime_error("the server is shutting down and takes no new requests") {}
};

class AsyncEngine {
 public:
  // Runs on the ENGINE thread for each update of a request; the last has finished = true. It must
  // not block (hand the update to the waiting HTTP thread and return): every other request waits
  // while it runs. It may call submit, abort, stats and reset_prefix_cache, not drain_and_stop or
  // stop. Exceptions it throws are swallowed.
  using Callback = std::function<void(const RequestUpdate&)>;

  // Builds the Engine (allocating the KV cache) on the calling thread, then starts the thread.
  // opts.max_waiting bounds the requests waiting for a seat: those submitted and not yet running,
  // less the seats free of max_num_seqs (a burst an idle server seats at once is not refused).
  AsyncEngine(std::unique_ptr<Backend> backend, EngineOptions opts);
  ~AsyncEngine();  // stop()

  struct NewRequest {
    std::vector<int32_t> prompt;
    SamplingParams params;
    Callback cb;
  };
  // Validates on the calling thread; throws InvalidRequest, QueueFull, ShuttingDown or EngineFailed.
  // The returned id names the request in its updates and in abort().
  uint64_t submit(std::vector<int32_t> prompt, const SamplingParams& params, Callback cb);
  // All or nothing: every request is validated and the queue's room checked for all of them before
  // any is queued, so the choices of one HTTP request are refused whole, never run in part. More
  // requests than seats and queue together is an InvalidRequest naming count_param.
  std::vector<uint64_t> submit_all(std::vector<NewRequest> requests, const std::string& count_param = "n");
  // Thread-safe; the request ends with reason Abort (unknown or finished ids are ignored).
  void abort(uint64_t id);
  EngineStats stats() const;  // a snapshot taken after the last step (waiting includes the inbox)
  // Empties the prefix cache between two steps; returns once done.
  void reset_prefix_cache();
  // SIGTERM: stop accepting (submit throws ShuttingDown), finish every running and waiting request,
  // then end the thread. Returns when it has ended.
  void drain_and_stop();
  // Stop accepting, abort everything still queued or running (callbacks get reason Abort), end.
  void stop();

  bool accepting() const;
  // Empty while healthy; else the fault that ended the engine (engine.h, Engine::failure). Then
  // every request has had its final update (with the fault as its error), submit throws
  // EngineFailed and the engine thread has ended; stats() stays readable.
  std::string failure() const;
  // How long the step now running has run, in seconds (0 between steps): a step that never ends
  // (a hung kernel) shows here while every request waits (the server's step watchdog reads it).
  double step_running_for() const;
  // Called once, on the engine thread, after a fault ended the engine and every request got its
  // final update (the server marks itself dead and exits). Set it before the first submit.
  void on_failure(std::function<void(const std::string&)> handler);
  int max_model_len() const { return max_model_len_; }
  const EngineOptions& options() const { return opts_; }
  const Backend& backend() const { return *backend_; }  // its const queries (names, config) only

 private:
  struct Submission {
    uint64_t id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    Callback cb;
  };
  void run();
  void deliver(const std::vector<RequestUpdate>& updates);
  void fail_all(const std::string& why);
  void fail_submission(Submission& s, const std::string& why);  // its one final update
  void join();
  void publish();  // engine stats into stats_ (mu_ held)

  std::unique_ptr<Engine> engine_;  // touched only by the engine thread once it runs
  const Backend* backend_ = nullptr;
  EngineOptions opts_;
  int max_model_len_ = 0;

  // Engine-thread state.
  struct Live { uint64_t engine_id; Callback cb; };
  std::unordered_map<uint64_t, Live> live_;           // by public id
  std::unordered_map<uint64_t, uint64_t> public_id_;  // engine id -> public id

  mutable std::mutex mu_;
  std::condition_variable wake_;        // the engine thread waits here when idle
  std::condition_variable reset_done_cv_;
  std::deque<Submission> inbox_;
  std::vector<uint64_t> aborts_;
  int64_t in_transit_ = 0;  // taken from the inbox, not yet in stats_
  uint64_t next_id_ = 1;
  uint64_t reset_asked_ = 0, reset_done_ = 0;
  bool accepting_ = true, draining_ = false, stopping_ = false, has_work_ = false, exited_ = false;
  std::string failure_;
  std::function<void(const std::string&)> on_failure_;
  std::atomic<int64_t> step_began_ns_{0};  // steady_clock of the running step's start; 0: none
  EngineStats stats_;
  std::thread thread_;
  std::thread::id thread_id_;
};

}  // namespace verbatim
