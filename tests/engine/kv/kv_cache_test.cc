#include "engine/kv/kv_cache.h"

#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

// Llama-ish toy: 3 layers, 2 KV heads, head_dim 8.
constexpr KvCacheShape kShape{3, 2, 8};

std::unique_ptr<KvCache> MakeCache(int blocks, DType dtype = DType::kF32, int block_size = 4) {
  const int64_t per_token = 2LL * kShape.num_layers * kShape.num_kv_heads * kShape.head_dim *
                            static_cast<int64_t>(DTypeSize(dtype));
  KvCacheOptions opt;
  opt.block_size = block_size;
  opt.dtype = dtype;
  opt.kv_cache_bytes = per_token * block_size * blocks + per_token;  // not a whole block more
  auto cache = KvCache::Create(kShape, opt);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return *std::move(cache);
}

TEST(KvCacheTest, ByteAccountingEqualsFormula) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    auto cache = MakeCache(10, dtype);
    const int64_t want_per_token = 2LL * 3 * 2 * 8 * (dtype == DType::kF32 ? 4 : 2);
    EXPECT_EQ(cache->bytes_per_token(), want_per_token);
    EXPECT_EQ(cache->num_blocks(), 10);
    // Block bytes of the layout times layers equals block_size tokens.
    EXPECT_EQ(cache->layout().BlockBytes() * kShape.num_layers, 4 * want_per_token);
    ASSERT_TRUE(cache->AddSequence(7).ok());
    ASSERT_TRUE(cache->Reserve({7}, {9}).ok());  // 9 tokens -> 3 blocks
    std::vector<int32_t> toks(9, 5);
    ASSERT_TRUE(cache->Commit(7, toks, true).ok());
    const KvStats st = cache->Stats();
    EXPECT_EQ(st.blocks_total, 10);
    EXPECT_EQ(st.blocks_used, 3);
    EXPECT_EQ(st.bytes_per_token, want_per_token);
    EXPECT_EQ(st.bytes_used, 3 * 4 * want_per_token);
    EXPECT_EQ(st.bytes_capacity, 10 * 4 * want_per_token);
    const KvSequenceStats ss = cache->SequenceStats(7);
    EXPECT_EQ(ss.num_tokens, 9);
    EXPECT_EQ(ss.num_blocks, 3);
    EXPECT_EQ(ss.bytes, 12 * want_per_token);
    EXPECT_EQ(ss.peak_bytes, 12 * want_per_token);
  }
}

TEST(KvCacheTest, LayerBasesAreDisjointAndInsideThePool) {
  auto cache = MakeCache(5);
  const int64_t layer_bytes = cache->num_blocks() * cache->layout().BlockBytes();
  for (int l = 1; l < kShape.num_layers; ++l) {
    EXPECT_EQ(cache->LayerBase(l) - cache->LayerBase(l - 1), layer_bytes);
  }
}

TEST(KvCacheTest, ExhaustionIsAStatusAndChangesNothing) {
  auto cache = MakeCache(4);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->AddSequence(2).ok());
  ASSERT_TRUE(cache->Reserve({1}, {8}).ok());  // 2 blocks
  const KvStats before = cache->Stats();
  // Needs 2 + 1 = 3 blocks, only 2 free: refused as a whole.
  absl::Status s = cache->Reserve({1, 2}, {12, 8});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), testing::HasSubstr("free"));
  const KvStats after = cache->Stats();
  EXPECT_EQ(after.blocks_used, before.blocks_used);
  EXPECT_EQ(cache->BlockTable(1).size(), 2u);
  EXPECT_EQ(cache->BlockTable(2).size(), 0u);
  // What fits still works.
  EXPECT_TRUE(cache->Reserve({2}, {8}).ok());
  EXPECT_EQ(cache->Stats().blocks_used, 4);
}

TEST(KvCacheTest, FreeReturnsBlocksAndTheyAreReused) {
  auto cache = MakeCache(4);
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(cache->AddSequence(round).ok());
    ASSERT_TRUE(cache->Reserve({round}, {16}).ok()) << "round " << round;
    EXPECT_EQ(cache->Stats().blocks_used, 4);
    cache->Free(round);
    EXPECT_EQ(cache->Stats().blocks_used, 0);
    EXPECT_EQ(cache->Stats().num_sequences, 0);
  }
  cache->Free(12345);  // unknown: no-op
  EXPECT_EQ(cache->Stats().blocks_used, 0);
}

TEST(KvCacheTest, PeakBytesTrackTheMaximum) {
  auto cache = MakeCache(8);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {5}).ok());
  ASSERT_TRUE(cache->Reserve({1}, {13}).ok());
  EXPECT_EQ(cache->SequenceStats(1).peak_bytes, 4 * 4 * cache->bytes_per_token());
  // Reserving fewer tokens never shrinks.
  ASSERT_TRUE(cache->Reserve({1}, {2}).ok());
  EXPECT_EQ(cache->SequenceStats(1).num_blocks, 4);
}

TEST(KvCacheTest, CommitBeyondReservedIsAnError) {
  auto cache = MakeCache(8);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {4}).ok());
  std::vector<int32_t> toks(5, 1);
  EXPECT_EQ(cache->Commit(1, toks, false).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache->AddSequence(1).code(), absl::StatusCode::kAlreadyExists);
}

TEST(KvCacheTest, PrefixSharingTakesFullBlocksByReference) {
  auto cache = MakeCache(16);
  std::vector<int32_t> prompt(11);
  std::iota(prompt.begin(), prompt.end(), 100);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_EQ(*cache->AttachPrefix(1, prompt), 0);
  ASSERT_TRUE(cache->Reserve({1}, {11}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  EXPECT_EQ(cache->Stats().blocks_used, 3);

  // Same first 9 tokens: 2 full blocks shared.
  std::vector<int32_t> other(prompt.begin(), prompt.begin() + 9);
  other.push_back(7);
  other.push_back(8);
  ASSERT_TRUE(cache->AddSequence(2).ok());
  ASSERT_EQ(*cache->AttachPrefix(2, other), 8);
  EXPECT_EQ(cache->BlockTable(2)[0], cache->BlockTable(1)[0]);
  EXPECT_EQ(cache->BlockTable(2)[1], cache->BlockTable(1)[1]);
  ASSERT_TRUE(cache->Reserve({2}, {11}).ok());
  EXPECT_EQ(cache->Stats().blocks_used, 4);  // 3 + 1, not 6
  EXPECT_EQ(cache->Stats().blocks_shared, 2);
  EXPECT_EQ(cache->SequenceStats(2).shared_blocks, 2);

  // A prompt of exactly 8 tokens shares only one block: its last token must run.
  std::vector<int32_t> exact(prompt.begin(), prompt.begin() + 8);
  ASSERT_TRUE(cache->AddSequence(3).ok());
  EXPECT_EQ(*cache->AttachPrefix(3, exact), 4);

  // Different first block: nothing shared, even if later blocks agree.
  std::vector<int32_t> diff = prompt;
  diff[0] = 99;
  ASSERT_TRUE(cache->AddSequence(4).ok());
  EXPECT_EQ(*cache->AttachPrefix(4, diff), 0);

  // Freeing the publisher keeps shared blocks alive for the others.
  EXPECT_EQ(cache->Stats().blocks_shared, 2);  // seq 3 adds a third user to block 0, not a new shared block
  cache->Free(1);
  EXPECT_EQ(cache->Stats().blocks_used, 3);  // 2 shared + seq 2's own
  EXPECT_EQ(cache->Stats().blocks_shared, 1);  // block 0 (seqs 2, 3); block 1 is seq 2's alone now
  cache->Free(2);
  EXPECT_EQ(cache->Stats().blocks_shared, 0);
  cache->Free(3);
  cache->Free(4);
  EXPECT_EQ(cache->Stats().blocks_used, 0);
  EXPECT_EQ(cache->Stats().blocks_shared, 0);
  // Once freed, the two published blocks stay cached: free, yet a later
  // prompt with that prefix still takes them.
  EXPECT_EQ(cache->Stats().blocks_cached, 2);
  ASSERT_TRUE(cache->AddSequence(5).ok());
  EXPECT_EQ(*cache->AttachPrefix(5, prompt), 8);
  EXPECT_EQ(cache->Stats().blocks_cached, 0);
  EXPECT_EQ(cache->Stats().blocks_used, 2);
  EXPECT_EQ(cache->SequenceStats(5).shared_blocks, 2);
}

// Sliding windows: whole blocks before the position go back to the pool,
// the table keeps a placeholder so positions still map to entries, and the
// bytes, peak and Free count only what is held.
TEST(KvCacheTest, ReleaseBeforeGivesBackWholeBlocksOnly) {
  auto cache = MakeCache(8);  // blocks of 4
  const int64_t block_bytes = 4 * cache->bytes_per_token();
  std::vector<int32_t> prompt(14);
  std::iota(prompt.begin(), prompt.end(), 300);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {14}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  const std::vector<int32_t> before(cache->BlockTable(1).begin(), cache->BlockTable(1).end());
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(cache->ReleaseBefore(1, 3), 0);  // position 3 is inside block 0
  EXPECT_EQ(cache->ReleaseBefore(1, 9), 2);  // blocks 0 and 1 (positions 0-7)
  EXPECT_EQ(cache->ReleaseBefore(1, 9), 0);  // idempotent
  EXPECT_THAT(cache->BlockTable(1), ::testing::ElementsAre(kReleasedBlock, kReleasedBlock, before[2], before[3]));
  KvSequenceStats st = cache->SequenceStats(1);
  EXPECT_EQ(st.num_blocks, 2);
  EXPECT_EQ(st.released_blocks, 2);
  EXPECT_EQ(st.bytes, 2 * block_bytes);
  EXPECT_EQ(st.peak_bytes, 4 * block_bytes);  // the peak stays what it was
  EXPECT_EQ(st.num_tokens, 14);
  // The two published prompt blocks are free but still cached (a later
  // prompt with this prefix can attach them); nothing is held twice.
  EXPECT_EQ(cache->Stats().blocks_used, 2);
  EXPECT_EQ(cache->Stats().blocks_cached, 2);
  // Growing again needs only the new block; the table keeps its positions.
  EXPECT_EQ(cache->BlocksNeeded(1, 17), 1);
  ASSERT_TRUE(cache->Reserve({1}, {17}).ok());
  EXPECT_EQ(cache->BlockTable(1).size(), 5u);
  EXPECT_EQ(cache->SequenceStats(1).bytes, 3 * block_bytes);
  // Past the end of the table: every block goes.
  EXPECT_EQ(cache->ReleaseBefore(1, 1000), 3);
  EXPECT_EQ(cache->Stats().blocks_used, 0);
  cache->Free(1);  // does not give the released blocks back a second time
  EXPECT_EQ(cache->Stats().blocks_used, 0);
  EXPECT_EQ(cache->Stats().blocks_total, 8);
  ASSERT_TRUE(cache->AddSequence(2).ok());
  ASSERT_TRUE(cache->Reserve({2}, {32}).ok());  // all 8 blocks are there to take
  EXPECT_EQ(cache->Stats().blocks_used, 8);
}

// A prompt block whose predecessor a window already released is not
// published (its chain cannot be matched from position 0 any more); the
// released blocks themselves still serve a later prompt's prefix.
TEST(KvCacheTest, ChainsBrokenByAReleaseAreNotPublished) {
  auto cache = MakeCache(8);
  std::vector<int32_t> prompt(13);
  std::iota(prompt.begin(), prompt.end(), 500);
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {13}).ok());
  ASSERT_TRUE(cache->Commit(1, absl::MakeConstSpan(prompt).subspan(0, 6), true).ok());  // block 0 full
  cache->ReleaseBefore(1, 5);                                                          // block 0 goes
  ASSERT_TRUE(cache->Commit(1, absl::MakeConstSpan(prompt).subspan(6), true).ok());     // blocks 1, 2 full
  cache->Free(1);
  EXPECT_EQ(cache->Stats().blocks_cached, 1);  // block 0 only
  ASSERT_TRUE(cache->AddSequence(2).ok());
  EXPECT_EQ(*cache->AttachPrefix(2, prompt), 4);
}

// Cached blocks count as free; an allocation takes never-published blocks
// first, then evicts cached ones, the least recently released first (a
// chain's last block before its first), unpublishing them.
TEST(KvCacheTest, CachedBlocksAreFreeAndEvictedOldestFirst) {
  auto cache = MakeCache(6);
  std::vector<int32_t> prompt(13);
  std::iota(prompt.begin(), prompt.end(), 200);  // 3 full blocks of 4, then one token
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {13}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  cache->Free(1);
  KvStats st = cache->Stats();
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_EQ(st.blocks_cached, 3);

  // Six blocks are free (3 never published + 3 cached): a 24-token sequence
  // fits, taking the 3 uncached ones first, then evicting 3 cached ones.
  ASSERT_TRUE(cache->AddSequence(2).ok());
  ASSERT_TRUE(cache->Reserve({2}, {12}).ok());  // the 3 never-published blocks
  EXPECT_EQ(cache->Stats().blocks_cached, 3);
  ASSERT_TRUE(cache->Reserve({2}, {16}).ok());  // one more: evicts the chain's last block
  EXPECT_EQ(cache->Stats().blocks_cached, 2);
  ASSERT_TRUE(cache->AddSequence(3).ok());
  EXPECT_EQ(*cache->AttachPrefix(3, prompt), 8);  // blocks 0 and 1 still cached
  cache->Free(3);  // back to the cache, now the most recently released
  ASSERT_TRUE(cache->Reserve({2}, {20}).ok());  // evicts block 1 (released before block 0 this time)
  ASSERT_TRUE(cache->AddSequence(4).ok());
  EXPECT_EQ(*cache->AttachPrefix(4, prompt), 4);
  cache->Free(4);
  ASSERT_TRUE(cache->Reserve({2}, {24}).ok());  // the last one
  EXPECT_EQ(cache->Stats().blocks_cached, 0);
  EXPECT_EQ(cache->Stats().blocks_used, 6);
  ASSERT_TRUE(cache->AddSequence(5).ok());
  EXPECT_EQ(*cache->AttachPrefix(5, prompt), 0);
  EXPECT_EQ(cache->Reserve({5}, {1}).code(), absl::StatusCode::kResourceExhausted);
  cache->Free(2);  // never published: straight back to the pool
  EXPECT_EQ(cache->Stats().blocks_used, 0);
  EXPECT_EQ(cache->Stats().blocks_cached, 0);
}

TEST(KvCacheTest, GeneratedTokensAreNotPublished) {
  auto cache = MakeCache(16);
  std::vector<int32_t> prompt = {1, 2, 3};
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {9}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  std::vector<int32_t> gen = {4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(cache->Commit(1, gen, false).ok());
  ASSERT_TRUE(cache->AddSequence(2).ok());
  std::vector<int32_t> all = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(*cache->AttachPrefix(2, all), 0);
}

// vLLM's cache_salt: blocks are shared only within one salt; an unsalted
// sequence shares with other unsalted ones only.
TEST(KvCacheTest, ASaltSharesOnlyWithTheSameSalt) {
  auto cache = MakeCache(16);
  std::vector<int32_t> prompt(11);
  std::iota(prompt.begin(), prompt.end(), 100);
  ASSERT_TRUE(cache->AddSequence(1, /*salt=*/42).ok());
  ASSERT_TRUE(cache->Reserve({1}, {11}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  ASSERT_TRUE(cache->AddSequence(2).ok());
  EXPECT_EQ(*cache->AttachPrefix(2, prompt), 0);  // unsalted
  ASSERT_TRUE(cache->AddSequence(3, 43).ok());
  EXPECT_EQ(*cache->AttachPrefix(3, prompt), 0);  // another salt
  ASSERT_TRUE(cache->AddSequence(4, 42).ok());
  EXPECT_EQ(*cache->AttachPrefix(4, prompt), 8);  // the same salt: two full blocks
  EXPECT_EQ(cache->BlockTable(4)[0], cache->BlockTable(1)[0]);
  // An unsalted chain is published for unsalted sequences alone.
  ASSERT_TRUE(cache->Reserve({2}, {11}).ok());
  ASSERT_TRUE(cache->Commit(2, prompt, true).ok());
  ASSERT_TRUE(cache->AddSequence(5).ok());
  EXPECT_EQ(*cache->AttachPrefix(5, prompt), 8);
  EXPECT_EQ(cache->BlockTable(5)[0], cache->BlockTable(2)[0]);
  EXPECT_NE(cache->BlockTable(5)[0], cache->BlockTable(1)[0]);
}

TEST(KvCacheTest, SharingCanBeTurnedOff) {
  KvCacheOptions opt;
  opt.block_size = 2;
  opt.prefix_sharing = false;
  auto cache = *KvCache::Create(kShape, opt);
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  ASSERT_TRUE(cache->AddSequence(1).ok());
  ASSERT_TRUE(cache->Reserve({1}, {5}).ok());
  ASSERT_TRUE(cache->Commit(1, prompt, true).ok());
  ASSERT_TRUE(cache->AddSequence(2).ok());
  EXPECT_EQ(*cache->AttachPrefix(2, prompt), 0);
}

TEST(KvCacheTest, BadOptionsAreInvalidArgument) {
  KvCacheOptions opt;
  opt.kv_cache_bytes = 10;
  EXPECT_EQ(KvCache::Create(kShape, opt).status().code(), absl::StatusCode::kInvalidArgument);
  opt = KvCacheOptions();
  opt.dtype = DType::kF16;
  EXPECT_EQ(KvCache::Create(kShape, opt).status().code(), absl::StatusCode::kInvalidArgument);
  opt = KvCacheOptions();
  opt.block_size = 0;
  EXPECT_EQ(KvCache::Create(kShape, opt).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCache::Create(KvCacheShape{0, 1, 1}, KvCacheOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace attnserve
