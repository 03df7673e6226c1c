#include "engine/sampling/choice_acceptor.h"

#include <algorithm>

namespace attnserve {

bool ChoiceAcceptor::Feed(uint8_t byte) {
  const std::vector<std::string>& s = *sorted_;
  // A choice that ends here sorts first in the range and takes no more bytes.
  const int first = complete() ? lo_ + 1 : lo_;
  const auto begin = s.begin() + first, end = s.begin() + hi_;
  const size_t at = static_cast<size_t>(offset_);
  auto byte_of = [at](const std::string& c) { return static_cast<uint8_t>(c[at]); };
  const auto lo = std::partition_point(begin, end, [&](const std::string& c) { return byte_of(c) < byte; });
  const auto hi = std::partition_point(lo, end, [&](const std::string& c) { return byte_of(c) == byte; });
  if (lo == hi) return false;
  lo_ = static_cast<int>(lo - s.begin());
  hi_ = static_cast<int>(hi - s.begin());
  ++offset_;
  return true;
}

}  // namespace attnserve
