#include "client/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <memory>
#include <set>

#include "client/table.h"
#include "client/workers.h"

namespace verbatim::client {

namespace {

using Clients = std::vector<std::unique_ptr<HttpClient>>;

void ensure_clients(Clients& clients, const Url& url, const ClientOptions& co, int n) {
  while (static_cast<int>(clients.size()) < n) clients.push_back(std::make_unique<HttpClient>(url, co));
}

// An echoed answer's logprobs start with the prompt's: a null first (OpenAI, vLLM) or more entries
// than generated tokens.
bool echoes_prompt(const Output& o) {
  if (!o.has_logprobs || o.logprobs.empty()) return false;
  return std::isnan(o.logprobs[0]) || (o.completion_tokens >= 0 && o.logprobs.size() > size_t(o.completion_tokens));
}

// One answer, held to what the probe found: a server whose later answers drop the token ids, the
// logprobs or the echoed prompt would otherwise be compared on less than the header says (two
// empty answers compare equal).
Output generate_as_probed(HttpClient& c, const Prompt& p, const SamplingOptions& s, const ServerFeatures& f) {
  Output out = generate(c, p, s, f);
  // A prompt file may mix routes, and a server's answers differ by route (llama.cpp's completions
  // carry logprobs as chat's do): hold only the probe's route to what the probe found.
  if (route_for(p, s) != f.route) return out;
  auto lacks = [&](const std::string& what) {
    return ClientError(FailureKind::BadAnswer, 0,
                       "an answer from " + c.url().text() + " has no " + what +
                           ", though the server's first answer had them: its answers are not comparable");
  };
  if (f.token_ids && !out.has_token_ids) throw lacks("token ids");
  if (f.logprobs && !out.has_logprobs) throw lacks("logprobs");
  if (s.echo && !echoes_prompt(out)) throw lacks("prompt logprobs (echo)");
  return out;
}

// One pass over the prompt set by `users` concurrent clients (1: one after another).
std::vector<Output> run_set(const std::string& label, const CheckOptions& o, const SamplingOptions& s,
                            const ServerFeatures& f, int users, Clients& clients, ServerInfo& info,
                            Progress& progress) {
  ensure_clients(clients, info.url, o.client, users);
  std::vector<Output> outputs(o.prompts.size());
  auto t0 = std::chrono::steady_clock::now();
  progress.start(label, static_cast<int>(o.prompts.size()));
  // A resend waits up to 30 s: say once per run why the bar stalls (from this thread, which owns
  // the progress output).
  const int resends_before = o.client.tally ? o.client.tally->total() : 0;
  bool resends_noted = false;
  auto note_resends = [&] {
    if (resends_noted || !o.client.tally || o.client.tally->total() == resends_before) return;
    resends_noted = true;
    progress.note("note: the server refused requests for now (HTTP 429 / 503); sending them again after a wait "
                  "(--retries " + std::to_string(o.client.retries) + ")");
  };
  run_users(
      users, static_cast<int>(o.prompts.size()),
      [&](int u, int i) {
        outputs[static_cast<size_t>(i)] = generate_as_probed(*clients[static_cast<size_t>(u)], o.prompts[static_cast<size_t>(i)], s, f);
      },
      [&](int done) {
        note_resends();
        progress.update(done);
      });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& out : outputs) info.saw_fingerprint(out.fingerprint);
  const int resent = o.client.tally ? o.client.tally->total() - resends_before : 0;
  progress.finish(std::to_string(outputs.size()) + " prompts in " + fmt_fixed(secs, 1) + " s" +
                  (resent > 0 ? ", " + std::to_string(resent) + " resent after a refusal" : ""));
  return outputs;
}

std::string cause_for(const CheckRow& row, const CheckReport& r) {
  if (row.kind == "flushed_repeat") return "earlier requests change it";
  if (row.kind == "warm_cache") return "the prefix cache causes it";
  if (row.kind == "users") return r.cache_reset ? "the batch causes it" : "the batch or the unreset cache causes it";
  if (row.kind == "compare_url")
    return r.compare_diff.empty() ? "the servers differ, though they report the same fingerprint and version"
                                  : "the servers differ: " + r.compare_diff;
  if (row.kind == "against")
    return r.against_diff.empty() ? "the outputs changed since the record, though the fingerprint and version did not"
                                  : "the server changed since the record: " + r.against_diff;
  return "the setup causes it";
}

std::string verdict_for(const CheckRow& row, const CheckReport& r) {
  bool logprobs = r.features.logprobs;
  if (!row.differs()) return logprobs ? "same tokens and logprobs" : "same tokens";
  std::string what;
  if (row.diff.token_diffs.empty())
    what = row.diff.logprob_only.empty() ? "same tokens, text or finish_reason differs; " : "same tokens, logprob bits differ; ";
  if (!row.alone_unstable.empty())
    return what + "not reproducible even alone: " + std::to_string(row.alone_unstable.size()) + " of " +
           std::to_string(row.alone_tested.size()) + " prompts differ when sent alone twice";
  if (row.alone_tested.empty()) return what + cause_for(row, r);
  return what + cause_for(row, r) + " (each prompt alone twice matches)";
}

std::string fmt_position(double p) {
  if (std::isnan(p)) return "-";
  return std::fabs(p - std::round(p)) < 1e-9 ? std::to_string(std::lround(p)) : fmt_fixed(p, 1);
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

json sampling_json(const SamplingOptions& s) {
  json j;
  j["model"] = s.model;
  j["max_tokens"] = s.max_tokens;
  j["temperature"] = s.temperature;
  j["seed"] = s.seed ? json(*s.seed) : json();
  j["chat"] = s.chat;
  j["ignore_eos"] = s.ignore_eos;
  j["echo"] = s.echo;
  return j;
}

json info_json(const ServerInfo& i) {
  return json{{"url", i.url.text()}, {"model", i.model},      {"system_fingerprints", i.fingerprints},
              {"version", i.version}, {"model_card", i.models}, {"describe", i.describe()}};
}

}  // namespace

CheckReport run_check(const CheckOptions& o, Progress& progress) {
  if (o.prompts.empty()) throw Error("no prompts to send");
  CheckReport r;
  Url url = parse_url(o.url);
  Clients clients;
  ensure_clients(clients, url, o.client, 1);
  HttpClient& c = *clients[0];
  r.server = discover_server(c, o.sampling.model);
  SamplingOptions s = o.sampling;
  s.model = r.server.model;
  for (const auto& p : o.prompts) route_for(p, s);  // fail before sending anything

  CacheResetter resetter(c);
  auto reset = [&] {
    bool ok = resetter.reset();
    for (auto& w : resetter.take_warnings()) {
      progress.note("warning: " + w);
      r.warnings.push_back(w);
    }
    return ok;
  };
  const Output probe = probe_features(c, o.prompts[0], s, r.features);
  if (s.echo && !echoes_prompt(probe))
    throw Error("--echo: the server's answer carries no prompt logprobs (it ignores echo or sends no logprobs), so "
                "there is nothing more to compare than without --echo");
  if (!r.features.token_ids)
    r.warnings.push_back(r.features.logprobs
                             ? "the server does not return token ids (return_token_ids): comparing logprobs' token strings"
                             : "the server returns neither token ids nor logprobs: comparing the text's bytes");

  r.users = std::max(1, std::min(o.users, static_cast<int>(o.prompts.size())));
  if (r.users < 2)
    r.warnings.push_back(o.prompts.size() < 2 ? std::string("one prompt, so nothing ran at once: the users row compares two runs one after another")
                                              : std::string("--users 1: nothing ran at once: the users row compares two runs one after another"));
  reset();
  r.runs.emplace_back("fresh", run_set("check: fresh run after a cache reset", o, s, r.features, 1, clients, r.server, progress));
  r.runs.emplace_back("warm", run_set("check: repeat against the warm cache", o, s, r.features, 1, clients, r.server, progress));
  // Not vacuous: equal outputs prove nothing when every prompt gets the same answer.
  if (const auto& fresh = r.run("fresh"); fresh.size() > 1 &&
      std::all_of(fresh.begin() + 1, fresh.end(), [&](const Output& x) { return !compare_outputs(fresh[0], x).differs(); }))
    r.warnings.push_back("all " + std::to_string(fresh.size()) +
                         " prompts got the same answer: the server's output does not depend on the prompt, so equal "
                         "outputs prove little");
  // The probe's answer (before any reset) is one more answer to prompt 0.
  if (compare_outputs(probe, r.run("fresh")[0]).differs())
    r.warnings.push_back("the first answer to prompt 0 (sent before the first cache reset) differs from the fresh run's "
                         "answer to it");
  reset();
  r.runs.emplace_back("flushed", run_set("check: repeat after a cache reset", o, s, r.features, 1, clients, r.server, progress));
  reset();
  r.runs.emplace_back("users", run_set("check: " + std::to_string(r.users) + " users at once", o, s, r.features,
                                       r.users, clients, r.server, progress));
  // The first request after a working reset finds nothing cached; one that does shows a reset that
  // answered OK and emptied nothing, so the fresh and flushed runs ran against a warm cache.
  // (A reset that answered an error, a warning of its own, leaves the next run on a warm cache too.)
  bool reset_emptied = true;
  if (resetter.every_reset_worked())
    for (const char* name : {"fresh", "flushed"})
      if (const Output& first = r.run(name).front(); first.cached_tokens > 0) {
        reset_emptied = false;
        r.warnings.push_back("the cache reset answered OK, but the first request after it found " +
                             std::to_string(first.cached_tokens) + " cached prompt tokens (" + name +
                             " run): the reset empties nothing, so the cache rows compare a warm cache with a warm cache");
        break;
      }
  r.cache_reset = resetter.every_reset_worked() && reset_emptied;
  // Seeded sampling is only tested if the seed matters: a server that ignores it (and samples
  // the same way every time) would pass every row. Up to 3 prompts again with the next seed.
  if (s.temperature > 0 && s.seed) {
    SamplingOptions next = s;
    next.seed = *s.seed == std::numeric_limits<int64_t>::max() ? *s.seed - 1 : *s.seed + 1;
    const size_t n = std::min<size_t>(3, o.prompts.size());
    bool any_changed = false;
    for (size_t i = 0; i < n && !any_changed; ++i)
      any_changed = compare_outputs(r.run("fresh")[i], generate_as_probed(c, o.prompts[i], next, r.features)).differs();
    if (!any_changed)
      r.warnings.push_back("seed " + std::to_string(*next.seed) + " gave the same answers as seed " + std::to_string(*s.seed) +
                           " to the first " + std::to_string(n) +
                           " prompts: check could not show that the seed matters (the server may ignore it, or the "
                           "temperature and --max-tokens leave too little room)");
  }

  auto add_row = [&](std::string name, std::string kind, const std::vector<Output>& ref, const std::vector<Output>& cand) {
    CheckRow row;
    row.name = std::move(name);
    row.kind = std::move(kind);
    row.diff = compare_runs(ref, cand);
    r.rows.push_back(std::move(row));
  };
  add_row("flushed repeat against fresh", "flushed_repeat", r.run("fresh"), r.run("flushed"));
  add_row("fresh against warm cache", "warm_cache", r.run("fresh"), r.run("warm"));
  add_row(std::to_string(r.users) + " users at once against one user", "users", r.run("fresh"), r.run("users"));
  if (!r.cache_reset)
    for (auto& row : r.rows) row.note = resetter.every_reset_worked() ? "the reset left the cache warm" : "no cache reset";
  if (r.users < 2) r.rows.back().note = r.rows.back().note.empty() ? "nothing ran at once" : r.rows.back().note + "; nothing ran at once";

  // A second server: the same prompts, fresh, one user.
  Clients other_clients;
  std::unique_ptr<CacheResetter> other_resetter;
  ServerFeatures other_features;
  SamplingOptions other_s = s;
  if (!o.compare_url.empty()) {
    Url url2 = parse_url(o.compare_url);
    ensure_clients(other_clients, url2, o.client, 1);
    ServerInfo info2 = discover_server(*other_clients[0], s.model);
    if (info2.models.is_null()) info2 = discover_server(*other_clients[0], "");  // its own model name
    other_s.model = info2.model;
    other_resetter = std::make_unique<CacheResetter>(*other_clients[0]);
    const Output other_probe = probe_features(*other_clients[0], o.prompts[0], other_s, other_features);
    if (s.echo && !echoes_prompt(other_probe))
      throw Error("--echo: the answer of " + url2.text() +
                  " carries no prompt logprobs (it ignores echo or sends no logprobs), so the servers cannot be "
                  "compared on them");
    other_resetter->reset();
    for (auto& w : other_resetter->take_warnings()) {
      progress.note("warning: " + w);
      r.warnings.push_back(w);
    }
    r.other = info2;
    r.runs.emplace_back("compare", run_set("check: fresh run on " + url2.label(), o, other_s, other_features, 1,
                                           other_clients, *r.other, progress));
    add_row(url2.label() + " against " + url.label(), "compare_url", r.run("fresh"), r.run("compare"));
    r.compare_diff = format_differences(describe_differences(r.server.describe(), r.other->describe()));
  }
  if (o.against) {
    std::vector<Output> recorded;
    for (const auto& j : o.against->at("outputs")) recorded.push_back(Output::from_json(j));
    recorded.resize(std::min(recorded.size(), o.prompts.size()));  // --num-prompts after --against
    r.against_file = o.against_name;
    if (!recorded.empty() && recorded[0].has_logprobs && !r.features.logprobs)
      r.warnings.push_back("the record has logprobs, but this server sent none: only the tokens are compared with it");
    if (!recorded.empty() && recorded[0].has_token_ids && !r.features.token_ids)
      r.warnings.push_back("the record has token ids, but this server sent none: the record is compared by token strings or text");
    r.runs.emplace_back("record", recorded);
    add_row("this run against " + o.against_name, "against", recorded, r.run("fresh"));
    json rec_desc = o.against->contains("server") ? o.against->at("server") : json::object();
    r.against_diff = format_differences(describe_differences(rec_desc, r.server.describe()));
  }

  // Alone twice: every prompt that differed anywhere, each time after a cache reset.
  std::set<int> differing;
  for (const auto& row : r.rows)
    for (int i : row.diff.all_differing()) differing.insert(i);
  std::set<int> differing_other;
  for (const auto& row : r.rows)
    if (row.kind == "compare_url")
      for (int i : row.diff.all_differing()) differing_other.insert(i);
  // Per server: a prompt the second server cannot repeat says nothing about the first one's rows.
  std::set<int> unstable, unstable_other;
  if (!differing.empty()) {
    progress.start("check: each differing prompt alone twice", static_cast<int>(2 * (differing.size() + differing_other.size())));
    int done = 0;
    for (int i : differing) {
      const Prompt& p = o.prompts[static_cast<size_t>(i)];
      reset();
      Output a = generate_as_probed(c, p, s, r.features);
      progress.update(++done);
      reset();
      Output b = generate_as_probed(c, p, s, r.features);
      progress.update(++done);
      if (compare_outputs(a, b).differs()) unstable.insert(i);
      r.alone.push_back({i, {std::move(a), std::move(b)}});
    }
    for (int i : differing_other) {
      const Prompt& p = o.prompts[static_cast<size_t>(i)];
      other_resetter->reset();
      Output a = generate_as_probed(*other_clients[0], p, other_s, other_features);
      progress.update(++done);
      other_resetter->reset();
      Output b = generate_as_probed(*other_clients[0], p, other_s, other_features);
      progress.update(++done);
      if (compare_outputs(a, b).differs()) unstable_other.insert(i);
    }
    progress.finish(std::to_string(differing.size()) + " prompts, " + std::to_string(unstable.size()) +
                    " of them differ alone" +
                    (o.compare_url.empty() ? "" : " (" + std::to_string(unstable_other.size()) + " on the second server)"));
  }
  for (auto& row : r.rows) {
    row.alone_tested = row.diff.all_differing();
    for (int i : row.alone_tested)
      if (unstable.count(i) || (row.kind == "compare_url" && unstable_other.count(i))) row.alone_unstable.push_back(i);
    row.verdict = verdict_for(row, r);
  }
  if (o.client.tally) {
    r.resent_429 = o.client.tally->resent_429.load();
    r.resent_503 = o.client.tally->resent_503.load();
  }
  if (r.server.fingerprints.size() > 1)
    r.warnings.push_back("the server answered with " + std::to_string(r.server.fingerprints.size()) +
                         " different system_fingerprint values during the check");
  return r;
}

const std::vector<Output>& CheckReport::run(const std::string& name) const {
  for (const auto& [n, outs] : runs)
    if (n == name) return outs;
  throw Error("no run named " + name);
}

bool CheckReport::any_difference() const {
  return std::any_of(rows.begin(), rows.end(), [](const CheckRow& r) { return r.differs(); });
}

std::string CheckReport::header(const CheckOptions& o) const {
  const auto& s = o.sampling;
  std::string fp = server.fingerprints.empty() ? "(none)" : server.fingerprints.front();
  std::string h = "server    " + server.url.text() + "  model " + server.model + "  system_fingerprint " + fp + "\n";
  if (other) {
    std::string fp2 = other->fingerprints.empty() ? "(none)" : other->fingerprints.front();
    h += "compared  " + other->url.text() + "  model " + other->model + "  system_fingerprint " + fp2 + "\n";
  }
  bool chat = s.chat || (!o.prompts.empty() && o.prompts[0].kind == Prompt::Kind::Messages);
  std::string sampling = s.temperature == 0 ? "greedy"
                                            : "temperature " + fmt_fixed(s.temperature, 2) +
                                                  (s.seed ? ", seed " + std::to_string(*s.seed) : "");
  // The weakest basis any comparison had to use (a chat server's logprobs without token strings
  // fall back to the text), so the header never claims more than was compared.
  CompareBasis weakest = features.token_ids ? CompareBasis::TokenIds : features.logprobs ? CompareBasis::TokenStrings : CompareBasis::TextBytes;
  for (const auto& row : rows)
    if (static_cast<int>(row.diff.basis) > static_cast<int>(weakest)) weakest = row.diff.basis;
  std::string basis = basis_name(weakest);
  h += "prompts   " + std::to_string(o.prompts.size()) + " (" + o.prompt_source + "), " +
       (s.ignore_eos ? "exactly " : "up to ") +
       std::to_string(s.max_tokens) + " tokens, " + sampling + ", " +
       (chat ? "chat completions, thinking off" : "completions") + "\n";
  std::string compared = "compared  by " + basis;
  if (features.logprobs)
    compared += s.echo ? " and logprobs (every prompt token's too: echo), bit for bit" : " and logprobs, bit for bit";
  h += compared + "\n";
  return h;
}

std::string CheckReport::table() const {
  TextTable t({"comparison", "outputs differ", "first diff (median)", "logprobs only", "verdict"});
  for (const auto& row : rows) {
    std::string name = row.name + (row.note.empty() ? "" : " (" + row.note + ")");
    t.add({name,
           std::to_string(row.diff.token_diffs.size() + row.diff.text_only.size()) + " of " + std::to_string(row.diff.total),
           fmt_position(row.diff.median_position()),
           features.logprobs ? std::to_string(row.diff.logprob_only.size()) : "-", row.verdict});
  }
  return t.str();
}

std::string CheckReport::cache_evidence() const {
  auto cached = [&](const char* name, int64_t& prompt) {
    int64_t c = 0;
    prompt = 0;
    for (const auto& [n, outs] : runs)
      if (n == name)
        for (const auto& o : outs) {
          if (o.cached_tokens < 0 || o.prompt_tokens < 0) return int64_t{-1};
          c += o.cached_tokens;
          prompt += o.prompt_tokens;
        }
    return c;
  };
  int64_t fresh_prompt = 0, warm_prompt = 0, flushed_prompt = 0;
  int64_t fresh = cached("fresh", fresh_prompt), warm = cached("warm", warm_prompt), flushed = cached("flushed", flushed_prompt);
  if (fresh < 0 || warm < 0 || flushed < 0) return "";
  return "the warm run found " + fmt_int(warm) + " of " + fmt_int(warm_prompt) +
         " prompt tokens in the cache (fresh run " + fmt_int(fresh) + ", flushed repeat " +
         fmt_int(flushed) + ")";
}

std::string CheckReport::summary() const {
  std::string s;
  if (std::string ev = cache_evidence(); !ev.empty()) s += "cache:   " + ev + "\n";
  if (resent_429 + resent_503 > 0)
    s += "retries: " + std::to_string(resent_429 + resent_503) + " requests sent again after the server refused them for now (" +
         std::to_string(resent_429) + " HTTP 429, " + std::to_string(resent_503) + " HTTP 503)\n";
  for (const auto& w : warnings) s += "warning: " + w + "\n";
  if (other) s += "servers: " + (compare_diff.empty() ? std::string("same fingerprint and version") : compare_diff) + "\n";
  if (!against_file.empty())
    s += "record:  " + (against_diff.empty() ? std::string("same fingerprint and version") : against_diff) + "\n";
  int total = rows.empty() ? 0 : rows[0].diff.total;
  auto differs_in = [&](bool cross) {
    int n = 0;
    for (const auto& r : rows)
      if (r.differs() && (r.kind == "compare_url" || r.kind == "against") == cross) ++n;
    return n;
  };
  int self = differs_in(false), cross = differs_in(true);
  if (self == 0 && cross == 0) {
    s += "result: reproducible: no output differs in " + std::to_string(rows.size()) + " comparisons of " +
         std::to_string(total) + " prompts" +
         (cache_reset ? "" : ", but not every run started from an emptied prefix cache") + "\n";
  } else if (self > 0) {
    size_t self_rows = static_cast<size_t>(
        std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return r.kind != "compare_url" && r.kind != "against"; }));
    s += "result: NOT reproducible: outputs of the same server differ in " + std::to_string(self) + " of " +
         std::to_string(self_rows) + " comparisons\n";
  } else {
    s += std::string("result: each run repeats itself, but ") +
         (other ? "the two servers give different outputs" : "the outputs changed since the record") + "\n";
  }
  return s;
}

json CheckReport::to_json(const CheckOptions& o) const {
  json j;
  j["tool"] = "verbatim check";
  j["created"] = now_iso();
  j["reproducible"] = !any_difference();
  j["server"] = info_json(server);
  if (other) j["compare"] = info_json(*other);
  if (!compare_diff.empty()) j["compare_differences"] = compare_diff;
  if (!against_diff.empty()) j["record_differences"] = against_diff;
  j["sampling"] = sampling_json(o.sampling);
  j["sampling"]["model"] = server.model;
  j["prompt_source"] = o.prompt_source;
  j["users"] = users;
  j["cache_reset"] = cache_reset;
  if (std::string ev = cache_evidence(); !ev.empty()) j["cache_evidence"] = ev;
  j["features"] = json{{"token_ids", features.token_ids}, {"logprobs", features.logprobs}};
  j["resends"] = json{{"429", resent_429}, {"503", resent_503}};
  json rows_j = json::array();
  for (const auto& row : rows) {
    json rj;
    rj["comparison"] = row.name;
    rj["kind"] = row.kind;
    rj["total"] = row.diff.total;
    rj["outputs_differ"] = row.diff.token_diffs.size() + row.diff.text_only.size();  // as the table counts
    rj["text_only_differ"] = row.diff.text_only.size();
    rj["logprobs_only_differ"] = row.diff.logprob_only.size();
    double m = row.diff.median_position();
    rj["median_first_diff"] = std::isnan(m) ? json() : json(m);
    json diffs = json::array();
    for (size_t k = 0; k < row.diff.token_diffs.size(); ++k)
      diffs.push_back(json{{"prompt", row.diff.token_diffs[k]}, {"first_diff", row.diff.positions[k]}});
    rj["differing"] = diffs;
    rj["logprobs_only"] = row.diff.logprob_only;
    rj["text_only"] = row.diff.text_only;
    rj["alone_tested"] = row.alone_tested;
    rj["alone_unstable"] = row.alone_unstable;
    rj["compared_by"] = basis_name(row.diff.basis);
    rj["verdict"] = row.verdict;
    if (!row.note.empty()) rj["note"] = row.note;
    rows_j.push_back(rj);
  }
  j["rows"] = rows_j;
  json prompts = json::array();
  for (const auto& p : o.prompts) prompts.push_back(p.to_json());
  j["prompts"] = prompts;
  json runs_j = json::object();
  for (const auto& [name, outs] : runs) {
    json a = json::array();
    for (const auto& out : outs) a.push_back(out.to_json());
    runs_j[name] = a;
  }
  j["runs"] = runs_j;
  json alone_j = json::array();
  for (const auto& [i, ab] : alone)
    alone_j.push_back(json{{"prompt", i}, {"first", ab.first.to_json()}, {"second", ab.second.to_json()}});
  j["alone_twice"] = alone_j;
  j["warnings"] = warnings;
  return j;
}

json make_record(const CheckOptions& o, const CheckReport& r) {
  json j;
  j["format"] = "verbatim-check-record";
  j["format_version"] = 1;
  j["created"] = now_iso();
  j["url"] = r.server.url.text();
  j["server"] = r.server.describe();
  j["version"] = r.server.version;
  j["sampling"] = sampling_json(o.sampling);
  j["sampling"]["model"] = r.server.model;
  j["prompt_source"] = o.prompt_source;
  json prompts = json::array();
  for (const auto& p : o.prompts) prompts.push_back(p.to_json());
  j["prompts"] = prompts;
  json outs = json::array();
  for (const auto& out : r.run("fresh")) outs.push_back(out.to_json());
  j["outputs"] = outs;
  return j;
}

void apply_record(const json& rec, const std::string& file, CheckOptions& o) {
  auto bad = [&](const std::string& why) { return Error("record " + file + " " + why + " (make one with --record)"); };
  if (!rec.is_object() || rec.value("format", std::string()) != "verbatim-check-record") throw bad("is not a check record");
  if (!rec.contains("prompts") || !rec["prompts"].is_array() || !rec.contains("outputs") || !rec["outputs"].is_array() ||
      rec["prompts"].size() != rec["outputs"].size())
    throw bad("needs as many \"outputs\" as \"prompts\"");
  if (rec["prompts"].empty()) throw bad("holds no prompts");
  o.prompts.clear();
  for (size_t i = 0; i < rec["prompts"].size(); ++i)
    o.prompts.push_back(prompt_from_json(rec["prompts"][i], file + ": prompt " + std::to_string(i)));
  if (rec.contains("sampling") && rec["sampling"].is_object()) {
    const json& s = rec["sampling"];
    // Each field typed and ranged as the options are: an edited record fails here, naming the
    // field, rather than sending a wrapped value or stopping on a JSON type error.
    auto boolean = [&](const char* name) {
      if (!s.contains(name)) return false;
      if (!s[name].is_boolean()) throw bad("has sampling." + std::string(name) + " " + s[name].dump() + ", not true or false");
      return s[name].get<bool>();
    };
    if (s.contains("max_tokens")) {
      const json& m = s["max_tokens"];
      if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw bad("has sampling.max_tokens " + m.dump() + ", not an integer in [1, 2147483647]");
      o.sampling.max_tokens = int(m.get<int64_t>());
    }
    if (s.contains("temperature")) {
      const json& t = s["temperature"];
      if (!t.is_number() || !(t.get<double>() >= 0) || !std::isfinite(t.get<double>()))
        throw bad("has sampling.temperature " + t.dump() + ", not a finite number >= 0");
      o.sampling.temperature = t.get<double>();
    }
    if (s.contains("seed") && s["seed"].is_number_integer()) o.sampling.seed = s["seed"].get<int64_t>();
    else o.sampling.seed.reset();
    o.sampling.chat = boolean("chat");
    o.sampling.ignore_eos = boolean("ignore_eos");
    o.sampling.echo = boolean("echo");
  }
  o.prompt_source = "from " + file;
  o.against = rec;
  o.against_name = file;
}

}  // namespace verbatim::client
