#include "server/core/api_key.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace attnserve {
namespace {

// Constant time in the position of the first difference (the length of the
// configured key is not a secret worth hiding).
bool SameBytes(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

absl::Status ApiKeyCheck::Check(absl::string_view authorization) const {
  if (key_.empty()) return absl::OkStatus();
  if (authorization.empty()) {
    return absl::UnauthenticatedError("this server needs an API key: send 'Authorization: Bearer <key>'");
  }
  constexpr absl::string_view kScheme = "bearer ";
  if (!absl::StartsWithIgnoreCase(authorization, kScheme)) {
    return absl::UnauthenticatedError("the Authorization header must be 'Bearer <key>'");
  }
  const absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  if (!SameBytes(token, key_)) return absl::UnauthenticatedError("the API key is not valid");
  return absl::OkStatus();
}

}  // namespace attnserve
