#include "client/prompts.h"

#include <filesystem>
#include <fstream>

#include "core/hash.h"

namespace verbatim::client {

std::string Prompt::preview(size_t max_chars) const {
  std::string s;
  switch (kind) {
    case Kind::Text: s = text; break;
    case Kind::Messages:
      if (!messages.empty() && messages.back().contains("content")) {
        const json& c = messages.back().at("content");
        s = c.is_string() ? c.get<std::string>() : c.dump();
      }
      break;
    case Kind::TokenIds:
      s = std::to_string(ids.size()) + " token ids";
      break;
  }
  std::string out;
  for (char c : s) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  if (out.size() > max_chars) {
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 chars
    out = out.substr(0, cut) + "...";
  }
  return out;
}

json Prompt::to_json() const {
  switch (kind) {
    case Kind::Text: return json{{"prompt", text}};
    case Kind::Messages: return json{{"messages", messages}};
    case Kind::TokenIds: return json{{"prompt", ids}};
  }
  return json();
}

namespace {

bool is_id_list(const json& j) {
  if (!j.is_array() || j.empty()) return false;
  for (const auto& v : j)
    if (!v.is_number_integer()) return false;
  return true;
}

Prompt messages_prompt(const json& j, const std::string& where) {
  if (!j.is_array() || j.empty()) throw Error(where + ": \"messages\" must be a non-empty list");
  for (const auto& m : j)
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content"))
      throw Error(where + ": each chat message needs a string \"role\" and a \"content\"");
  Prompt p;
  p.kind = Prompt::Kind::Messages;
  p.messages = j;
  return p;
}

}  // namespace

Prompt prompt_from_json(const json& j, const std::string& where) {
  if (j.is_string()) {
    if (j.get<std::string>().empty()) throw Error(where + ": empty prompt");
    Prompt p;
    p.text = j.get<std::string>();
    return p;
  }
  if (is_id_list(j)) {
    Prompt p;
    p.kind = Prompt::Kind::TokenIds;
    for (const auto& v : j) {
      if (v.get<int64_t>() < 0) throw Error(where + ": negative token id " + v.dump());
      p.ids.push_back(v.get<int64_t>());
    }
    return p;
  }
  if (j.is_array() && !j.empty() && j[0].is_object()) return messages_prompt(j, where);
  if (j.is_object()) {
    if (j.contains("messages")) return messages_prompt(j["messages"], where);
    if (j.contains("prompt")) return prompt_from_json(j["prompt"], where);
  }
  throw Error(where + ": expected a string, a list of token ids, a list of chat messages, "
                      "or an object with \"prompt\" or \"messages\"");
}

std::vector<Prompt> load_prompts_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open prompts file " + path);
  std::vector<Prompt> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(n);
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception&) {
      throw Error(where + ": not a JSON value");
    }
    out.push_back(prompt_from_json(j, where));
  }
  if (in.bad()) throw Error("cannot read prompts file " + path + (std::filesystem::is_directory(path) ? ": it is a folder" : ""));
  if (out.empty()) throw Error("prompts file " + path + " holds no prompts");
  return out;
}

std::vector<Prompt> builtin_prompts(bool chat) {
  std::vector<Prompt> out;
  for (const auto& q : builtin_questions()) {
    Prompt p;
    if (chat) {
      p.kind = Prompt::Kind::Messages;
      p.messages = json::array({json{{"role", "system"}, {"content", builtin_system_prompt()}},
                                json{{"role", "user"}, {"content", q}}});
    } else {
      p.text = builtin_system_prompt() + "\n\nUser: " + q + "\nAssistant:";
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Prompt> synthetic_prompts(int count, int input_len, uint64_t seed) {
  std::vector<Prompt> out;
  for (int i = 0; i < count; ++i) {
    Prompt p;
    p.kind = Prompt::Kind::TokenIds;
    for (int t = 0; t < input_len; ++t) {
      uint64_t h = hash_combine(hash_combine(seed, static_cast<uint64_t>(i)), static_cast<uint64_t>(t));
      p.ids.push_back(100 + static_cast<int64_t>(h % 400));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace verbatim::client
