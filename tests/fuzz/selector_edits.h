// The byte edits shared by the fixed-seed fuzz loops whose inputs start with
// a selector byte (which tokenizer or endpoint the rest is for):
// tests/engine/tokenizers/tokenizer_fuzz_test.cc and
// tests/server/http_request_fuzz_test.cc. Each loop picks a position and an
// edit per step and may add edits of its own; these are the common ones.
#ifndef ATTNSERVE_TESTS_FUZZ_SELECTOR_EDITS_H_
#define ATTNSERVE_TESTS_FUZZ_SELECTOR_EDITS_H_

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace attnserve::fuzz {

struct SelectorEditOptions {
  const char* const* fragments = nullptr;  // what edits 2 and 3 insert
  size_t num_fragments = 0;
  int selectors = 1;        // edit 6 sets the selector byte to one of [0, selectors)
  int truncate_one_in = 1;  // edit 5 truncates one time in this many (1: always, no draw)
};

// Where the next edit goes: never position 0, the selector byte (edit 6
// changes it, rarely, so each selector keeps getting inputs shaped for it).
inline size_t SelectorEditPosition(const std::string& s, std::mt19937_64& rng) {
  return s.size() <= 1 ? s.size() : 1 + rng() % s.size();
}

// Edit `op` (0-7) at `pos`: 0 a random byte, 1 a bit flip, 2-3 a fragment
// inserted, 4 up to 8 bytes erased, 5 truncation, 6 a new selector (one
// time in 16), 7 a splice with another corpus input.
inline void SelectorEdit(std::string& s, int op, size_t pos, const std::vector<std::string>& corpus,
                         std::mt19937_64& rng, const SelectorEditOptions& o) {
  switch (op) {
    case 0:
      if (pos < s.size()) s[pos] = static_cast<char>(rng());
      break;
    case 1:
      if (pos < s.size()) s[pos] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 2:
    case 3:
      s.insert(pos, o.fragments[rng() % o.num_fragments]);
      break;
    case 4:
      if (pos < s.size()) s.erase(pos, 1 + rng() % 8);
      break;
    case 5:
      if (pos > 1 && (o.truncate_one_in == 1 || rng() % o.truncate_one_in == 0)) s.resize(pos);
      break;
    case 6:
      if (!s.empty() && rng() % 16 == 0) s[0] = static_cast<char>(rng() % o.selectors);
      break;
    default: {
      const std::string& other = corpus[rng() % corpus.size()];
      const size_t cut = other.size() <= 1 ? other.size() : 1 + rng() % (other.size() - 1);
      s = s.substr(0, pos) + other.substr(cut);
      break;
    }
  }
}

}  // namespace attnserve::fuzz

#endif  // ATTNSERVE_TESTS_FUZZ_SELECTOR_EDITS_H_
