#pragma once
// Byte-level BPE over token ids: a word (the raw bytes of one pre-token) starts as one token per
// byte and merges the adjacent pair of lowest rank until none is left, exactly as HF's
// models/bpe/word.rs does (ties broken by leftmost position).
#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace verbatim {

class BpeModel {
 public:
  struct Merge {
    int32_t left, right, merged;
  };
  // byte_token[b]: the id of the one-byte token for byte b (-1 if the vocab lacks it).
  // merges in rank order (rank = index); a later duplicate pair overrides an earlier one, as in HF.
  // whole_words (raw bytes -> id) is non-empty only for ignore_merges models: a word that is itself
  // a vocab entry is emitted as that one token without merging.
  BpeModel(const std::array<int32_t, 256>& byte_token, const std::vector<Merge>& merges,
           std::unordered_map<std::string, int32_t> whole_words = {});

  // Appends the ids of one pre-token's bytes. Throws Error if a byte has no token.
  void encode_word(std::string_view bytes, std::vector<int32_t>& out) const;

 private:
  struct PairValue {
    uint32_t rank;
    int32_t merged;
  };
  // Open addressing on the packed (left, right) pair: one probe sequence per lookup, no nodes.
  struct PairTable {
    std::vector<uint64_t> keys;
    std::vector<PairValue> values;
    uint64_t mask = 0;
    void build(size_t n);
    void put(uint64_t key, PairValue v);
    const PairValue* get(uint64_t key) const;
  };
  static uint64_t pack(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  void merge_word(std::string_view bytes, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_token_;
  PairTable pairs_;
  std::unordered_map<std::string, int32_t> whole_words_;
  // Per-word cache: the result of a word never depends on the cache, only the speed does.
  mutable std::shared_mutex cache_mu_;
  struct WordHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, std::vector<int32_t>, WordHash, std::equal_to<>> cache_;
};

}  // namespace verbatim
