// Paged KV cache: a fixed pool of blocks shared by every sequence, with
// per-sequence block tables, exact byte accounting and prefix sharing.
//
// Memory: one allocation of num_layers * num_blocks * layout.BlockBytes().
// Block id b exists in every layer: layer l's copy starts at
// LayerBase(l) + b * layout.BlockBytes(), laid out as KvLayout says
// (engine/attention/kv_layout.h: K [Hkv, block_size, d] then V, same shape).
// So one block id holds `block_size` positions of all layers, and costs
// block_size * BytesPerToken() bytes, BytesPerToken() = 2 * L * Hkv * d * dtype.
//
// Prefix sharing: once a FULL block of a sequence's prompt has been written
// (Commit), it is published under a hash chained over every token id from
// position 0 to the end of that block. A new sequence whose prompt starts with
// the same full blocks (AttachPrefix) takes them by reference instead of
// computing them again. Shared blocks are full and never written again, so
// no copy-on-write is needed.
//
// Sliding windows: a model whose every layer attends only to the last W
// positions never reads a block again once all its positions are older
// than the window; ReleaseBefore drops those blocks from the sequence (its
// table keeps kReleasedBlock in their place, so positions still map to
// entries), and their memory goes back to the pool mid-sequence, as vLLM's
// sliding-window manager does.
//
// When its last reference goes (Free), a published block stays published as
// a cached block: free for any allocation, but until one takes it a later
// prompt with the same prefix still attaches it (vLLM's automatic prefix
// caching: a chat's next turn, a repeated system prompt, a preempted
// sequence's prompt). Allocation takes never-published free blocks first,
// then evicts cached ones least recently released first (a chain's last
// block before its first). An unpublished block returns to the pool at once.
//
// Thread-compatible: one thread (the scheduler) owns a KvCache; the step's
// compute may read/write block memory from OpenMP threads inside a call.
#ifndef ATTNSERVE_ENGINE_KV_KV_CACHE_H_
#define ATTNSERVE_ENGINE_KV_KV_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/attention/kv_layout.h"
#include "engine/core/tensor.h"

namespace attnserve {

using SeqId = int64_t;

// A block-table entry whose block ReleaseBefore gave back.
inline constexpr int32_t kReleasedBlock = -1;

// How big the pool is and how it stores K/V.
struct KvCacheOptions {
  int64_t kv_cache_bytes = int64_t{256} << 20;  // total budget; rounded down to whole blocks
  int block_size = 16;                          // token positions per block
  DType dtype = DType::kF32;                    // kF32 or kBF16
  bool prefix_sharing = true;                   // share full prompt blocks between sequences
};

// Model dimensions the cache needs.
struct KvCacheShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

struct KvStats {
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;       // blocks with at least one reference
  int64_t blocks_cached = 0;     // unreferenced but still published: free, and reusable as a prefix
  int64_t blocks_shared = 0;     // blocks with more than one reference
  int64_t bytes_capacity = 0;    // blocks_total * block_size * bytes_per_token
  int64_t bytes_used = 0;        // blocks_used * block_size * bytes_per_token
  int64_t bytes_per_token = 0;   // 2 * L * Hkv * d * dtype bytes
  int num_sequences = 0;
};

// Per-sequence accounting. "Bytes" count the blocks the sequence references
// (a shared block counts for every sequence using it).
struct KvSequenceStats {
  int num_tokens = 0;        // positions written
  int num_blocks = 0;        // blocks held (the table less released entries)
  int released_blocks = 0;   // table entries given back by ReleaseBefore
  int shared_blocks = 0;     // of which taken from another sequence's prefix
  int64_t bytes = 0;         // num_blocks * block_size * bytes_per_token
  int64_t peak_bytes = 0;    // max of `bytes` over the sequence's life
};

class KvCache {
 public:
  // INVALID_ARGUMENT when a dimension is not positive, the dtype is not f32 or
  // bf16, or the budget holds no block.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape,
                                                         const KvCacheOptions& options);

  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;
  ~KvCache();

  // Registers an empty sequence. ALREADY_EXISTS if the id is in use. Its
  // blocks are published, and shared, only among sequences of the same
  // `salt` (vLLM's cache_salt: 0 for none), so one tenant cannot learn from
  // timing what another's prompts began with.
  absl::Status AddSequence(SeqId seq, uint64_t salt = 0);

  // Shares the longest run of published full blocks that match the start of
  // `prompt`, keeping at least one prompt token unshared (its logits are
  // needed). Returns how many positions are now already in the cache; the
  // sequence must be empty. 0 when sharing is off or nothing matches.
  absl::StatusOr<int> AttachPrefix(SeqId seq, absl::Span<const int32_t> prompt);

  // Makes sure each listed sequence has blocks for `num_tokens[i]` positions,
  // all or nothing: RESOURCE_EXHAUSTED (and no change at all) when the free
  // blocks do not cover every sequence's need.
  absl::Status Reserve(absl::Span<const SeqId> seqs, absl::Span<const int> num_tokens);

  // Records that positions [old num_tokens, old + tokens.size()) were written
  // with these token ids, and publishes any prompt block that became full
  // (when `publish` is true: prompt tokens only, so sampling does not matter).
  absl::Status Commit(SeqId seq, absl::Span<const int32_t> tokens, bool publish);

  // Drops the sequence's references to the blocks whose positions all lie
  // before `position` (keys a sliding window no longer reaches); their
  // table entries become kReleasedBlock. Returns how many it released.
  // Callers only release what no later attention reads.
  int ReleaseBefore(SeqId seq, int position);

  // Drops the sequence and its references; blocks whose count reaches zero go
  // back to the pool (published ones as cached blocks). No-op for an unknown
  // id (Free is called on every path: finish, cancel, error, preemption).
  void Free(SeqId seq);

  bool HasSequence(SeqId seq) const;
  // Block table (block ids in position order; kReleasedBlock for entries
  // ReleaseBefore gave back). Empty span for unknown ids.
  absl::Span<const int32_t> BlockTable(SeqId seq) const;
  int NumTokens(SeqId seq) const;
  KvSequenceStats SequenceStats(SeqId seq) const;
  KvStats Stats() const;

  // Free blocks needed to give `seq` room for `num_tokens` positions.
  int BlocksNeeded(SeqId seq, int num_tokens) const;

  const KvLayout& layout() const { return layout_; }
  int num_layers() const { return num_layers_; }
  int block_size() const { return layout_.block_size; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t bytes_per_token() const { return bytes_per_token_; }
  std::byte* LayerBase(int layer);
  const std::byte* LayerBase(int layer) const;

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    std::vector<int32_t> tokens;   // token ids written so far (for prefix hashes)
    std::vector<uint64_t> hashes;  // chained hash of each full block
    int shared_blocks = 0;
    int released = 0;  // blocks[0, released) are kReleasedBlock
    int64_t peak_bytes = 0;
    uint64_t salt = 0;  // the root of its hash chain
  };
  struct PublishedBlock {
    int32_t block = -1;
    int32_t parent = -1;          // previous block of the chain (-1 for the first); exact check
    std::vector<int32_t> tokens;  // this block's token ids; exact check against hash collisions
    uint64_t salt = 0;            // its sequence's; exact check
  };

  KvCache(const KvLayout& layout, int num_layers, int64_t num_blocks, bool prefix_sharing);
  void Unref(int32_t block);
  // A free block for a new reference: a never-published one, else the least
  // recently cached one (unpublished). The caller has checked there is one.
  int32_t TakeFreeBlock();
  void CacheBlock(int32_t block);    // appends to the eviction order
  void UncacheBlock(int32_t block);  // removes from it
  int64_t HeldBytes(const Sequence& s) const;  // blocks held (not released) in bytes
  void UpdatePeak(Sequence& s) const;

  KvLayout layout_;
  int num_layers_;
  int64_t num_blocks_;
  int64_t bytes_per_token_;
  bool prefix_sharing_;
  std::byte* memory_ = nullptr;
  std::vector<int32_t> ref_counts_;
  // Blocks with ref count > 1, kept as counts change: Stats() runs every
  // scheduler pass and must not walk all blocks (52k for 3 GiB of cache).
  int64_t shared_blocks_ = 0;
  std::vector<uint64_t> block_hash_;      // hash a block is published under (0: none)
  std::vector<int32_t> free_blocks_;      // stack; LIFO reuse
  // Cached blocks (ref count 0, still published) in eviction order: a
  // doubly linked list over block ids, oldest at the head.
  std::vector<int32_t> cached_prev_, cached_next_;
  int32_t cached_head_ = -1, cached_tail_ = -1;
  int64_t cached_blocks_ = 0;
  absl::flat_hash_map<SeqId, Sequence> sequences_;
  absl::flat_hash_map<uint64_t, PublishedBlock> published_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_KV_KV_CACHE_H_
