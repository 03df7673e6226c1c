#include "engine/tokenizers/stop_strings.h"

#include <algorithm>
#include <utility>

namespace attnserve {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop)
    : include_stop_(include_stop) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) continue;
    stops_.push_back(std::move(stops[i]));
    index_.push_back(static_cast<int>(i));
  }
}

StopStringMatcher::Result StopStringMatcher::Push(absl::string_view text) {
  Result r;
  if (stopped_) {
    r.stopped = true;
    return r;
  }
  held_.append(text.data(), text.size());
  // The earliest occurrence of any stop (on a tie, the first listed).
  size_t best = std::string::npos;
  int which = -1;
  for (size_t s = 0; s < stops_.size(); ++s) {
    size_t pos = held_.find(stops_[s]);
    if (pos < best) {
      best = pos;
      which = static_cast<int>(s);
    }
  }
  if (which >= 0) {
    r.text = held_.substr(0, include_stop_ ? best + stops_[which].size() : best);
    r.stopped = true;
    r.stop_index = index_[which];
    stopped_ = true;
    held_.clear();
    return r;
  }
  // Hold the longest suffix that is a proper prefix of some stop.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  r.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return r;
}

std::string StopStringMatcher::Flush() {
  if (stopped_) return "";
  return std::exchange(held_, std::string());
}

}  // namespace attnserve
