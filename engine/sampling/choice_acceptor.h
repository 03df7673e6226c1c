// ChoiceAcceptor: the output must be exactly one of a list of strings
// (vLLM's guided_choice), read one byte at a time. Its state is the range of
// choices, in byte order, that begin with the bytes so far: choices sharing
// a prefix are contiguous once sorted, so each byte narrows the range by two
// binary searches and the state stays a small value (SortedVocabulary::Walk
// copies it per byte).
#ifndef ATTNSERVE_ENGINE_SAMPLING_CHOICE_ACCEPTOR_H_
#define ATTNSERVE_ENGINE_SAMPLING_CHOICE_ACCEPTOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace attnserve {

inline constexpr int kMaxChoices = 256;
inline constexpr int kMaxChoiceBytes = 1024;

class ChoiceAcceptor {
 public:
  // `sorted`: distinct non-empty strings in byte order; must outlive this.
  explicit ChoiceAcceptor(const std::vector<std::string>* sorted)
      : sorted_(sorted), hi_(static_cast<int>(sorted->size())) {}

  // False: no choice continues with this byte (the state is then unusable).
  bool Feed(uint8_t byte);
  // The bytes so far are a whole choice (the output may end here).
  bool complete() const { return lo_ < hi_ && static_cast<int>((*sorted_)[lo_].size()) == offset_; }
  // Some longer choice continues the bytes so far.
  bool can_continue() const { return hi_ - lo_ > (complete() ? 1 : 0); }

 private:
  const std::vector<std::string>* sorted_;
  int lo_ = 0, hi_ = 0;  // the choices [lo_, hi_) begin with the bytes so far
  int offset_ = 0;       // bytes so far
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_CHOICE_ACCEPTOR_H_
