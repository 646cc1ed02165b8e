#include "tokenizer/bpe.h"

#include <mutex>
#include <queue>

#include "core/error.h"

namespace verbatim {
namespace {
constexpr uint64_t kEmpty = ~uint64_t{0};
constexpr size_t kCacheMaxWords = 1 << 17;
constexpr size_t kCacheMaxWordBytes = 256;

uint64_t mix(uint64_t k) {  // splitmix64 finalizer: spreads packed id pairs over the table
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebULL;
  return k ^ (k >> 31);
}
}  // namespace

void BpeModel::PairTable::build(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  keys.assign(cap, kEmpty);
  values.assign(cap, PairValue{0, -1});
  mask = cap - 1;
}

void BpeModel::PairTable::put(uint64_t key, PairValue v) {
  for (uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (keys[i] == kEmpty || keys[i] == key) {
      keys[i] = key;
      values[i] = v;
      return;
    }
  }
}

const BpeModel::PairValue* BpeModel::PairTable::get(uint64_t key) const {
  for (uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (keys[i] == key) return &values[i];
    if (keys[i] == kEmpty) return nullptr;
  }
}

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_token, const std::vector<Merge>& merges,
                   std::unordered_map<std::string, int32_t> whole_words)
    : byte_token_(byte_token), whole_words_(std::move(whole_words)) {
  pairs_.build(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    pairs_.put(pack(m.left, m.right), PairValue{static_cast<uint32_t>(rank), m.merged});
  }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>& out) const {
  if (bytes.empty()) return;
  if (!whole_words_.empty()) {
    if (auto it = whole_words_.find(std::string(bytes)); it != whole_words_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = bytes.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mu_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(bytes, out);
  if (cacheable) {
    std::unique_lock lock(cache_mu_);
    if (cache_.size() >= kCacheMaxWords) cache_.clear();  // bounded memory; results are unaffected
    cache_.emplace(std::string(bytes), std::vector<int32_t>(out.begin() + static_cast<ptrdiff_t>(start), out.end()));
  }
}

void BpeModel::merge_word(std::string_view bytes, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t merged;
    // Lowest rank first, then leftmost position (HF's Merge ordering).
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int32_t n = static_cast<int32_t>(bytes.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    int32_t id = byte_token_[static_cast<unsigned char>(bytes[static_cast<size_t>(i)])];
    if (id < 0) throw Error("tokenizer: the vocab has no token for byte " + std::to_string(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])));
    sym[static_cast<size_t>(i)] = Symbol{id, i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  if (n == 1) {
    out.push_back(sym[0].id);
    return;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t pos) {
    const Symbol& a = sym[static_cast<size_t>(pos)];
    if (a.next < 0) return;
    if (const PairValue* v = pairs_.get(pack(a.id, sym[static_cast<size_t>(a.next)].id)))
      queue.push(Candidate{v->rank, pos, v->merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = sym[static_cast<size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[static_cast<size_t>(left.next)];
    // A stale entry: the pair at this position changed since it was queued.
    const PairValue* v = pairs_.get(pack(left.id, right.id));
    if (!v || v->merged != top.merged) continue;
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[static_cast<size_t>(left.next)].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[static_cast<size_t>(i)].next) out.push_back(sym[static_cast<size_t>(i)].id);
}

}  // namespace verbatim
