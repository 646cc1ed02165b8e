#include "client/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>

#include "client/stats.h"
#include "client/svg_plot.h"
#include "client/table.h"
#include "client/workers.h"
#include "core/hash.h"

namespace verbatim::client {

namespace {

using Clients = std::vector<std::unique_ptr<HttpClient>>;

const char* server_letter(int s) { return s == 0 ? "A" : "B"; }

// 6.9, 0.74, 0.075: about two significant digits below 10 ms, as the seed page prints them.
std::string fmt_ms(double ms) {
  if (std::isnan(ms)) return "-";
  return fmt_fixed(ms, ms < 0.1 ? 3 : ms < 1 ? 2 : 1);
}

int prompts_per_run(const BenchOptions& o, int users) {
  return o.num_prompts > 0 ? o.num_prompts : std::max(16, 4 * users);
}

// A prompt's k-th repeat within a run, made distinct at its end, so it does not find its whole
// self in the prefix cache (the run's earlier copy would make its TTFT a cache hit's). Token-id
// prompts are left as they are (bench warns).
Prompt repeat_variant(Prompt p, size_t k) {
  if (k == 0) return p;
  const std::string tag = " (" + std::to_string(k + 1) + ")";
  if (p.kind == Prompt::Kind::Text) {
    p.text += tag;
  } else if (p.kind == Prompt::Kind::Messages && p.messages.is_array() && !p.messages.empty()) {
    json& last = p.messages.back();
    if (last.is_object() && last.contains("content") && last["content"].is_string())
      last["content"] = last["content"].get<std::string>() + tag;
  }
  return p;
}

}  // namespace

// The prompts of run `seed`: the set in an order of its own (or fresh synthetic ids), cycled to n,
// each repeat made distinct (repeat_variant).
std::vector<Prompt> prompts_for_run(const BenchOptions& o, int n, int seed) {
  if (o.input_len > 0) return synthetic_prompts(n, o.input_len, static_cast<uint64_t>(seed));
  std::vector<size_t> order(o.prompts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return hash_combine(static_cast<uint64_t>(seed), a) < hash_combine(static_cast<uint64_t>(seed), b);
  });
  std::vector<Prompt> out;
  for (int i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(i);
    out.push_back(repeat_variant(o.prompts[order[at % order.size()]], at / order.size()));
  }
  return out;
}

namespace {

void ensure_clients(Clients& clients, const Url& url, const ClientOptions& co, int n) {
  while (static_cast<int>(clients.size()) < n) clients.push_back(std::make_unique<HttpClient>(url, co));
}

json figures_json(const BenchFigures& f) {
  auto num = [](double v) { return std::isnan(v) ? json() : json(v); };
  return json{{"runs", f.runs},
              {"requests", f.requests},
              {"failed", f.failed},
              {"output_tokens", f.output_tokens},
              {"input_tokens", f.input_tokens},
              {"duration_s", num(f.duration_s)},
              {"median_tpot_ms", num(f.median_tpot_ms)},
              {"p99_tpot_ms", num(f.p99_tpot_ms)},
              {"median_itl_ms", num(f.median_itl_ms)},
              {"p99_itl_ms", num(f.p99_itl_ms)},
              {"median_ttft_ms", num(f.median_ttft_ms)},
              {"p99_ttft_ms", num(f.p99_ttft_ms)},
              {"output_tok_s", num(f.output_tok_s)},
              {"req_s", num(f.req_s)}};
}

BenchFigures figures_of(const std::vector<const BenchRun*>& runs) {
  BenchFigures f;
  std::vector<double> ttft, tpot, itl;
  for (const BenchRun* r : runs) {
    ++f.runs;
    f.requests += r->requests;
    f.failed += r->failed_requests();
    f.output_tokens += r->output_tokens;
    f.input_tokens += r->input_tokens;
    f.duration_s += r->duration_s;
    ttft.insert(ttft.end(), r->ttft_s.begin(), r->ttft_s.end());
    std::copy_if(r->tpot_s.begin(), r->tpot_s.end(), std::back_inserter(tpot), [](double x) { return !std::isnan(x); });
    itl.insert(itl.end(), r->itl_s.begin(), r->itl_s.end());
  }
  f.median_tpot_ms = median(tpot) * 1e3;
  f.p99_tpot_ms = percentile(tpot, 99) * 1e3;
  f.median_itl_ms = median(itl) * 1e3;
  f.p99_itl_ms = percentile(itl, 99) * 1e3;
  f.median_ttft_ms = median(ttft) * 1e3;
  f.p99_ttft_ms = percentile(ttft, 99) * 1e3;
  // Pooled, as vLLM's one-run figure: every token over every run's time (a mean of per-run rates
  // would weigh a fast run's rate as much as a slow one's over its longer time).
  f.output_tok_s = f.duration_s > 0 ? double(f.output_tokens) / f.duration_s : std::nan("");
  f.req_s = f.duration_s > 0 ? double(f.requests) / f.duration_s : std::nan("");
  return f;
}

// {"503": 12, "error_event": 1}: a run's failed requests by HTTP status.
json failed_json(const BenchRun& r) {
  json j = json::object();
  for (const auto& [status, n] : r.failed) j[status ? std::to_string(status) : std::string("error_event")] = n;
  return j;
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// "58% lower" / "12% higher" for B's throughput against A's.
std::string change_pct(double a, double b) {
  if (!(a > 0) || std::isnan(b)) return "-";
  double pct = (1.0 - b / a) * 100.0;
  if (std::fabs(pct) < 0.5) return "same";
  return fmt_fixed(std::fabs(pct), 0) + "% " + (pct > 0 ? "lower" : "higher");
}

}  // namespace

int BenchRun::failed_requests() const {
  int n = 0;
  for (const auto& [status, k] : failed) n += k;
  return n;
}

BenchFigures BenchRun::figures() const { return figures_of({this}); }

BenchFigures BenchReport::pooled(int server, int u, int round) const {
  std::vector<const BenchRun*> sel;
  for (const auto& r : runs)
    if (r.server == server && r.users == u && (round == 0 || r.round == round)) sel.push_back(&r);
  return figures_of(sel);
}

BenchReport run_bench(const BenchOptions& o, Progress& progress) {
  if (o.users.empty()) throw Error("--users needs at least one number");
  for (int u : o.users)
    if (u < 1 || u > 4096) throw Error("--users values must be between 1 and 4096, not " + std::to_string(u));
  if (o.seeds < 1) throw Error("--seeds must be at least 1");
  if (o.input_len <= 0 && o.prompts.empty()) throw Error("no prompts to send");

  BenchReport rep;
  rep.users = o.users;
  std::vector<std::string> urls = {o.url};
  if (!o.vs_url.empty()) urls.push_back(o.vs_url);
  int max_users = *std::max_element(o.users.begin(), o.users.end());
  std::vector<Clients> clients(urls.size());
  std::vector<std::unique_ptr<CacheResetter>> resetters;
  std::vector<SamplingOptions> sampling(urls.size(), o.sampling);
  std::vector<ServerFeatures> features(urls.size());

  for (size_t s = 0; s < urls.size(); ++s) {
    Url url = parse_url(urls[s]);
    ensure_clients(clients[s], url, o.client, 1);
    ServerInfo info = discover_server(*clients[s][0], o.sampling.model);
    if (s > 0 && info.models.is_null()) info = discover_server(*clients[s][0], "");
    sampling[s].model = info.model;
    // One short request first: learns the API's options and takes any lazy start-up off the clock.
    SamplingOptions warm = sampling[s];
    warm.max_tokens = std::min(warm.max_tokens, 4);
    std::vector<Prompt> first = prompts_for_run(o, 1, 1);
    for (const auto& p : first) route_for(p, sampling[s]);
    Output out = probe_features(*clients[s][0], first[0], warm, features[s]);
    info.saw_fingerprint(out.fingerprint);
    features[s].logprobs = false;  // bench never asks for logprobs: they cost time on some servers
    resetters.push_back(std::make_unique<CacheResetter>(*clients[s][0]));
    ensure_clients(clients[s], url, o.client, max_users);
    rep.servers.push_back(std::move(info));
  }

  // The seed page's order: A, B, A again, each with every seed, then the next number of users.
  std::vector<std::pair<int, int>> turns = {{0, 1}};
  if (urls.size() > 1) turns = {{0, 1}, {1, 1}, {0, 2}};
  int total_runs = static_cast<int>(o.users.size() * turns.size()) * o.seeds, run_no = 0;
  // Per server, requests whose stream says less than the figures need: tokens counted from chunks,
  // a usage that disagreed with the token ids, more tokens than --max-tokens, fewer under
  // --ignore-eos, or every token in one event.
  struct Oddities {
    int chunk_counted = 0, usage_disagreed = 0, over_max = 0, short_of_exact = 0, one_event = 0;
  };
  std::vector<Oddities> odd(urls.size());
  for (int u : o.users)
    for (auto [srv, round] : turns)
      for (int seed = 1; seed <= o.seeds; ++seed) {
        ++run_no;
        BenchRun run;
        run.server = srv;
        run.round = round;
        run.users = u;
        run.seed = seed;
        run.cache_reset = resetters[static_cast<size_t>(srv)]->reset();
        for (auto& w : resetters[static_cast<size_t>(srv)]->take_warnings()) {
          progress.note("warning: " + w);
          rep.warnings.push_back(w);
        }
        SamplingOptions s = sampling[static_cast<size_t>(srv)];
        if (s.temperature > 0) s.seed = o.sampling.seed.value_or(0) + seed;
        int n = prompts_per_run(o, u);
        std::vector<Prompt> prompts = prompts_for_run(o, n, seed);
        std::vector<StreamTiming> timings(static_cast<size_t>(n));
        std::vector<std::optional<ClientError>> failures(static_cast<size_t>(n));
        std::string label = "bench " + std::to_string(run_no) + "/" + std::to_string(total_runs) + ": " +
                            server_letter(srv) + " " + rep.servers[static_cast<size_t>(srv)].url.label() + ", " +
                            std::to_string(u) + (u == 1 ? " user" : " users") + ", seed " + std::to_string(seed);
        progress.start(label, n);
        auto t0 = std::chrono::steady_clock::now();
        Clients& cs = clients[static_cast<size_t>(srv)];
        const ServerFeatures& f = features[static_cast<size_t>(srv)];
        run_users(
            u, n,
            [&](int user, int i) {
              try {
                timings[static_cast<size_t>(i)] = generate_streaming(*cs[static_cast<size_t>(user)], prompts[static_cast<size_t>(i)], s, f);
              } catch (const ClientError& e) {
                if (e.kind() != FailureKind::HttpStatus && e.kind() != FailureKind::ErrorEvent) throw;
                failures[static_cast<size_t>(i)] = e;  // the server answered: a failed request, not a broken bench
              }
            },
            [&](int done) { progress.update(done); });
        run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (size_t i = 0; i < timings.size(); ++i) {
          if (failures[i]) {
            const int status = failures[i]->status();
            ++run.failed[status];
            run.failed_message.emplace(status, failures[i]->what());
            continue;
          }
          const StreamTiming& t = timings[i];
          ++run.requests;
          run.output_tokens += t.completion_tokens;
          run.input_tokens += t.prompt_tokens;
          run.request_output_tokens.push_back(t.completion_tokens);
          Oddities& od = odd[static_cast<size_t>(srv)];
          od.chunk_counted += t.tokens_from_chunks;
          od.usage_disagreed += t.usage_disagrees;
          od.over_max += t.completion_tokens > s.max_tokens;
          od.short_of_exact += s.ignore_eos && t.completion_tokens < s.max_tokens;
          run.e2e_s.push_back(t.end_s);
          if (t.first_token_s >= 0) run.ttft_s.push_back(t.first_token_s);
          // TPOT leaves the first token out: it measures decoding, TTFT measures the prefill.
          const bool has_tpot = t.completion_tokens > 1 && t.last_token_s > t.first_token_s;
          run.tpot_s.push_back(has_tpot ? (t.last_token_s - t.first_token_s) / double(t.completion_tokens - 1)
                                        : std::numeric_limits<double>::quiet_NaN());
          od.one_event += !has_tpot && t.completion_tokens > 1;  // tokens, but no span to divide
          for (size_t k = 1; k < t.chunk_s.size(); ++k) run.itl_s.push_back(t.chunk_s[k] - t.chunk_s[k - 1]);
          rep.servers[static_cast<size_t>(srv)].saw_fingerprint(t.fingerprint);
        }
        BenchFigures fig = run.figures();
        progress.finish(std::to_string(n) + " requests" + (fig.failed > 0 ? " (" + std::to_string(fig.failed) + " failed)" : "") +
                        " in " + fmt_fixed(run.duration_s, 1) + " s, median TPOT " +
                        fmt_ms(fig.median_tpot_ms) + " ms, " + fmt_count(fig.output_tok_s) + " output tok/s");
        rep.runs.push_back(std::move(run));
      }
  for (size_t srv = 0; srv < urls.size(); ++srv) {
    const Oddities& od = odd[srv];
    const std::string who = std::string("server ") + server_letter(int(srv));
    if (od.chunk_counted > 0)
      rep.warnings.push_back(who + " reported no usage and no token ids in its streams: output tokens were counted as "
                                   "streamed chunks (a chunk may hold several tokens), so its TPOT and tok/s may be off");
    if (od.usage_disagreed > 0)
      rep.warnings.push_back(who + "'s usage.completion_tokens disagreed with the token ids it streamed in " +
                             std::to_string(od.usage_disagreed) + " requests: the token ids were counted");
    if (od.over_max > 0)
      rep.warnings.push_back(who + " returned more tokens than --max-tokens (" + std::to_string(o.sampling.max_tokens) +
                             ") in " + std::to_string(od.over_max) + " requests: it ignores max_tokens, so runs differ in work");
    if (od.short_of_exact > 0)
      rep.warnings.push_back(who + " returned fewer than " + std::to_string(o.sampling.max_tokens) + " tokens in " +
                             std::to_string(od.short_of_exact) +
                             " requests though --ignore-eos asked for exactly that many: it may ignore ignore_eos");
    if (od.one_event > 0)
      rep.warnings.push_back(who + " sent all the tokens of " + std::to_string(od.one_event) +
                             " requests in one event: they have no TPOT, and the TPOT figures are over the others");
  }
  for (const BenchRun& r : rep.runs) {
    const int failed = r.failed_requests();
    if (failed == 0) continue;
    std::string by;
    for (const auto& [status, k] : r.failed)
      by += std::string(by.empty() ? "" : ", ") + (status ? "HTTP " + std::to_string(status) : std::string("error event")) +
            ": " + std::to_string(k);
    rep.warnings.push_back(std::string("server ") + server_letter(r.server) + ", " + std::to_string(r.users) +
                           (r.users == 1 ? " user" : " users") + ", seed " + std::to_string(r.seed) +
                           (r.round > 1 ? " (round 2)" : "") + ": " + std::to_string(failed) + " of " +
                           std::to_string(failed + r.requests) + " requests failed (" + by +
                           "); its figures are over the " + std::to_string(r.requests) + " that were answered. For example: " +
                           r.failed_message.begin()->second);
  }
  if (std::any_of(rep.runs.begin(), rep.runs.end(), [](const BenchRun& r) { return !r.cache_reset; }))
    rep.warnings.push_back("a cache reset failed before some runs (see above): those runs may have hit a warm cache");
  for (int u : o.users)
    if (prompts_per_run(o, u) < u) {
      rep.warnings.push_back("--num-prompts " + std::to_string(prompts_per_run(o, u)) + " is below " + std::to_string(u) +
                             " users: at most " + std::to_string(prompts_per_run(o, u)) + " requests were in flight in those runs");
      break;
    }
  if (o.input_len <= 0 && prompts_per_run(o, max_users) > int(o.prompts.size()))
    for (const Prompt& p : o.prompts)
      if (p.kind == Prompt::Kind::TokenIds) {
        rep.warnings.push_back("token-id prompts repeat within a run (more requests than prompts): a repeat can "
                               "find its whole prompt in the prefix cache");
        break;
      }
  for (const auto& r : rep.runs)
    if (std::all_of(r.request_output_tokens.begin(), r.request_output_tokens.end(), [](int64_t n) { return n <= 1; })) {
      rep.warnings.push_back("no request produced two or more tokens in some runs: TPOT is undefined there "
                             "(raise --max-tokens or pass --ignore-eos)");
      break;
    }
  return rep;
}

std::string BenchReport::header(const BenchOptions& o) const {
  std::string h;
  for (size_t s = 0; s < servers.size(); ++s) {
    const auto& i = servers[s];
    std::string fp = i.fingerprints.empty() ? "(none)" : i.fingerprints.front();
    h += std::string(server_letter(int(s))) + "  " + i.url.text() + "  model " + i.model + "  system_fingerprint " + fp + "\n";
  }
  std::string prompts = o.input_len > 0 ? std::to_string(o.input_len) + "-token synthetic prompts" : o.prompt_source + " prompts";
  std::string per_run = o.num_prompts > 0 ? std::to_string(o.num_prompts) : "max(16, 4 x users)";
  h += "runs  " + prompts + ", " + per_run + " requests per run, " + (o.sampling.ignore_eos ? "exactly " : "up to ") +
       std::to_string(o.sampling.max_tokens) +
       " tokens, " + (o.sampling.temperature == 0 ? "greedy" : "temperature " + fmt_fixed(o.sampling.temperature, 2)) +
       ", " + std::to_string(o.seeds) + (o.seeds == 1 ? " seed" : " seeds") + ", cache reset before each run" +
       (servers.size() > 1 ? ", order A, B, A" : "") + "\n";
  return h;
}

namespace {
// "3 of 16": a row's failed requests of all it sent.
std::string failed_of(const BenchFigures& f) {
  return std::to_string(f.failed) + " of " + std::to_string(f.failed + f.requests);
}
}  // namespace

std::string BenchReport::table() const {
  std::string out;
  // Each server's figures per users row, pooled over its rounds once for both tables. The figures
  // are over the answered requests; where a server failed some, a column says how many of each
  // row's were failed, so a fast row that was mostly refusals does not read as fast.
  std::vector<std::vector<BenchFigures>> rows(servers.size());
  std::vector<bool> any_failed(servers.size(), false);
  for (size_t s = 0; s < servers.size(); ++s)
    for (int u : users) {
      rows[s].push_back(pooled(int(s), u));
      any_failed[s] = any_failed[s] || rows[s].back().failed > 0;
    }
  if (servers.size() > 1) {
    const bool ab_failed = any_failed[0] || any_failed[1];
    std::vector<std::string> head = {"users", "median TPOT A / B", "output tok/s A / B", "median TTFT A / B",
                                     "A again (tok/s)"};
    if (ab_failed) head.push_back("failed A / B");
    TextTable t(head);
    for (size_t k = 0; k < users.size(); ++k) {
      const int u = users[k];
      const BenchFigures &a = rows[0][k], &b = rows[1][k];
      BenchFigures a1 = pooled(0, u, 1), a2 = pooled(0, u, 2);
      std::vector<std::string> row = {
          std::to_string(u),
          fmt_ms(a.median_tpot_ms) + " / " + fmt_ms(b.median_tpot_ms) + " ms (" +
              fmt_ratio(b.median_tpot_ms / a.median_tpot_ms) + ")",
          fmt_count(a.output_tok_s) + " / " + fmt_count(b.output_tok_s) + " (" + change_pct(a.output_tok_s, b.output_tok_s) + ")",
          fmt_ms(a.median_ttft_ms) + " / " + fmt_ms(b.median_ttft_ms) + " ms", change_pct(a1.output_tok_s, a2.output_tok_s)};
      if (ab_failed) row.push_back(failed_of(a) + " / " + failed_of(b));
      t.add(row);
    }
    out += t.str() + "\n";
  }
  for (size_t s = 0; s < servers.size(); ++s) {
    if (servers.size() > 1) out += std::string(server_letter(int(s))) + ": " + servers[s].url.label() + "\n";
    std::vector<std::string> head = {"users",       "median TPOT", "p99 TPOT", "median ITL", "p99 ITL", "median TTFT",
                                     "p99 TTFT",    "output tok/s", "req/s"};
    if (any_failed[s]) head.push_back("failed");
    TextTable t(head);
    for (size_t k = 0; k < users.size(); ++k) {
      const BenchFigures& f = rows[s][k];
      std::vector<std::string> row = {std::to_string(users[k]),      fmt_ms(f.median_tpot_ms) + " ms",
                                      fmt_ms(f.p99_tpot_ms) + " ms", fmt_ms(f.median_itl_ms) + " ms",
                                      fmt_ms(f.p99_itl_ms) + " ms",  fmt_ms(f.median_ttft_ms) + " ms",
                                      fmt_ms(f.p99_ttft_ms) + " ms", fmt_count(f.output_tok_s),
                                      fmt_fixed(f.req_s, 2)};
      if (any_failed[s]) row.push_back(failed_of(f));
      t.add(row);
    }
    out += t.str();
    if (s + 1 < servers.size()) out += "\n";
  }
  for (const auto& w : warnings) out += "warning: " + w + "\n";
  return out;
}

json BenchReport::to_json(const BenchOptions& o) const {
  json j;
  j["tool"] = "verbatim bench";
  j["created"] = now_iso();
  json cfg;
  cfg["url"] = o.url;
  if (!o.vs_url.empty()) cfg["vs"] = o.vs_url;
  cfg["users"] = users;
  cfg["max_tokens"] = o.sampling.max_tokens;
  cfg["temperature"] = o.sampling.temperature;
  cfg["chat"] = o.sampling.chat;
  cfg["ignore_eos"] = o.sampling.ignore_eos;
  cfg["input_len"] = o.input_len > 0 ? json(o.input_len) : json();
  cfg["prompt_source"] = o.input_len > 0 ? std::string("synthetic") : o.prompt_source;
  cfg["num_prompts"] = o.num_prompts > 0 ? json(o.num_prompts) : json("max(16, 4 x users)");
  cfg["seeds"] = o.seeds;
  cfg["order"] = servers.size() > 1 ? "A, B, A" : "A";
  j["config"] = cfg;
  json sv = json::array();
  for (size_t s = 0; s < servers.size(); ++s)
    sv.push_back(json{{"label", server_letter(int(s))}, {"url", servers[s].url.text()}, {"model", servers[s].model},
                      {"system_fingerprints", servers[s].fingerprints}, {"version", servers[s].version}});
  j["servers"] = sv;
  json runs_j = json::array();
  for (const auto& r : runs) {
    auto ms = [](const std::vector<double>& v) {
      json a = json::array();
      for (double x : v) a.push_back(std::isnan(x) ? json() : json(x * 1e3));
      return a;
    };
    runs_j.push_back(json{{"server", server_letter(r.server)},
                          {"round", r.round},
                          {"users", r.users},
                          {"seed", r.seed},
                          {"cache_reset", r.cache_reset},
                          {"figures", figures_json(r.figures())},
                          {"ttft_ms", ms(r.ttft_s)},
                          {"tpot_ms", ms(r.tpot_s)},  // per request, in order; null: no TPOT
                          {"e2e_ms", ms(r.e2e_s)},
                          {"output_tokens", r.request_output_tokens},
                          {"failed", failed_json(r)}});
  }
  j["runs"] = runs_j;
  json summary = json::array();
  for (int u : users) {
    json row;
    row["users"] = u;
    row["A"] = figures_json(pooled(0, u));
    if (servers.size() > 1) {
      BenchFigures a = pooled(0, u), b = pooled(1, u);
      row["B"] = figures_json(b);
      row["tpot_ratio_b_over_a"] = a.median_tpot_ms > 0 ? json(b.median_tpot_ms / a.median_tpot_ms) : json();
      row["output_tok_s_ratio_b_over_a"] = a.output_tok_s > 0 ? json(b.output_tok_s / a.output_tok_s) : json();
      BenchFigures a1 = pooled(0, u, 1), a2 = pooled(0, u, 2);
      row["a_round2_over_round1_tok_s"] = a1.output_tok_s > 0 ? json(a2.output_tok_s / a1.output_tok_s) : json();
    }
    summary.push_back(row);
  }
  j["summary"] = summary;
  j["warnings"] = warnings;
  return j;
}

std::string BenchReport::svg() const {
  PlotPanel tpot{"median time per output token", "concurrent users", "ms per token", {}};
  PlotPanel tput{"output throughput", "concurrent users", "output tokens per second", {}};
  for (size_t s = 0; s < servers.size(); ++s) {
    std::string name = std::string(server_letter(int(s))) + ": " + servers[s].url.label() + " (" + servers[s].model + ")";
    PlotSeries a{name, {}}, b{name, {}};
    for (int u : users) {
      BenchFigures f = pooled(int(s), u);
      a.points.push_back({double(u), f.median_tpot_ms});
      b.points.push_back({double(u), f.output_tok_s});
    }
    tpot.series.push_back(a);
    tput.series.push_back(b);
  }
  return svg_line_charts("verbatim bench", {tpot, tput});
}

}  // namespace verbatim::client
