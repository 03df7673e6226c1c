// sse_client: a compiled closed-loop client for OpenAI-style streaming
// completions (`POST /v1/completions` with "stream": true, answered as
// server-sent events). The same program drives attnserve's HTTP gateway and
// a peer server (llama.cpp's llama-server) in bench/loadgen/peer_run.sh, so
// both services are measured through one protocol and one client.
//
//   sse_client --target HOST:PORT [--streams 16] [--requests 64]
//              [--max-new-tokens 64] [--prompt TEXT | --prompt-ids 1,2,3]
//              [--model NAME]
//
// Each of --streams threads sends greedy requests (temperature 0,
// ignore_eos, max_tokens = --max-new-tokens) one after another, one TCP
// connection per request ("Connection: close"), until --requests have been
// sent in all. A request's tokens are the `completion_tokens` of the usage
// its stream reports (both servers send it); a request whose stream carries
// no usage, or whose count differs from --max-new-tokens, counts as an error
// ("short"), so a server that stops early cannot look fast. Prints one JSON
// line in generate_client's form: tokens/s, p50/p99 time to first token and
// inter-token latency (between consecutive events whose choice carries
// text; both servers end a stream with an empty-text chunk that carries the
// finish reason and usage, which is not a token's arrival), errors by HTTP
// status or kind, and the client's own CPU time. Times are taken when a
// read returns, so events that arrive in one read share a time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int streams = 16;
  int requests = 64;
  int max_new_tokens = 64;
  std::string prompt = "Once upon a time";
  std::string prompt_ids;  // comma-separated token ids; sent instead of the text when set
  std::string model = "default";
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--target") {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) return false;
      o->host = v.substr(0, colon);
      o->port = std::atoi(v.c_str() + colon + 1);
    } else if (k == "--streams") {
      o->streams = std::atoi(v.c_str());
    } else if (k == "--requests") {
      o->requests = std::atoi(v.c_str());
    } else if (k == "--max-new-tokens") {
      o->max_new_tokens = std::atoi(v.c_str());
    } else if (k == "--prompt") {
      o->prompt = v;
    } else if (k == "--prompt-ids") {
      if (v.find_first_not_of("0123456789,") != std::string::npos) return false;
      o->prompt_ids = v;
    } else if (k == "--model") {
      o->model = v;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o->port > 0 && o->streams > 0 && o->requests > 0 && o->max_new_tokens > 0;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The body of an HTTP/1.1 response as it arrives: plain (read to EOF) or
// chunked (Transfer-Encoding: chunked), decoded incrementally.
class BodyDecoder {
 public:
  explicit BodyDecoder(bool chunked) : chunked_(chunked) {}
  // Appends the decoded bytes of `in` to *out; false on a malformed chunk.
  bool Feed(const char* in, size_t n, std::string* out) {
    if (!chunked_) {
      out->append(in, n);
      return true;
    }
    pending_.append(in, n);
    size_t pos = 0;
    while (true) {
      if (remaining_ > 0) {
        const size_t take = std::min<size_t>(remaining_, pending_.size() - pos);
        out->append(pending_, pos, take);
        pos += take;
        remaining_ -= take;
        if (remaining_ > 0) break;
        skip_crlf_ = true;
      }
      if (skip_crlf_) {
        if (pending_.size() - pos < 2) break;
        pos += 2;
        skip_crlf_ = false;
      }
      const size_t eol = pending_.find("\r\n", pos);
      if (eol == std::string::npos) break;
      char* end = nullptr;
      const unsigned long size = std::strtoul(pending_.c_str() + pos, &end, 16);
      if (end == pending_.c_str() + pos) return false;
      pos = eol + 2;
      if (size == 0) {
        done_ = true;
        break;
      }
      remaining_ = size;
    }
    pending_.erase(0, pos);
    return true;
  }
  bool done() const { return done_; }

 private:
  bool chunked_;
  std::string pending_;
  size_t remaining_ = 0;
  bool skip_crlf_ = false;
  bool done_ = false;
};

struct RequestResult {
  std::string error;  // empty when the request succeeded
  int64_t tokens = 0;
  std::vector<Clock::time_point> events;  // arrival of each event carrying a choice
};

std::optional<int64_t> CompletionTokens(const std::string& event) {
  const size_t at = event.find("\"completion_tokens\":");
  if (at == std::string::npos) return std::nullopt;
  return std::strtoll(event.c_str() + at + std::strlen("\"completion_tokens\":"), nullptr, 10);
}

RequestResult Failed(const char* error) {
  RequestResult r;
  r.error = error;
  return r;
}

RequestResult RunOne(const Options& o, const std::string& request) {
  RequestResult r;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Failed("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return Failed("connect");
  }
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return Failed("send");
    }
    sent += static_cast<size_t>(n);
  }
  std::string head, body, raw;
  std::optional<BodyDecoder> decoder;
  int status = 0;
  std::optional<int64_t> usage_tokens;
  bool finished = false;
  char buf[16384];
  while (!finished) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    const auto now = Clock::now();
    if (!decoder) {
      head.append(buf, static_cast<size_t>(n));
      const size_t end = head.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      status = std::atoi(head.c_str() + head.find(' ') + 1);
      std::string lower = head.substr(0, end);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      decoder.emplace(lower.find("transfer-encoding: chunked") != std::string::npos);
      raw = head.substr(end + 4);
      head.clear();
    } else {
      raw.assign(buf, static_cast<size_t>(n));
    }
    if (!decoder->Feed(raw.data(), raw.size(), &body)) {
      r.error = "chunking";
      break;
    }
    if (status != 200) continue;
    // Whole events end with a blank line.
    size_t start = 0;
    for (size_t end; (end = body.find("\n\n", start)) != std::string::npos; start = end + 2) {
      const std::string event = body.substr(start, end - start);
      if (event.rfind("data: ", 0) != 0) continue;
      if (event.compare(6, std::string::npos, "[DONE]") == 0) {
        finished = true;
        break;
      }
      if (event.find("\"error\"") != std::string::npos) r.error = "stream_error";
      if (event.find("\"choices\":[{") != std::string::npos && event.find("\"text\":\"\"") == std::string::npos)
        r.events.push_back(now);
      if (auto t = CompletionTokens(event)) usage_tokens = t;
    }
    body.erase(0, start);
    if (decoder->done()) break;
  }
  close(fd);
  if (status != 200) {
    r.error = status == 0 ? "no_response" : std::to_string(status);
  } else if (r.error.empty() && !finished) {
    r.error = "no_done";
  } else if (r.error.empty() && usage_tokens.value_or(-1) != o.max_new_tokens) {
    r.error = "short";
  }
  if (r.error.empty()) r.tokens = *usage_tokens;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: sse_client --target HOST:PORT [--streams N] [--requests N] "
                 "[--max-new-tokens N] [--prompt TEXT | --prompt-ids 1,2,3] [--model NAME]\n");
    return 2;
  }
  const std::string body = "{\"model\":" + JsonString(o.model) + ",\"prompt\":" + (o.prompt_ids.empty() ? JsonString(o.prompt) : "[" + o.prompt_ids + "]") +
                           ",\"max_tokens\":" + std::to_string(o.max_new_tokens) +
                           ",\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
                           "\"stream_options\":{\"include_usage\":true}}";
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
                              "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;

  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<double> ttft_ms, itl_ms;
  std::map<std::string, int> errors;
  int64_t tokens = 0;
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int s = 0; s < o.streams; ++s) {
    threads.emplace_back([&] {
      std::vector<double> my_ttft, my_itl;
      int64_t my_tokens = 0;
      std::map<std::string, int> my_errors;
      while (next.fetch_add(1) < o.requests) {
        const auto sent = Clock::now();
        const RequestResult r = RunOne(o, request);
        if (!r.error.empty()) {
          ++my_errors[r.error];
          continue;
        }
        my_tokens += r.tokens;
        for (size_t i = 0; i < r.events.size(); ++i)
          (i == 0 ? my_ttft : my_itl).push_back(Ms(r.events[i] - (i == 0 ? sent : r.events[i - 1])));
      }
      std::lock_guard<std::mutex> lock(mu);
      ttft_ms.insert(ttft_ms.end(), my_ttft.begin(), my_ttft.end());
      itl_ms.insert(itl_ms.end(), my_itl.begin(), my_itl.end());
      tokens += my_tokens;
      for (const auto& [code, n] : my_errors) errors[code] += n;
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  std::string errs = "{";
  for (const auto& [code, n] : errors) errs += (errs.size() > 1 ? ",\"" : "\"") + code + "\":" + std::to_string(n);
  errs += "}";
  std::printf(
      "{\"streams\":%d,\"requests\":%d,\"tokens\":%lld,\"seconds\":%.3f,\"tokens_per_s\":%.1f,"
      "\"p50_ttft_ms\":%.3f,\"p99_ttft_ms\":%.3f,\"p50_itl_ms\":%.3f,\"p99_itl_ms\":%.3f,"
      "\"client_cpu\":%.2f,\"errors\":%s}\n",
      o.streams, o.requests, static_cast<long long>(tokens), seconds, tokens / seconds,
      Quantile(ttft_ms, 0.5), Quantile(ttft_ms, 0.99), Quantile(itl_ms, 0.5), Quantile(itl_ms, 0.99),
      cpu / seconds, errs.c_str());
  return errors.empty() ? 0 : 1;
}
