// ForwardBatch: one ragged step of a decoder, as structure of arrays.
// Sequence s feeds tokens [seq_start[s], seq_start[s+1]) at consecutive
// positions starting at its cached length (a prompt chunk, or one decode
// token). Every token attends causally to its own sequence only.
#ifndef ATTNSERVE_ENGINE_MODELS_DECODER_BATCH_H_
#define ATTNSERVE_ENGINE_MODELS_DECODER_BATCH_H_

#include <cstdint>
#include <vector>

#include "engine/kv/kv_cache.h"

namespace attnserve {

struct ForwardBatch {
  std::vector<SeqId> seq_ids;      // [S] ids in the KvCache
  std::vector<int32_t> seq_start;  // [S + 1] offsets into tokens
  std::vector<int32_t> tokens;     // [T] token ids
  std::vector<int32_t> positions;  // [T] absolute positions
  std::vector<int32_t> token_seq;  // [T] index s of each token's sequence
  // Token indices whose logits Forward returns, in this order; empty: the
  // last token of each sequence (all a step samples from). Prompt logprobs
  // ask for every token of a sequence's chunk.
  std::vector<int32_t> logit_tokens;

  int num_seqs() const { return static_cast<int>(seq_ids.size()); }
  int num_tokens() const { return static_cast<int>(tokens.size()); }
  void Clear() {
    seq_ids.clear();
    seq_start.assign(1, 0);
    tokens.clear();
    positions.clear();
    token_seq.clear();
    logit_tokens.clear();
  }
  // Appends a sequence feeding `n` tokens from `ids`, the first at `start_pos`.
  void Add(SeqId seq, const int32_t* ids, int n, int start_pos) {
    if (seq_start.empty()) seq_start.push_back(0);
    const int s = num_seqs();
    seq_ids.push_back(seq);
    for (int i = 0; i < n; ++i) {
      tokens.push_back(ids[i]);
      positions.push_back(start_pos + i);
      token_seq.push_back(s);
    }
    seq_start.push_back(static_cast<int32_t>(tokens.size()));
  }
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_DECODER_BATCH_H_
