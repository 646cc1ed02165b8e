// The KV block pool and prefix cache, GPU-free: reference counts, the free list, chained-hash
// lookups verified by tokens and parent, LRU eviction, the (len - 1) cap, dedupe, reset, counters.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/block_manager.h"

using namespace verbatim;

namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Allocates and "computes" every token of `tokens`, committing the full blocks.
BlockTable computed(BlockManager& bm, const std::vector<int32_t>& tokens) {
  BlockTable t;
  EXPECT_TRUE(bm.ensure_capacity(t, int(tokens.size())));
  bm.commit(tokens, int(tokens.size()), t);
  return t;
}

}  // namespace

TEST(BlockManager, AllocatesAndReleases) {
  BlockManager bm(8, 4, true);
  BlockTable t;
  ASSERT_TRUE(bm.ensure_capacity(t, 10));
  EXPECT_EQ(t.blocks.size(), 3u);
  EXPECT_EQ(bm.num_used(), 3);
  EXPECT_EQ(bm.num_free(), 5);
  ASSERT_TRUE(bm.ensure_capacity(t, 12));  // still 3 blocks
  EXPECT_EQ(t.blocks.size(), 3u);
  BlockTable big;
  EXPECT_FALSE(bm.ensure_capacity(big, 24));  // needs 6, 5 free: nothing taken
  EXPECT_TRUE(big.blocks.empty());
  EXPECT_EQ(bm.num_free(), 5);
  bm.release(t);
  EXPECT_TRUE(t.blocks.empty());
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.num_free(), 8);
}

TEST(BlockManager, FindsCommittedFullBlocksCappedAtLenMinusOne) {
  BlockManager bm(16, 4, true);
  std::vector<int32_t> a = iota_tokens(13);  // 3 full blocks + 1 token
  BlockTable ta = computed(bm, a);
  EXPECT_EQ(bm.num_cached_blocks(), 3);      // the partial block is not cached
  std::vector<int32_t> same = a;
  EXPECT_EQ(bm.find_prefix(same), std::vector<int32_t>(ta.blocks.begin(), ta.blocks.begin() + 3));
  std::vector<int32_t> exact(a.begin(), a.begin() + 12);  // 12 tokens: at most 11 cached -> 2 blocks
  EXPECT_EQ(bm.find_prefix(exact).size(), 2u);
  std::vector<int32_t> longer = iota_tokens(40);
  EXPECT_EQ(bm.find_prefix(longer).size(), 3u);
  std::vector<int32_t> one(a.begin(), a.begin() + 1);
  EXPECT_TRUE(bm.find_prefix(one).empty());
}

TEST(BlockManager, HitsAreVerifiedByTokensAndParent) {
  BlockManager bm(16, 4, true);
  std::vector<int32_t> a = iota_tokens(13);
  BlockTable ta = computed(bm, a);
  std::vector<int32_t> b = a;
  b[9] = 500;  // third block differs
  EXPECT_EQ(bm.find_prefix(b).size(), 2u);
  std::vector<int32_t> c = a;
  c[0] = 500;  // first block differs: its second block has the same tokens but another parent
  EXPECT_TRUE(bm.find_prefix(c).empty());
  // A block whose tokens equal a cached block's, reached from a different first block, misses.
  std::vector<int32_t> d = iota_tokens(4, 100);
  d.insert(d.end(), a.begin() + 4, a.end());
  EXPECT_TRUE(bm.find_prefix(d).empty());
}

TEST(BlockManager, SharedBlocksAreRefCounted) {
  BlockManager bm(8, 4, true);
  std::vector<int32_t> a = iota_tokens(9);
  BlockTable ta = computed(bm, a);  // 3 blocks, 2 cached
  auto prefix = bm.find_prefix(a);
  ASSERT_EQ(prefix.size(), 2u);
  EXPECT_EQ(bm.num_evictable(prefix), 0);  // still held by a
  BlockTable tb;
  bm.acquire_prefix(a, prefix, tb, int(a.size()));
  ASSERT_TRUE(bm.ensure_capacity(tb, 9));
  EXPECT_EQ(bm.num_used(), 4);  // 2 shared + 1 + 1
  bm.release(ta);
  EXPECT_EQ(bm.num_used(), 3);  // the shared ones survive: b holds them
  EXPECT_EQ(bm.find_prefix(a).size(), 2u);
  bm.release(tb);
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.num_free(), 8);
  EXPECT_EQ(bm.find_prefix(a).size(), 2u);  // refcount 0, still cached
  EXPECT_EQ(bm.num_evictable(bm.find_prefix(a)), 2);
}

TEST(BlockManager, EvictsTheLeastRecentlyFreedTailFirst) {
  BlockManager bm(6, 2, true);
  std::vector<int32_t> a = iota_tokens(6), b = iota_tokens(6, 100);
  BlockTable ta = computed(bm, a), tb = computed(bm, b);
  EXPECT_EQ(bm.num_free(), 0);
  bm.release(ta);  // a freed first: a's blocks go first, its last block before its first
  bm.release(tb);
  std::vector<int32_t> a_query = iota_tokens(7), b_query = iota_tokens(7, 100);
  EXPECT_EQ(bm.find_prefix(a_query).size(), 3u);
  BlockTable fresh;
  ASSERT_TRUE(bm.ensure_capacity(fresh, 2));
  EXPECT_EQ(bm.find_prefix(a_query).size(), 2u);
  ASSERT_TRUE(bm.ensure_capacity(fresh, 4));
  EXPECT_EQ(bm.find_prefix(a_query).size(), 1u);
  EXPECT_EQ(bm.find_prefix(b_query).size(), 3u);
  ASSERT_TRUE(bm.ensure_capacity(fresh, 8));  // a gone, then b's tail
  EXPECT_TRUE(bm.find_prefix(a_query).empty());
  EXPECT_EQ(bm.find_prefix(b_query).size(), 2u);
}

TEST(BlockManager, PrefersUncachedFreeBlocksOverEvicting) {
  BlockManager bm(4, 2, true);
  std::vector<int32_t> a = iota_tokens(4);
  BlockTable ta = computed(bm, a);
  bm.release(ta);
  BlockTable t;
  ASSERT_TRUE(bm.ensure_capacity(t, 4));  // two never-cached blocks are free: use them
  std::vector<int32_t> q = iota_tokens(5);
  EXPECT_EQ(bm.find_prefix(q).size(), 2u);
}

TEST(BlockManager, ADuplicateComputationSwitchesToTheCachedBlock) {
  BlockManager bm(16, 4, true);
  std::vector<int32_t> a = iota_tokens(8);                  // shared first block, own second
  std::vector<int32_t> b = iota_tokens(4);
  for (int32_t i = 0; i < 4; ++i) b.push_back(200 + i);
  BlockTable ta, tb;
  ASSERT_TRUE(bm.ensure_capacity(ta, 8));  // both prefilled at once: two copies of block 0
  ASSERT_TRUE(bm.ensure_capacity(tb, 8));
  EXPECT_EQ(bm.num_used(), 4);
  bm.commit(a, 8, ta);
  bm.commit(b, 8, tb);
  EXPECT_EQ(tb.blocks[0], ta.blocks[0]);  // b now shares a's copy
  EXPECT_EQ(bm.num_used(), 3);
  std::vector<int32_t> b_query = b;
  b_query.push_back(7);
  EXPECT_EQ(bm.find_prefix(b_query), tb.blocks);  // b's own block chains onto the shared one
  bm.release(ta);
  bm.release(tb);
  EXPECT_EQ(bm.num_used(), 0);
  EXPECT_EQ(bm.num_free(), 16);
}

TEST(BlockManager, ResetForgetsEveryEntry) {
  BlockManager bm(8, 4, true);
  std::vector<int32_t> a = iota_tokens(9), b = iota_tokens(9, 50);
  BlockTable ta = computed(bm, a), tb = computed(bm, b);
  bm.release(ta);
  bm.reset_prefix_cache();
  EXPECT_EQ(bm.num_cached_blocks(), 0);
  EXPECT_TRUE(bm.find_prefix(a).empty());
  EXPECT_TRUE(bm.find_prefix(b).empty());
  EXPECT_EQ(bm.num_used(), 3);  // b keeps its blocks
  EXPECT_EQ(bm.num_free(), 5);
  bm.release(tb);
  EXPECT_EQ(bm.num_free(), 8);
  BlockTable again = computed(bm, a);  // and it fills again
  EXPECT_EQ(bm.find_prefix(a).size(), 2u);
  bm.release(again);
}

TEST(BlockManager, CountsQueriedAndHitTokens) {
  BlockManager bm(8, 4, true);
  std::vector<int32_t> a = iota_tokens(10);
  BlockTable ta = computed(bm, a);
  bm.release(ta);
  auto prefix = bm.find_prefix(a);
  EXPECT_EQ(bm.prefix_queries(), 0u);  // find_prefix counts nothing
  BlockTable tb;
  bm.acquire_prefix(a, prefix, tb, int(a.size()));
  EXPECT_EQ(bm.prefix_queries(), 10u);
  EXPECT_EQ(bm.prefix_hits(), 8u);
  EXPECT_EQ(tb.num_committed, 2);
  bm.release(tb);
}

TEST(BlockManager, WithoutPrefixCachingNothingIsShared) {
  BlockManager bm(8, 4, false);
  std::vector<int32_t> a = iota_tokens(9);
  BlockTable ta = computed(bm, a);
  EXPECT_EQ(bm.num_cached_blocks(), 0);
  EXPECT_TRUE(bm.find_prefix(a).empty());
  bm.release(ta);
  EXPECT_EQ(bm.num_free(), 8);
}

TEST(BlockManager, RejectsAnEmptyPool) {
  EXPECT_THROW(BlockManager(0, 16, true), std::exception);
  EXPECT_THROW(BlockManager(4, 0, true), std::exception);
}
