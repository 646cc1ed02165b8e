#pragma once
// The paged KV cache's bookkeeping (no device memory here): a pool of blocks of block_size token
// slots with reference counts and a free list, and the prefix cache over FULL blocks.
//
// Prefix cache: a full block is keyed by a chained hash (its parent block's key + its own token
// ids), registered only once its K/V has been written (commit), and on every hit its tokens and its
// parent block (id and allocation generation) are VERIFIED, so a hash collision can never hand out wrong K/V. A cached block whose
// reference count drops to 0 stays reusable until the pool needs it: blocks with no cache entry are
// handed out first, then cached ones are evicted least recently freed first. Cached blocks are
// never written again (a sequence's match leaves at least its last token to compute), so sharing
// needs no copy-on-write. Contract 6: a cached block holds exactly the bits a recompute writes.
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace verbatim {

// One sequence's view of the pool.
struct BlockTable {
  std::vector<int32_t> blocks;  // block ids, in position order
  int num_committed = 0;        // leading full blocks already in the prefix cache (or found there)
  uint64_t chain_hash = 0;      // key of block num_committed - 1 (the root key when 0)
};

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, bool enable_prefix_caching);

  int num_blocks() const { return int(blocks_.size()); }
  int block_size() const { return block_size_; }
  bool prefix_caching() const { return caching_; }
  int num_free() const;  // blocks an allocation can take now (free + evictable cached)
  int num_used() const;  // blocks with a reference count > 0
  int num_free_uncached() const { return int(free_.size()); }  // free without evicting a cache entry
  int blocks_for(int num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }

  // Longest verified run of cached full blocks that prefixes `tokens`, capped at (size - 1) tokens
  // so at least one token is left to compute. Takes no references and counts nothing.
  std::vector<int32_t> find_prefix(std::span<const int32_t> tokens) const;
  // How many of `blocks` (a find_prefix result) are evictable now: acquiring them uses up free room.
  int num_evictable(std::span<const int32_t> blocks) const;
  // Takes references on a find_prefix result and starts `table` with it (table must be empty).
  // Counts `num_query_tokens` queried and the matched tokens as hits.
  void acquire_prefix(std::span<const int32_t> tokens, std::span<const int32_t> blocks, BlockTable& table,
                      int num_query_tokens);

  // Grows `table` to hold `num_tokens` slots. False (and `table` unchanged) when the pool is short.
  bool ensure_capacity(BlockTable& table, int num_tokens);
  // Registers the full blocks of `table` whose K/V is now written (tokens[0, num_computed)).
  void commit(std::span<const int32_t> tokens, int num_computed, BlockTable& table);
  // Releases the trailing blocks beyond blocks_for(num_tokens) (never committed ones: those lie
  // below num_computed). Speculative decoding hands back blocks only rejected drafts used.
  void shrink(BlockTable& table, int num_tokens);
  // Drops one reference to each block, last block first (so a prefix's tail is evicted before its
  // head), and empties `table`.
  void release(BlockTable& table);
  // Forgets every cache entry; blocks in use stay allocated but are no longer shared.
  void reset_prefix_cache();

  uint64_t prefix_queries() const { return queries_; }  // tokens looked up
  uint64_t prefix_hits() const { return hits_; }        // tokens found
  int num_cached_blocks() const { return int(index_.size()); }

 private:
  struct Block {
    int ref_count = 0;
    bool cached = false;          // has an entry in index_
    uint64_t key = 0;
    int32_t parent = -1;          // block before it in the sequence that committed it
    uint64_t parent_generation = 0;  // the parent's generation then: a reused parent breaks the link
    uint64_t generation = 0;      // bumped each time the block is handed out (its content changes)
    std::vector<int32_t> tokens;  // its token ids, kept to verify every hit
    std::list<int32_t>::iterator lru_pos;  // in evictable_ when cached and ref_count == 0
  };
  int32_t take_block();  // a free block, else the least recently freed cached one (evicted)
  void uncache(int32_t id);     // forgets its cache entry (the caller moves it between lists)
  void drop_entry(int32_t id);  // forgets its cache entry; an unreferenced block becomes free
  uint64_t block_key(uint64_t parent_key, std::span<const int32_t> tokens) const;
  int32_t lookup(uint64_t key, int32_t parent, std::span<const int32_t> tokens) const;

  int block_size_;
  bool caching_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;                  // uncached, unreferenced: a stack
  std::list<int32_t> evictable_;               // cached, unreferenced: front = least recently freed
  std::unordered_map<uint64_t, int32_t> index_;  // chained key -> block
  int num_used_ = 0;
  uint64_t queries_ = 0;
  uint64_t hits_ = 0;
};

}  // namespace verbatim
