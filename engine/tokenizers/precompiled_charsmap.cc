#include "engine/tokenizers/precompiled_charsmap.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizers/unicode_util.h"

namespace attnserve {
namespace {

// Darts-clone's unit layout.
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

absl::StatusOr<PrecompiledCharsmap> PrecompiledCharsmap::FromBase64(absl::string_view base64,
                                                                    const std::string& where) {
  std::string blob;
  if (!absl::Base64Unescape(base64, &blob)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": precompiled_charsmap is not valid base64"));
  }
  if (blob.size() < 4) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": precompiled_charsmap is shorter than its header"));
  }
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<uint8_t>(blob[i]);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > blob.size() - 4) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": precompiled_charsmap's trie size ", trie_bytes,
                                                   " is not whole units within its ", blob.size(), " bytes"));
  }
  PrecompiledCharsmap m;
  m.units_.resize(trie_bytes / 4);
  for (size_t u = 0; u < m.units_.size(); ++u) {
    const auto* b = reinterpret_cast<const uint8_t*>(blob.data() + 4 + 4 * u);
    m.units_[u] = static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
                  (static_cast<uint32_t>(b[2]) << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  m.pool_ = blob.substr(4 + trie_bytes);
  if (!IsValidUtf8(m.pool_)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": precompiled_charsmap's replacements are not UTF-8"));
  }
  return m;
}

std::optional<absl::string_view> PrecompiledCharsmap::Transform(absl::string_view chunk) const {
  // Darts-clone's common prefix search, stopped at the first (shortest) hit.
  // Every index is checked: a damaged trie gives "no rule", never a read out
  // of bounds.
  size_t node = 0;
  if (units_.empty()) return std::nullopt;
  node ^= Offset(units_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (Label(unit) != c) return std::nullopt;
    node ^= Offset(unit);
    if (HasLeaf(unit)) {
      if (node >= units_.size()) return std::nullopt;
      const size_t start = Value(units_[node]);
      if (start > pool_.size()) return std::nullopt;
      const size_t end = pool_.find('\0', start);
      return absl::string_view(pool_).substr(start, (end == std::string::npos ? pool_.size() : end) - start);
    }
  }
  return std::nullopt;
}

}  // namespace attnserve
