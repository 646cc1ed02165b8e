// POST /v1/completions and /v1/chat/completions: parse, submit every choice to the engine thread,
// then either wait for all of them (one JSON answer) or stream SSE chunks as updates arrive.
// The engine's callbacks only queue updates here; all text, stop-string and JSON work happens on
// the HTTP thread, so the engine thread never waits for a client.
#include <httplib.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "server/access_log.h"
#include "server/job.h"
#include "server/peer_watch.h"
#include "server/server_state.h"

namespace verbatim::server {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);  // how often a silent client is checked

// An update handed from the engine thread to the HTTP thread, stamped when the engine made it:
// latencies are timed there, as vLLM V1 times them in its engine core, so updates a busy HTTP
// thread picks up together do not record ~0 s between their tokens (and skew the histogram low).
struct Delivered {
  size_t choice;
  RequestUpdate update;
  Clock::time_point at;
};

struct Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Delivered> updates;
};

class GenerationRun {
 public:
  GenerationRun(ServerState& st, Job job, ResponseMeta meta, PeerWatch watch, Clock::time_point arrival)
      : st_(st), engine_(*st.rt->async_engine), job_(std::move(job)), meta_(std::move(meta)), watch_(watch),
        arrival_(arrival), mailbox_(std::make_shared<Mailbox>()), last_token_(job_.choices().size()) {
    ++st_.in_flight;
  }
  ~GenerationRun() {
    abort_unfinished();
    --st_.in_flight;
  }

  // Submits every choice at once: a refusal (a prompt too long, the queue full) refuses them all
  // before any runs or is counted.
  void submit() {
    auto& choices = job_.choices();
    std::vector<AsyncEngine::NewRequest> all;
    for (size_t i = 0; i < choices.size(); ++i) {
      auto box = mailbox_;
      auto cb = [box, i](const RequestUpdate& u) {
        const Clock::time_point at = Clock::now();
        std::lock_guard l(box->mu);
        box->updates.push_back({i, u, at});
        box->cv.notify_one();
      };
      all.push_back({job_.prompts()[choices[i].prompt].ids, job_.params(choices[i]), cb});
    }
    const std::vector<uint64_t> ids = engine_.submit_all(std::move(all), job_.request().n > 1 ? "n" : "prompt");
    for (size_t i = 0; i < choices.size(); ++i) choices[i].engine_id = ids[i];
    submitted_ = choices.size();
  }

  enum class Pump { Progress, Idle, Gone, Hung };
  // Waits up to kPollInterval for updates and applies them; SSE events go to `sse` when given.
  Pump pump(std::vector<std::string>* sse) {
    std::deque<Delivered> batch;
    {
      std::unique_lock l(mailbox_->mu);
      mailbox_->cv.wait_for(l, kPollInterval, [&] { return !mailbox_->updates.empty(); });
      batch.swap(mailbox_->updates);
    }
    if (watch_.gone()) return Pump::Gone;
    if (batch.empty()) return st_.engine_hung ? Pump::Hung : Pump::Idle;  // hung: nothing more will come
    for (const Delivered& d : batch) apply(d.choice, d.update, d.at, sse);
    return Pump::Progress;
  }

  bool done() const { return job_.all_finished(); }
  // The engine will not answer (hung): every unfinished choice ends now with `why` as the error,
  // as a failed step's final updates end them.
  void fail_unfinished(const std::string& why, std::vector<std::string>* sse) {
    for (size_t i = 0; i < job_.choices().size(); ++i)
      if (!job_.choices()[i].state.finished()) {
        RequestUpdate u;
        u.finished = true;
        u.reason = FinishReason::Abort;
        u.error = why;
        apply(i, u, Clock::now(), sse);
      }
  }
  const std::string& error() const { return error_; }
  Job& job() { return job_; }
  const ResponseMeta& meta() const { return meta_; }

  void abort_unfinished() {
    for (size_t i = 0; i < submitted_; ++i) {
      auto& c = job_.choices()[i];
      if (!aborted_.count(i) && !(c.state.finished() && !c.state.needs_abort())) {
        engine_.abort(c.engine_id);
        aborted_.insert(i);
        if (!c.state.finished()) {  // nobody reads its last update: counted here
          st_.metrics->request_finished("abort");
          st_.metrics->observe_e2e(std::chrono::duration<double>(Clock::now() - arrival_).count());
        }
      }
    }
  }

 private:
  void apply(size_t i, const RequestUpdate& u, Clock::time_point now, std::vector<std::string>* sse) {
    auto& c = job_.choices()[i];
    if (!u.error.empty() && error_.empty()) error_ = u.error;
    bool was_finished = c.state.finished();
    ChoiceState::Delta d = c.state.apply(u);
    if (d.num_tokens > 0) {
      std::chrono::duration<double> since = now - (last_token_[i] ? *last_token_[i] : arrival_);
      if (!last_token_[i]) st_.metrics->observe_ttft(since.count());
      else st_.metrics->observe_inter_token(since.count());
      last_token_[i] = now;
    }
    if (c.state.needs_abort()) {  // a stop string ended it: free its KV now
      engine_.abort(c.engine_id);
      aborted_.insert(i);
      c.state.engine_done();
    }
    if (d.finished && !was_finished) {
      const char* r = job_.shown_finish_reason(c);
      // Per choice, as vLLM V1 counts each of n as a request: e2e's count equals the finished count.
      st_.metrics->request_finished(r ? r : "abort");
      st_.metrics->observe_e2e(std::chrono::duration<double>(now - arrival_).count());
    }
    if (sse)
      for (const json& j : job_.chunks(meta_, c, d)) sse->push_back(event(j));
  }

 public:
  static std::string event(const json& j) {
    return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  }

 private:
  ServerState& st_;
  AsyncEngine& engine_;
  Job job_;
  ResponseMeta meta_;
  PeerWatch watch_;
  Clock::time_point arrival_;
  std::shared_ptr<Mailbox> mailbox_;
  std::vector<std::optional<Clock::time_point>> last_token_;
  size_t submitted_ = 0;
  std::set<size_t> aborted_;
  std::string error_;
};

// What the access log says of this request (access_log.h): id, tokens, the choices' finishes.
GenerationNote access_note_of(GenerationRun& run, bool client_gone) {
  GenerationNote n;
  n.id = run.meta().id;
  const Usage u = run.job().usage();
  n.prompt_tokens = u.prompt_tokens;
  n.completion_tokens = u.completion_tokens;
  n.cached_tokens = u.cached_tokens;
  n.stream = run.job().request().stream;
  n.client_gone = client_gone;
  std::vector<std::string> seen;
  for (const auto& c : run.job().choices()) {
    const char* r = run.job().shown_finish_reason(c);
    std::string reason = r ? r : "abort";
    if (std::find(seen.begin(), seen.end(), reason) == seen.end()) seen.push_back(reason);
  }
  for (const auto& r : seen) n.finish += (n.finish.empty() ? "" : "+") + r;
  return n;
}

}  // namespace

void handle_generation(ServerState& st, const httplib::Request& req, httplib::Response& res, bool chat) {
  auto arrival = Clock::now();
  Runtime& rt = st.runtime();
  request_json body = parse_body(req.body);
  st.check_model(body);
  Job job = chat ? Job::chat(parse_chat_request(body, rt.defaults), rt.limits)
                 : Job::completion(parse_completion_request(body, rt.defaults), rt.limits);
  ResponseMeta meta{st.new_id(chat ? "chatcmpl-" : "cmpl-"), Runtime::now(), rt.model_name(), rt.fingerprint};
  auto run = std::make_shared<GenerationRun>(st, std::move(job), meta,
                                             PeerWatch(req.local_addr, req.local_port, req.remote_addr, req.remote_port),
                                             arrival);
  if (st.engine_hung) throw HttpError(503, st.dead_reason() + "; this server is exiting");
  run->submit();  // QueueFull, ShuttingDown, EngineFailed: 503s (server.cpp, guarded)

  if (!run->job().request().stream) {
    while (!run->done()) {
      const GenerationRun::Pump p = run->pump(nullptr);
      if (p == GenerationRun::Pump::Gone) {
        run->abort_unfinished();  // nobody will read the answer
        access_note(access_note_of(*run, true));
        res.status = 499;  // nginx's "client closed request", for the access log: nothing is sent
        return;
      }
      if (p == GenerationRun::Pump::Hung) run->fail_unfinished(st.dead_reason(), nullptr);  // the 500 below
    }
    access_note(access_note_of(*run, false));
    if (!run->error().empty()) throw HttpError(500, "the engine failed this request: " + run->error());
    send_json(res, run->job().response(run->meta()));
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto closed = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [&st, run, closed](size_t, httplib::DataSink& sink) {  // st outlives every connection (serve())
        if (*closed) return false;
        std::vector<std::string> events;
        auto r = run->pump(&events);
        if (r == GenerationRun::Pump::Hung) run->fail_unfinished(st.dead_reason(), &events);
        // The content provider runs on the request's HTTP thread, where the access log reads the note.
        auto gone = [&run] {
          access_note(access_note_of(*run, true));
          return false;  // cancel: the releaser below aborts what still runs
        };
        for (const auto& e : events)
          if (!sink.write(e.data(), e.size())) return gone();
        if (r == GenerationRun::Pump::Gone) return gone();
        if (run->done()) {
          access_note(access_note_of(*run, false));
          std::string tail;
          if (!run->error().empty()) {
            const std::string message = "the engine failed this request: " + run->error();
            tail += GenerationRun::event(error_json(500, message));
            access_note_error(message);  // the access line shows it beside the 200 sent first
          }
          if (run->job().request().include_usage)
            tail += GenerationRun::event(usage_chunk(run->meta(), run->job().chunk_object(), run->job().usage()));
          tail += "data: [DONE]\n\n";
          if (!sink.write(tail.data(), tail.size())) return gone();
          *closed = true;
          sink.done();
        }
        return true;
      },
      [run](bool success) {
        if (!success) run->abort_unfinished();  // disconnect mid-stream: free its blocks
      });
}

}  // namespace verbatim::server
