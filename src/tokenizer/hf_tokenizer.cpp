#include "tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace verbatim {
namespace {
using nlohmann::json;
constexpr int64_t kMaxTokenId = 16 * 1024 * 1024;  // refuses absurd ids before allocating tables

// Every loader error names the file and the field, as one line.
[[noreturn]] void fail(const std::string& path, const std::string& what) { throw Error("tokenizer: " + path + ": " + what); }

json parse_file_text(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, std::string("not valid JSON (") + e.what() + ")");
  }
}

const json& field(const json& obj, const char* name, const std::string& path, const std::string& where) {
  if (!obj.is_object() || !obj.contains(name)) fail(path, "missing field " + where + name);
  return obj.at(name);
}

std::string type_of(const json& obj) {
  return obj.is_object() && obj.contains("type") && obj["type"].is_string() ? obj["type"].get<std::string>() : "";
}

bool flag(const json& obj, const char* name, const std::string& path, const std::string& where) {
  if (!obj.contains(name) || obj[name].is_null()) return false;
  if (!obj[name].is_boolean()) fail(path, where + name + " is not a boolean");
  return obj[name].get<bool>();
}

// Flattens {"type":"Sequence", <list_key>: [...]} into its steps; null gives no steps.
std::vector<json> steps(const json& node, const char* list_key, const std::string& path, const std::string& where) {
  if (node.is_null()) return {};
  if (type_of(node) != "Sequence") return {node};
  const json& list = field(node, list_key, path, where + ".");
  if (!list.is_array()) fail(path, where + "." + list_key + " is not an array");
  std::vector<json> out;
  for (const json& step : list)
    for (json& s : steps(step, list_key, path, where)) out.push_back(std::move(s));
  return out;
}

bool nfc_normalizer(const json& root, const std::string& path) {
  bool nfc = false;
  for (const json& step : steps(root.value("normalizer", json()), "normalizers", path, "normalizer")) {
    if (type_of(step) == "NFC") nfc = true;
    else fail(path, "unsupported normalizer \"" + type_of(step) + "\" (only NFC is implemented)");
  }
  return nfc;
}

void check_byte_level(const json& node, const std::string& path, const std::string& where) {
  if (flag(node, "add_prefix_space", path, where + ".")) fail(path, where + ".add_prefix_space=true is not supported");
}

// Returns the Split step (null json when there is none) after checking the rest is ByteLevel.
json split_pre_tokenizer(const json& root, const std::string& path) {
  json split;
  bool byte_level = false;
  for (const json& step : steps(root.value("pre_tokenizer", json()), "pretokenizers", path, "pre_tokenizer")) {
    const std::string type = type_of(step);
    if (type == "ByteLevel") {
      check_byte_level(step, path, "pre_tokenizer.ByteLevel");
      if (flag(step, "use_regex", path, "pre_tokenizer.ByteLevel.")) fail(path, "pre_tokenizer.ByteLevel.use_regex=true is not supported");
      byte_level = true;
    } else if (type == "Split") {
      if (!split.is_null()) fail(path, "more than one Split pre-tokenizer is not supported");
      if (step.value("behavior", std::string()) != "Isolated") fail(path, "pre_tokenizer.Split.behavior other than Isolated is not supported");
      if (flag(step, "invert", path, "pre_tokenizer.Split.")) fail(path, "pre_tokenizer.Split.invert=true is not supported");
      split = step;
    } else {
      fail(path, "unsupported pre_tokenizer \"" + type + "\"");
    }
  }
  if (!byte_level) fail(path, "pre_tokenizer has no ByteLevel step (only byte-level BPE is implemented)");
  return split;
}

std::unique_ptr<RegexSplitter> make_splitter(const json& split, const std::string& path) {
  if (split.is_null()) return nullptr;
  const json& pattern = field(split, "pattern", path, "pre_tokenizer.Split.");
  try {
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) return std::make_unique<RegexSplitter>(pattern["Regex"].get<std::string>(), false);
    if (pattern.contains("String") && pattern["String"].is_string()) return std::make_unique<RegexSplitter>(pattern["String"].get<std::string>(), true);
  } catch (const Error& e) {
    fail(path, std::string("pre_tokenizer.Split.pattern: ") + e.what());
  }
  fail(path, "pre_tokenizer.Split.pattern has neither Regex nor String");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("tokenizer: cannot read " + path);
  return ss.str();
}

int32_t token_id_field(const json& v, const std::string& path, const std::string& where) {
  if (!v.is_number_integer()) fail(path, where + " is not an integer id");
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id >= kMaxTokenId) fail(path, where + " = " + std::to_string(id) + " is out of range");
  return static_cast<int32_t>(id);
}
}  // namespace

HfTokenizer::HfTokenizer(const std::string& tokenizer_json, const std::string& path, const std::string& config_json,
                         const std::string& config_path) {
  json root = parse_file_text(tokenizer_json, path);
  if (!root.is_object()) fail(path, "the top level is not an object");

  // --- model: BPE vocab and merges
  const json& model = field(root, "model", path, "");
  if (type_of(model) != "BPE") fail(path, "model.type is \"" + type_of(model) + "\" (only BPE is implemented)");
  if (model.contains("dropout") && !model["dropout"].is_null()) fail(path, "model.dropout is not supported");
  if (flag(model, "byte_fallback", path, "model.")) fail(path, "model.byte_fallback=true is not supported");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(affix) && !model[affix].is_null() && model[affix] != "") fail(path, std::string("model.") + affix + " is not supported");
  const bool ignore_merges = flag(model, "ignore_merges", path, "model.");
  const json& vocab = field(model, "vocab", path, "model.");
  if (!vocab.is_object()) fail(path, "model.vocab is not an object");

  std::unordered_map<std::string, int32_t> model_vocab;
  model_vocab.reserve(vocab.size());
  int32_t max_id = -1;
  for (const auto& [token, value] : vocab.items()) {
    const int32_t id = token_id_field(value, path, "model.vocab[\"" + token + "\"]");
    model_vocab.emplace(token, id);
    max_id = std::max(max_id, id);
  }

  // --- added tokens
  std::vector<AddedToken> added;
  if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
    const json& list = root["added_tokens"];
    if (!list.is_array()) fail(path, "added_tokens is not an array");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& t = list[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "].";
      AddedToken a;
      a.id = token_id_field(field(t, "id", path, where), path, where + "id");
      const json& content = field(t, "content", path, where);
      if (!content.is_string() || content.get<std::string>().empty()) fail(path, where + "content is not a non-empty string");
      a.content = content.get<std::string>();
      if (utf8::first_invalid(a.content) != std::string::npos) fail(path, where + "content is not valid UTF-8");
      a.single_word = flag(t, "single_word", path, where);
      a.lstrip = flag(t, "lstrip", path, where);
      a.rstrip = flag(t, "rstrip", path, where);
      a.normalized = flag(t, "normalized", path, where);
      a.special = flag(t, "special", path, where);
      max_id = std::max(max_id, a.id);
      added.push_back(std::move(a));
    }
  }

  // --- merges, as pairs of vocab ids with the id of their concatenation
  std::array<int32_t, 256> byte_token;
  for (int b = 0; b < 256; ++b) {
    auto it = model_vocab.find(byte_level::to_text(std::string(1, static_cast<char>(b))));
    byte_token[static_cast<size_t>(b)] = it == model_vocab.end() ? -1 : it->second;
  }
  const json& merges_json = field(model, "merges", path, "model.");
  if (!merges_json.is_array()) fail(path, "model.merges is not an array");
  std::vector<BpeModel::Merge> merges;
  merges.reserve(merges_json.size());
  std::string joined;
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& m = merges_json[i];
    std::string_view left, right;
    if (m.is_string()) {  // older files: "left right"
      const std::string& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) fail(path, "model.merges[" + std::to_string(i) + "] is not \"left right\"");
      left = std::string_view(s).substr(0, sp);
      right = std::string_view(s).substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    } else {
      fail(path, "model.merges[" + std::to_string(i) + "] is neither \"left right\" nor [left, right]");
    }
    joined.assign(left).append(right);
    auto l = model_vocab.find(std::string(left)), r = model_vocab.find(std::string(right)), lr = model_vocab.find(joined);
    if (l == model_vocab.end() || r == model_vocab.end() || lr == model_vocab.end())
      fail(path, "model.merges[" + std::to_string(i) + "] (\"" + std::string(left) + "\", \"" + std::string(right) +
                     "\") uses a token that is not in model.vocab");
    merges.push_back({l->second, r->second, lr->second});
  }
  std::unordered_map<std::string, int32_t> whole_words;  // only for ignore_merges
  if (ignore_merges)
    for (const auto& [token, id] : model_vocab) whole_words.emplace(byte_level::to_bytes(token), id);
  bpe_ = std::make_unique<BpeModel>(byte_token, merges, std::move(whole_words));

  // --- id tables: the model vocab first, added tokens take precedence (as HF's id_to_token does)
  text_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [token, id] : model_vocab) text_[static_cast<size_t>(id)] = token;
  for (const AddedToken& a : added) text_[static_cast<size_t>(a.id)] = a.content;
  bytes_.resize(text_.size());
  for (size_t id = 0; id < text_.size(); ++id) {
    bytes_[id] = byte_level::to_bytes(text_[id]);
    longest_token_bytes_ = std::max(longest_token_bytes_, bytes_[id].size());
  }
  special_.assign(text_.size(), 0);
  id_of_ = std::move(model_vocab);
  for (const AddedToken& a : added) {
    id_of_[a.content] = a.id;
    special_[static_cast<size_t>(a.id)] = a.special;
  }

  // --- normalizer, pre-tokenizer, decoder
  nfc_ = nfc_normalizer(root, path);
  splitter_ = make_splitter(split_pre_tokenizer(root, path), path);
  const json decoder = root.value("decoder", json());
  for (const json& step : steps(decoder, "decoders", path, "decoder")) {
    if (type_of(step) != "ByteLevel") fail(path, "unsupported decoder \"" + type_of(step) + "\" (only ByteLevel is implemented)");
  }
  if (decoder.is_null()) fail(path, "missing field decoder (a ByteLevel decoder is required)");

  // Added tokens marked normalized are searched for in their NFC form, after normalization.
  std::vector<AddedToken> raw, norm;
  std::vector<std::string> raw_pat, norm_pat;
  for (const AddedToken& a : added) {
    if (a.normalized) {
      norm.push_back(a);
      norm_pat.push_back(nfc_ ? nfc(a.content) : a.content);
    } else {
      raw.push_back(a);
      raw_pat.push_back(a.content);
    }
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw), std::move(raw_pat));
  normalized_matcher_ = AddedTokenMatcher(std::move(norm), std::move(norm_pat));

  // --- end-of-sequence ids: the chat turn end, the document end, and the config's eos_token
  std::vector<std::string> eos_names = {"<|im_end|>", "<|endoftext|>"};
  if (!config_json.empty()) {
    json config = parse_file_text(config_json, config_path);
    if (!config.is_object()) fail(config_path, "the top level is not an object");
    const json eos = config.value("eos_token", json());
    if (eos.is_string()) eos_names.push_back(eos.get<std::string>());
    else if (eos.is_object() && eos.contains("content") && eos["content"].is_string()) eos_names.push_back(eos["content"].get<std::string>());
    else if (!eos.is_null()) fail(config_path, "eos_token is neither a string nor {\"content\": ...}");
  }
  for (const std::string& name : eos_names) {
    auto it = id_of_.find(name);
    if (it != id_of_.end() && std::find(eos_.begin(), eos_.end(), it->second) == eos_.end()) eos_.push_back(it->second);
  }
}

// With a limit, splitting stops once the pieces alone pass it (each piece gives at least one id),
// and a word too long to fit in what is left is never run through BPE.
bool HfTokenizer::encode_normalized(std::string_view segment, std::vector<int32_t>& out, size_t max_tokens) const {
  const std::string text = nfc_ ? nfc(segment) : std::string(segment);
  std::vector<std::string_view> words;
  for (const TextPiece& piece : normalized_matcher_.split(text)) {
    if (out.size() >= max_tokens) return false;  // each piece left gives at least one id
    if (piece.id >= 0) {
      out.push_back(piece.id);
      continue;
    }
    const std::string_view part = std::string_view(text).substr(piece.begin, piece.end - piece.begin);
    words.clear();
    const size_t room = max_tokens - out.size();
    if (splitter_) splitter_->split(part, words, room == SIZE_MAX ? SIZE_MAX : room + 1);
    else words.push_back(part);
    if (words.size() > room) return false;
    for (std::string_view w : words) {
      if (max_tokens != SIZE_MAX && (w.size() - 1) / longest_token_bytes_ + 1 > max_tokens - out.size()) return false;
      bpe_->encode_word(w, out);
      if (out.size() > max_tokens) return false;
    }
  }
  return true;
}

std::optional<std::vector<int32_t>> HfTokenizer::encode_at_most(const std::string& text, size_t max_tokens) const {
  if (size_t bad = utf8::first_invalid(text); bad != std::string::npos)
    throw InvalidRequest("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  std::vector<int32_t> out;
  out.reserve(std::min(text.size() / 3, max_tokens) + 4);
  // Added tokens with normalized=false are cut from the raw text before NFC, as HF does.
  for (const TextPiece& piece : raw_matcher_.split(text)) {
    if (piece.id >= 0) out.push_back(piece.id);
    else if (!encode_normalized(std::string_view(text).substr(piece.begin, piece.end - piece.begin), out, max_tokens))
      return std::nullopt;
    if (out.size() > max_tokens) return std::nullopt;
  }
  return out;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string raw;
  for (int32_t id : ids) {
    // Unknown ids are dropped, as HF's decode does.
    if (id < 0 || static_cast<size_t>(id) >= text_.size() || text_[static_cast<size_t>(id)].empty()) continue;
    if (skip_special && special_[static_cast<size_t>(id)]) continue;
    raw += bytes_[static_cast<size_t>(id)];
  }
  return utf8::lossy(raw);
}

std::optional<int32_t> HfTokenizer::token_id(const std::string& token) const {
  auto it = id_of_.find(token);
  if (it == id_of_.end()) return std::nullopt;
  return it->second;
}

std::string HfTokenizer::token_text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= text_.size()) return "";
  return text_[static_cast<size_t>(id)];
}

std::vector<uint8_t> HfTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) return {};
  const std::string& b = bytes_[static_cast<size_t>(id)];
  return std::vector<uint8_t>(b.begin(), b.end());
}

bool HfTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[static_cast<size_t>(id)];
}

// ---------------------------------------------------------------- Tokenizer::load / exists

bool Tokenizer::exists(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / "tokenizer.json", ec);
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / "tokenizer.json").string();
  const std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error("tokenizer: " + path + " does not exist (set --tokenizer or VERBATIM_TOKENIZER_DIR)");
  const std::string text = read_file(path);
  // tokenizer_config.json is optional: it only adds its eos_token; if present it must parse.
  const std::string config = fs::is_regular_file(config_path, ec) ? read_file(config_path) : std::string();
  return std::make_unique<HfTokenizer>(text, path, config, config_path);
}

}  // namespace verbatim
