#include "engine/tokenizers/unigram_model.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/tokenizers/serde_json_float.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": model: ", what));
}

// tokenizers' K_UNK_PENALTY.
constexpr double kUnknownPenalty = 10.0;

}  // namespace

absl::StatusOr<UnigramModel> UnigramModel::FromJson(const nlohmann::json& model, const std::string& path) {
  UnigramModel m;
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_array() || vocab->empty()) {
    return Bad(path, "vocab must be a non-empty list of [piece, score]");
  }
  if (vocab->size() > (1u << 24)) return Bad(path, "vocab has more than 2^24 entries");
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab->size(); ++i) {
    const nlohmann::json& entry = (*vocab)[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
      return Bad(path, absl::StrCat("vocab[", i, "] is not [piece, score]"));
    }
    std::string piece = entry[0].get<std::string>();
    if (!IsValidUtf8(piece)) return Bad(path, absl::StrCat("vocab[", i, "] is not valid UTF-8"));
    // As tokenizers reads it (serde_json_float.h): ties between
    // segmentations break on the last bit.
    const double score = SerdeJsonFloat(entry[1].get<double>());
    min_score = std::min(min_score, score);
    // A repeated piece maps to its last id, as tokenizers' token_to_ids
    // (a map filled in order) has it.
    m.ids_[piece] = static_cast<int32_t>(i);
    m.pieces_.push_back(std::move(piece));
    m.scores_.push_back(score);
  }
  if (!model.contains("unk_id") || !model["unk_id"].is_number_integer()) {
    return Bad(path, "unk_id is missing (an unknown character would have no token)");
  }
  const int64_t unk = model["unk_id"].get<int64_t>();
  if (unk < 0 || unk >= static_cast<int64_t>(m.pieces_.size())) {
    return Bad(path, absl::StrCat("unk_id ", unk, " is outside the vocabulary [0, ", m.pieces_.size(), ")"));
  }
  m.unk_id_ = static_cast<int32_t>(unk);
  m.unk_score_ = min_score - kUnknownPenalty;
  if (model.contains("byte_fallback") && model["byte_fallback"].is_boolean()) {
    m.byte_fallback_ = model["byte_fallback"].get<bool>();
  }
  m.BuildTrie();
  return m;
}

void UnigramModel::BuildTrie() {
  // Pieces in byte order: each shares with the one before it exactly the
  // path of their common prefix, so the trie is built without lookups by
  // keeping that path.
  std::vector<int32_t> order;
  order.reserve(ids_.size());
  for (const auto& [piece, id] : ids_) {
    if (!piece.empty()) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return pieces_[a] < pieces_[b]; });
  trie_.assign(1, TrieNode());
  std::vector<std::pair<uint64_t, int32_t>> edges;  // (node << 8 | byte, child)
  std::vector<int32_t> path = {0};  // path[k]: the node after k bytes of `previous`
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& piece = pieces_[id];
    size_t common = 0;
    if (previous != nullptr) {
      while (common < piece.size() && common < previous->size() && piece[common] == (*previous)[common]) ++common;
    }
    path.resize(common + 1);
    for (size_t k = common; k < piece.size(); ++k) {
      const auto child = static_cast<int32_t>(trie_.size());
      trie_.emplace_back();
      edges.emplace_back((static_cast<uint64_t>(path.back()) << 8) | static_cast<uint8_t>(piece[k]), child);
      path.push_back(child);
    }
    trie_[path.back()].piece = id;
    previous = &piece;
  }
  std::sort(edges.begin(), edges.end());
  edge_begin_.assign(trie_.size() + 1, 0);
  for (const auto& [key, child] : edges) ++edge_begin_[(key >> 8) + 1];
  for (size_t n = 1; n < edge_begin_.size(); ++n) edge_begin_[n] += edge_begin_[n - 1];
  edge_byte_.reserve(edges.size());
  edge_child_.reserve(edges.size());
  for (const auto& [key, child] : edges) {
    edge_byte_.push_back(static_cast<uint8_t>(key & 0xFF));
    edge_child_.push_back(child);
  }
}

int32_t UnigramModel::Child(int32_t node, uint8_t byte) const {
  const auto first = edge_byte_.begin() + edge_begin_[node];
  const auto last = edge_byte_.begin() + edge_begin_[node + 1];
  const auto it = std::lower_bound(first, last, byte);
  return it == last || *it != byte ? -1 : edge_child_[it - edge_byte_.begin()];
}

void UnigramModel::Tokenize(const AlignedText& piece, TextEncoding* out) const {
  if (piece.empty()) return;
  std::vector<size_t> char_of;  // the character each byte starts
  const std::string text = ToUtf8(piece, &char_of);
  const size_t n = text.size();
  // best[e]: the best segmentation of text[0, e): its score, where its last
  // token starts and which id it is.
  struct Node {
    double score = 0;
    size_t start = 0;
    int32_t id = -1;
    bool reached = false;
  };
  std::vector<Node> best(n + 1);
  best[0].reached = true;
  size_t start = 0;
  while (start < n) {
    const size_t char_len = [&] {
      size_t k = start + 1;
      while (k < n && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) ++k;
      return k - start;
    }();
    const double here = best[start].score;
    bool single_char_piece = false;
    int32_t node = 0;
    for (size_t len = 1; start + len <= n; ++len) {  // shortest first, as a trie's prefix search yields them
      node = Child(node, static_cast<uint8_t>(text[start + len - 1]));
      if (node < 0) break;
      const int32_t id = trie_[node].piece;
      if (id < 0) continue;
      Node& target = best[start + len];
      const double candidate = here + scores_[id];
      if (!target.reached || candidate > target.score) target = {candidate, start, id, true};
      if (len == char_len) single_char_piece = true;
    }
    if (!single_char_piece) {
      Node& target = best[start + char_len];
      const double candidate = here + unk_score_;
      if (!target.reached || candidate > target.score) target = {candidate, start, unk_id_, true};
    }
    start += char_len;
  }
  // Back from the end; consecutive unknowns become one token.
  struct Span {
    size_t begin, end;
    int32_t id;
  };
  std::vector<Span> spans;
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    if (node.id == unk_id_ && !spans.empty() && spans.back().id == unk_id_ && spans.back().begin == end) {
      spans.back().begin = node.start;
    } else {
      spans.push_back({node.start, end, node.id});
    }
    end = node.start;
  }
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    const std::pair<uint32_t, uint32_t> offsets(piece[char_of[it->begin]].begin, piece[char_of[it->end] - 1].end);
    int32_t id = it->id;
    if (id == unk_id_) {
      // The fused text may itself be an entry (tokenizers looks it up).
      auto known = ids_.find(std::string_view(text).substr(it->begin, it->end - it->begin));
      if (known != ids_.end()) id = known->second;
    }
    if (id == unk_id_ && byte_fallback_) {
      std::vector<int32_t> bytes;
      for (size_t b = it->begin; b < it->end; ++b) {
        auto byte_id = ids_.find(absl::StrFormat("<0x%02X>", static_cast<uint8_t>(text[b])));
        if (byte_id == ids_.end()) break;
        bytes.push_back(byte_id->second);
      }
      if (bytes.size() == it->end - it->begin) {
        for (int32_t b : bytes) {
          out->ids.push_back(b);
          out->offsets.push_back(offsets);
        }
        continue;
      }
    }
    out->ids.push_back(id);
    out->offsets.push_back(offsets);
  }
}

}  // namespace attnserve
