// StopStringMatcher: finds stop strings in streamed text. Text that could be
// the beginning of a stop string is held back until it is known not to be,
// so a stop that straddles tokens ("Li" + "ly") is caught and never
// half-emitted. When a stop matches, the text before it is released (with
// the stop itself when asked, as vLLM's include_stop_str_in_output) and
// everything after is dropped. One instance per request; not thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_STOP_STRINGS_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_STOP_STRINGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace attnserve {

class StopStringMatcher {
 public:
  // Empty stop strings are ignored. With `include_stop`, a matched stop is
  // released with the text before it.
  explicit StopStringMatcher(std::vector<std::string> stops, bool include_stop = false);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string matched; nothing more should be emitted
    int stop_index = -1;   // which one (index into the constructor's list)
  };
  // Adds decoded text. After a stop, further pushes return nothing.
  Result Push(absl::string_view text);
  // End of generation without a stop: releases the held text.
  std::string Flush();

  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::vector<int> index_;  // stops_[i] is constructor stop index_[i]
  std::string held_;
  bool include_stop_ = false;
  bool stopped_ = false;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_STOP_STRINGS_H_
