#include "engine/tokenizers/bpe_merge.h"

#include <queue>
#include <tuple>

namespace attnserve {

int Utf8CharLen(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + len > s.size()) return 1;
  for (int k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return len;
}

std::vector<std::string> SplitUtf8Chars(absl::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    int n = Utf8CharLen(text, i);
    out.emplace_back(text.substr(i, n));
    i += n;
  }
  return out;
}

std::vector<std::string> BpeMerge(std::vector<std::string> sym, const BpeRankFn& rank) {
  const int n = static_cast<int>(sym.size());
  if (n < 2) return sym;
  std::vector<int> prev(n), next(n), version(n, 0);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // (rank, left, right, left version, right version); min-heap.
  using Entry = std::tuple<double, int, int, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    if (std::optional<double> rk = rank(sym[l], sym[r])) heap.emplace(*rk, l, r, version[l], version[r]);
  };
  for (int i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!heap.empty()) {
    auto [rk, l, r, vl, vr] = heap.top();
    heap.pop();
    if (!alive[l] || !alive[r] || next[l] != r || version[l] != vl || version[r] != vr) continue;  // stale
    sym[l] += sym[r];
    alive[r] = false;
    ++version[l];
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    push(prev[l], l);
    push(l, next[l]);
  }
  std::vector<std::string> out;
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(std::move(sym[i]));
  return out;
}

}  // namespace attnserve
