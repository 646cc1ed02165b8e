#include "engine/block_manager.h"

#include <algorithm>
#include <cassert>

#include "core/error.h"
#include "core/hash.h"

namespace verbatim {

BlockManager::BlockManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size), caching_(enable_prefix_caching) {
  if (num_blocks < 1) throw Error("the KV cache needs at least one block (num_kv_blocks)");
  if (block_size < 1) throw Error("block_size must be at least 1");
  blocks_.resize(size_t(num_blocks));
  free_.reserve(size_t(num_blocks));
  for (int32_t id = num_blocks - 1; id >= 0; --id) free_.push_back(id);  // block 0 handed out first
}

int BlockManager::num_free() const { return int(free_.size() + evictable_.size()); }
int BlockManager::num_used() const { return num_used_; }

uint64_t BlockManager::block_key(uint64_t parent_key, std::span<const int32_t> tokens) const {
  return hash_bytes(tokens.data(), tokens.size_bytes(), parent_key);
}

int32_t BlockManager::lookup(uint64_t key, int32_t parent, std::span<const int32_t> tokens) const {
  auto it = index_.find(key);
  if (it == index_.end()) return -1;
  const Block& b = blocks_[size_t(it->second)];
  // Verified, not trusted: the same parent block and the same token ids, or it is a miss.
  if (b.parent != parent || (parent >= 0 && b.parent_generation != blocks_[size_t(parent)].generation) ||
      !std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end())) return -1;
  return it->second;
}

std::vector<int32_t> BlockManager::find_prefix(std::span<const int32_t> tokens) const {
  std::vector<int32_t> found;
  if (!caching_ || tokens.empty()) return found;
  const size_t max_blocks = (tokens.size() - 1) / size_t(block_size_);  // leave >= 1 token to compute
  uint64_t key = 0;
  int32_t parent = -1;
  for (size_t i = 0; i < max_blocks; ++i) {
    auto span = tokens.subspan(i * size_t(block_size_), size_t(block_size_));
    key = block_key(key, span);
    int32_t b = lookup(key, parent, span);
    if (b < 0) break;
    found.push_back(b);
    parent = b;
  }
  return found;
}

int BlockManager::num_evictable(std::span<const int32_t> ids) const {
  int n = 0;
  for (int32_t id : ids) n += blocks_[size_t(id)].ref_count == 0 ? 1 : 0;
  return n;
}

void BlockManager::acquire_prefix(std::span<const int32_t> tokens, std::span<const int32_t> ids, BlockTable& table,
                                  int num_query_tokens) {
  assert(table.blocks.empty());
  for (int32_t id : ids) {
    Block& b = blocks_[size_t(id)];
    if (b.ref_count == 0) {
      evictable_.erase(b.lru_pos);
      ++num_used_;
    }
    ++b.ref_count;
  }
  table.blocks.assign(ids.begin(), ids.end());
  table.num_committed = int(ids.size());
  table.chain_hash = ids.empty() ? 0 : blocks_[size_t(ids.back())].key;
  queries_ += uint64_t(num_query_tokens);
  hits_ += uint64_t(ids.size()) * uint64_t(block_size_);
}

void BlockManager::uncache(int32_t id) {
  Block& b = blocks_[size_t(id)];
  if (!b.cached) return;
  auto it = index_.find(b.key);
  if (it != index_.end() && it->second == id) index_.erase(it);
  b.cached = false;
  b.tokens.clear();
  b.parent = -1;
}

void BlockManager::drop_entry(int32_t id) {
  Block& b = blocks_[size_t(id)];
  if (b.cached && b.ref_count == 0) {
    evictable_.erase(b.lru_pos);
    free_.push_back(id);
  }
  uncache(id);
}

int32_t BlockManager::take_block() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    assert(!evictable_.empty());
    id = evictable_.front();  // least recently freed
    evictable_.pop_front();
    uncache(id);
  }
  blocks_[size_t(id)].ref_count = 1;
  ++blocks_[size_t(id)].generation;  // new content: cache entries naming it as parent go stale
  ++num_used_;
  return id;
}

bool BlockManager::ensure_capacity(BlockTable& table, int num_tokens) {
  int need = blocks_for(num_tokens) - int(table.blocks.size());
  if (need <= 0) return true;
  if (need > num_free()) return false;
  for (int i = 0; i < need; ++i) table.blocks.push_back(take_block());
  return true;
}

void BlockManager::commit(std::span<const int32_t> tokens, int num_computed, BlockTable& table) {
  if (!caching_) return;
  const int full = std::min(num_computed / block_size_, int(table.blocks.size()));
  for (int i = table.num_committed; i < full; ++i) {
    auto span = tokens.subspan(size_t(i) * size_t(block_size_), size_t(block_size_));
    const uint64_t key = block_key(table.chain_hash, span);
    const int32_t parent = i > 0 ? table.blocks[size_t(i - 1)] : -1;
    const int32_t mine = table.blocks[size_t(i)];
    const int32_t other = lookup(key, parent, span);
    if (other >= 0 && other != mine) {
      // The same block was computed twice (two sequences prefilled it at once). Contract 6 makes the
      // two bit-identical, so this sequence switches to the cached one and frees its copy; later
      // blocks then chain onto the cached one and stay findable.
      Block& o = blocks_[size_t(other)];
      if (o.ref_count == 0) {
        evictable_.erase(o.lru_pos);
        ++num_used_;
      }
      ++o.ref_count;
      BlockTable single;
      single.blocks.push_back(mine);
      release(single);
      table.blocks[size_t(i)] = other;
    } else if (other < 0) {
      // A stale entry under this key (its parent was reused) or a true collision: the new block wins.
      if (auto it = index_.find(key); it != index_.end()) drop_entry(it->second);
      Block& b = blocks_[size_t(mine)];
      b.cached = true;
      b.key = key;
      b.parent = parent;
      b.parent_generation = parent >= 0 ? blocks_[size_t(parent)].generation : 0;
      b.tokens.assign(span.begin(), span.end());
      index_.emplace(key, mine);
    }
    table.chain_hash = key;
    table.num_committed = i + 1;
  }
}

void BlockManager::release(BlockTable& table) {
  for (auto it = table.blocks.rbegin(); it != table.blocks.rend(); ++it) {
    Block& b = blocks_[size_t(*it)];
    assert(b.ref_count > 0);
    if (--b.ref_count > 0) continue;
    --num_used_;
    if (b.cached) {
      evictable_.push_back(*it);
      b.lru_pos = std::prev(evictable_.end());
    } else {
      free_.push_back(*it);
    }
  }
  table = BlockTable{};
}

void BlockManager::shrink(BlockTable& table, int num_tokens) {
  const size_t keep = size_t(std::max(table.num_committed, blocks_for(num_tokens)));
  if (table.blocks.size() <= keep) return;
  BlockTable tail;
  tail.blocks.assign(table.blocks.begin() + long(keep), table.blocks.end());
  table.blocks.resize(keep);
  release(tail);
}

void BlockManager::reset_prefix_cache() {
  for (int32_t id : evictable_) {
    uncache(id);
    free_.push_back(id);
  }
  evictable_.clear();
  for (size_t id = 0; id < blocks_.size(); ++id) uncache(int32_t(id));
  index_.clear();
}

}  // namespace verbatim
