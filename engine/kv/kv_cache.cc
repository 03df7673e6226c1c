#include "engine/kv/kv_cache.h"

#include <algorithm>
#include <new>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

constexpr std::align_val_t kAlign{64};

uint64_t ChainHash(uint64_t parent, absl::Span<const int32_t> tokens) {
  uint64_t h = absl::HashOf(parent, tokens);
  return h == 0 ? 1 : h;  // 0 means "not published"
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheShape& shape,
                                                         const KvCacheOptions& options) {
  if (shape.num_layers <= 0 || shape.num_kv_heads <= 0 || shape.head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv cache: num_layers, num_kv_heads and head_dim must be positive, got ", shape.num_layers,
        ", ", shape.num_kv_heads, ", ", shape.head_dim));
  }
  if (options.block_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv cache: block_size must be positive, got ", options.block_size));
  }
  if (options.dtype != DType::kF32 && options.dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv cache: dtype must be f32 or bf16, got ", DTypeName(options.dtype)));
  }
  KvLayout layout{shape.num_kv_heads, shape.head_dim, options.block_size, options.dtype};
  const int64_t per_block_all_layers = layout.BlockBytes() * shape.num_layers;
  const int64_t num_blocks = options.kv_cache_bytes / per_block_all_layers;
  if (num_blocks <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv cache: kv_cache_bytes ", options.kv_cache_bytes, " holds no block of ",
        per_block_all_layers, " bytes (", options.block_size, " tokens)"));
  }
  if (num_blocks > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv cache: kv_cache_bytes ", options.kv_cache_bytes, " is too many blocks"));
  }
  return std::unique_ptr<KvCache>(
      new KvCache(layout, shape.num_layers, num_blocks, options.prefix_sharing));
}

KvCache::KvCache(const KvLayout& layout, int num_layers, int64_t num_blocks, bool prefix_sharing)
    : layout_(layout),
      num_layers_(num_layers),
      num_blocks_(num_blocks),
      bytes_per_token_(2LL * num_layers * layout.num_kv_heads * layout.head_dim *
                       static_cast<int64_t>(DTypeSize(layout.dtype))),
      prefix_sharing_(prefix_sharing),
      ref_counts_(num_blocks, 0),
      block_hash_(num_blocks, 0),
      cached_prev_(num_blocks, -1),
      cached_next_(num_blocks, -1) {
  const size_t bytes = static_cast<size_t>(num_layers) * num_blocks * layout.BlockBytes();
  memory_ = static_cast<std::byte*>(::operator new(bytes, kAlign));
  free_blocks_.reserve(num_blocks);
  // Stack: lowest ids are handed out first.
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

KvCache::~KvCache() { ::operator delete(memory_, kAlign); }

std::byte* KvCache::LayerBase(int layer) {
  return memory_ + static_cast<size_t>(layer) * num_blocks_ * layout_.BlockBytes();
}
const std::byte* KvCache::LayerBase(int layer) const {
  return memory_ + static_cast<size_t>(layer) * num_blocks_ * layout_.BlockBytes();
}

absl::Status KvCache::AddSequence(SeqId seq, uint64_t salt) {
  auto [it, inserted] = sequences_.try_emplace(seq);
  if (!inserted) return absl::AlreadyExistsError(absl::StrCat("kv cache: sequence ", seq, " exists"));
  it->second.salt = salt;
  return absl::OkStatus();
}

absl::StatusOr<int> KvCache::AttachPrefix(SeqId seq, absl::Span<const int32_t> prompt) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("kv cache: no sequence ", seq));
  Sequence& s = it->second;
  if (!s.tokens.empty() || !s.blocks.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("kv cache: AttachPrefix on non-empty sequence ", seq));
  }
  if (!prefix_sharing_ || prompt.empty()) return 0;
  const int bs = layout_.block_size;
  const int max_blocks = (static_cast<int>(prompt.size()) - 1) / bs;  // keep >= 1 token to compute
  uint64_t parent_hash = s.salt;
  int32_t parent_block = -1;
  for (int i = 0; i < max_blocks; ++i) {
    auto chunk = prompt.subspan(static_cast<size_t>(i) * bs, bs);
    const uint64_t h = ChainHash(parent_hash, chunk);
    auto p = published_.find(h);
    if (p == published_.end() || p->second.parent != parent_block || p->second.salt != s.salt ||
        !std::equal(chunk.begin(), chunk.end(), p->second.tokens.begin(), p->second.tokens.end())) {
      break;
    }
    const int32_t b = p->second.block;
    if (ref_counts_[b] == 0) UncacheBlock(b);  // a released prompt's block, taken back
    if (++ref_counts_[b] == 2) ++shared_blocks_;
    s.blocks.push_back(b);
    s.hashes.push_back(h);
    s.tokens.insert(s.tokens.end(), chunk.begin(), chunk.end());
    ++s.shared_blocks;
    parent_hash = h;
    parent_block = b;
  }
  UpdatePeak(s);
  return static_cast<int>(s.tokens.size());
}

int KvCache::BlocksNeeded(SeqId seq, int num_tokens) const {
  auto it = sequences_.find(seq);
  const int have = it == sequences_.end() ? 0 : static_cast<int>(it->second.blocks.size());
  const int need = (num_tokens + layout_.block_size - 1) / layout_.block_size;
  return std::max(0, need - have);
}

absl::Status KvCache::Reserve(absl::Span<const SeqId> seqs, absl::Span<const int> num_tokens) {
  if (seqs.size() != num_tokens.size()) {
    return absl::InvalidArgumentError("kv cache: Reserve needs one token count per sequence");
  }
  int64_t total = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!sequences_.contains(seqs[i])) {
      return absl::NotFoundError(absl::StrCat("kv cache: no sequence ", seqs[i]));
    }
    if (num_tokens[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("kv cache: negative token count for ", seqs[i]));
    }
    total += BlocksNeeded(seqs[i], num_tokens[i]);
  }
  // Duplicated ids would be counted twice; that only over-asks, never over-commits.
  const int64_t free = static_cast<int64_t>(free_blocks_.size()) + cached_blocks_;
  if (total > free) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "kv cache: need ", total, " more blocks, ", free, " free of ", num_blocks_,
        " (", layout_.block_size, " tokens, ", layout_.block_size * bytes_per_token_,
        " bytes each)"));
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = sequences_.find(seqs[i])->second;
    for (int n = BlocksNeeded(seqs[i], num_tokens[i]); n > 0; --n) {
      const int32_t b = TakeFreeBlock();
      ref_counts_[b] = 1;
      s.blocks.push_back(b);
    }
    UpdatePeak(s);
  }
  return absl::OkStatus();
}

absl::Status KvCache::Commit(SeqId seq, absl::Span<const int32_t> tokens, bool publish) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("kv cache: no sequence ", seq));
  Sequence& s = it->second;
  const int bs = layout_.block_size;
  if (s.tokens.size() + tokens.size() > s.blocks.size() * static_cast<size_t>(bs)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kv cache: sequence ", seq, " commits ", s.tokens.size() + tokens.size(),
        " positions but holds blocks for ", s.blocks.size() * bs));
  }
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  // Hash (and maybe publish) every block that became full.
  while (s.hashes.size() < s.tokens.size() / bs) {
    const size_t i = s.hashes.size();
    const uint64_t parent = i == 0 ? s.salt : s.hashes[i - 1];
    auto chunk = absl::MakeConstSpan(s.tokens).subspan(i * bs, bs);
    const uint64_t h = ChainHash(parent, chunk);
    s.hashes.push_back(h);
    const int32_t b = s.blocks[i];
    // Only a block whose parent is published under this chain can ever be
    // attached (AttachPrefix checks the parent block by id): not after the
    // parent was released by a sliding window, nor when another sequence's
    // copy of the parent was published first.
    const bool reachable = i == 0 || (s.blocks[i - 1] != kReleasedBlock && block_hash_[s.blocks[i - 1]] == parent);
    if (publish && prefix_sharing_ && reachable && block_hash_[b] == 0 && !published_.contains(h)) {
      published_[h] = PublishedBlock{b, i == 0 ? -1 : s.blocks[i - 1],
                                     std::vector<int32_t>(chunk.begin(), chunk.end()), s.salt};
      block_hash_[b] = h;
    }
  }
  return absl::OkStatus();
}

void KvCache::Unref(int32_t block) {
  const int32_t left = --ref_counts_[block];
  if (left == 1) --shared_blocks_;
  if (left > 0) return;
  if (block_hash_[block] != 0) {
    CacheBlock(block);  // stays published until an allocation needs it
    return;
  }
  free_blocks_.push_back(block);
}

int32_t KvCache::TakeFreeBlock() {
  if (!free_blocks_.empty()) {
    const int32_t b = free_blocks_.back();
    free_blocks_.pop_back();
    return b;
  }
  const int32_t b = cached_head_;
  UncacheBlock(b);
  published_.erase(block_hash_[b]);
  block_hash_[b] = 0;
  return b;
}

void KvCache::CacheBlock(int32_t block) {
  cached_prev_[block] = cached_tail_;
  cached_next_[block] = -1;
  if (cached_tail_ >= 0) {
    cached_next_[cached_tail_] = block;
  } else {
    cached_head_ = block;
  }
  cached_tail_ = block;
  ++cached_blocks_;
}

void KvCache::UncacheBlock(int32_t block) {
  const int32_t prev = cached_prev_[block], next = cached_next_[block];
  if (prev >= 0) {
    cached_next_[prev] = next;
  } else {
    cached_head_ = next;
  }
  if (next >= 0) {
    cached_prev_[next] = prev;
  } else {
    cached_tail_ = prev;
  }
  cached_prev_[block] = cached_next_[block] = -1;
  --cached_blocks_;
}

int KvCache::ReleaseBefore(SeqId seq, int position) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return 0;
  Sequence& s = it->second;
  const int whole = std::min<int>(std::max(0, position) / layout_.block_size, static_cast<int>(s.blocks.size()));
  const int before = s.released;
  for (; s.released < whole; ++s.released) {
    Unref(s.blocks[s.released]);
    s.blocks[s.released] = kReleasedBlock;
  }
  return s.released - before;
}

void KvCache::Free(SeqId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  // Release from the end so a chain's children go before their parents.
  const std::vector<int32_t>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend() - it->second.released; ++b) Unref(*b);
  sequences_.erase(it);
}

int64_t KvCache::HeldBytes(const Sequence& s) const {
  return static_cast<int64_t>(s.blocks.size() - s.released) * layout_.block_size * bytes_per_token_;
}

void KvCache::UpdatePeak(Sequence& s) const { s.peak_bytes = std::max(s.peak_bytes, HeldBytes(s)); }

bool KvCache::HasSequence(SeqId seq) const { return sequences_.contains(seq); }

absl::Span<const int32_t> KvCache::BlockTable(SeqId seq) const {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return {};
  return it->second.blocks;
}

int KvCache::NumTokens(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? 0 : static_cast<int>(it->second.tokens.size());
}

KvSequenceStats KvCache::SequenceStats(SeqId seq) const {
  KvSequenceStats st;
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return st;
  const Sequence& s = it->second;
  st.num_tokens = static_cast<int>(s.tokens.size());
  st.num_blocks = static_cast<int>(s.blocks.size()) - s.released;
  st.released_blocks = s.released;
  st.shared_blocks = s.shared_blocks;
  st.bytes = HeldBytes(s);
  st.peak_bytes = s.peak_bytes;
  return st;
}

KvStats KvCache::Stats() const {
  KvStats st;
  st.blocks_total = num_blocks_;
  st.blocks_used = num_blocks_ - static_cast<int64_t>(free_blocks_.size()) - cached_blocks_;
  st.blocks_cached = cached_blocks_;
  st.blocks_shared = shared_blocks_;
  st.bytes_per_token = bytes_per_token_;
  st.bytes_capacity = num_blocks_ * layout_.block_size * bytes_per_token_;
  st.bytes_used = st.blocks_used * layout_.block_size * bytes_per_token_;
  st.num_sequences = static_cast<int>(sequences_.size());
  return st;
}

}  // namespace attnserve
