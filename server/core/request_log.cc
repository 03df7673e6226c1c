#include "server/core/request_log.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

constexpr size_t kMaxMessageBytes = 200;

bool IdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || absl::string_view("-_.:/+=@").find(c) != absl::string_view::npos;
}

// A logfmt value in double quotes: backslash and quote escaped, control
// characters (a newline would split the line) as spaces, cut to
// kMaxMessageBytes at a UTF-8 character boundary.
std::string Quoted(absl::string_view s) {
  if (s.size() > kMaxMessageBytes) {
    size_t cut = kMaxMessageBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut);
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string Ms(absl::Duration d) { return absl::StrFormat("%.2f", absl::ToDoubleMilliseconds(d)); }

}  // namespace

std::optional<std::string> ValidClientRequestId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return std::nullopt;
  for (char c : id) {
    if (!IdChar(c)) return std::nullopt;
  }
  return std::string(id);
}

RequestIdMaker::RequestIdMaker(absl::Time start)
    : prefix_(static_cast<uint32_t>(absl::ToUnixSeconds(start))) {}

std::string RequestIdMaker::Next() {
  return absl::StrFormat("%08x%06x", prefix_, next_.fetch_add(1, std::memory_order_relaxed));
}

std::string FormatRequestLog(const RequestLogEntry& e) {
  std::string line = absl::StrCat("request id=", e.id, " rpc=", e.rpc, " code=", StatusCodeName(e.status.code()),
                                  " total_ms=", Ms(e.total));
  if (e.queue) absl::StrAppend(&line, " queue_ms=", Ms(*e.queue));
  if (e.time_to_first_token) absl::StrAppend(&line, " ttft_ms=", Ms(*e.time_to_first_token));
  if (e.compute) absl::StrAppend(&line, " compute_ms=", Ms(*e.compute));
  if (e.inputs) absl::StrAppend(&line, " inputs=", *e.inputs);
  if (e.prompt_tokens) absl::StrAppend(&line, " prompt_tokens=", *e.prompt_tokens);
  if (e.padded_tokens) absl::StrAppend(&line, " padded_tokens=", *e.padded_tokens);
  if (e.generated_tokens) absl::StrAppend(&line, " generated_tokens=", *e.generated_tokens);
  if (!e.finish.empty()) absl::StrAppend(&line, " finish=", e.finish);
  // Decode pace after the first token, as TGI's time_per_token.
  if (e.generated_tokens && *e.generated_tokens > 1 && e.time_to_first_token) {
    const absl::Duration decode = e.total - *e.time_to_first_token;
    if (decode > absl::ZeroDuration()) {
      absl::StrAppend(&line, " ms_per_token=", Ms(decode / (*e.generated_tokens - 1)));
    }
  }
  if (e.peak_kv_bytes) absl::StrAppend(&line, " peak_kv_bytes=", *e.peak_kv_bytes);
  if (e.preemptions) absl::StrAppend(&line, " preemptions=", *e.preemptions);
  if (!e.status.ok()) absl::StrAppend(&line, " message=", Quoted(e.status.message()));
  return line;
}

}  // namespace attnserve
