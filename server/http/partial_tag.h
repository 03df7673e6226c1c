// Where a streamed text may be cut in the middle of a tag (<tool_call>,
// </think>): what a stream holds back until the next bytes tell.
#ifndef ATTNSERVE_SERVER_HTTP_PARTIAL_TAG_H_
#define ATTNSERVE_SERVER_HTTP_PARTIAL_TAG_H_

#include <algorithm>
#include <cstddef>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace attnserve {

// The length of the longest end of `text` that begins `tag`, shorter than
// the tag (0 when none).
inline size_t TagStartAtEnd(absl::string_view text, absl::string_view tag) {
  for (size_t keep = std::min(text.size(), tag.size() - 1); keep > 0; --keep) {
    if (absl::EndsWith(text, tag.substr(0, keep))) return keep;
  }
  return 0;
}

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_PARTIAL_TAG_H_
