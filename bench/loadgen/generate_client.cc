// generate_client: a compiled closed-loop Generate load generator, beside
// loadgen.py. On a model as small as stories260K the server produces a token
// in tens of microseconds and a Python client (~65 µs of CPU per token) is
// what limits the measured rate; this client costs a few µs per token, so
// the server's own batching gain shows.
//
//   generate_client --target HOST:PORT [--streams 16] [--requests 64]
//                   [--max-new-tokens 64] [--prompt TEXT]
//
// Each of --streams threads sends greedy requests (ignore_eos, exactly
// --max-new-tokens each) one after another until --requests have been sent
// in all, and reads every streamed message. Prints one JSON line: tokens/s,
// p50/p99 time to first token and inter-token latency (a message carrying
// several tokens counts its extra tokens with a gap of 0, as a client sees
// them), errors, and the client's own CPU time.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "attnserve/v1/inference.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = attnserve::v1;

struct Options {
  std::string target;
  int streams = 16;
  int requests = 64;
  int max_new_tokens = 64;
  std::string prompt = "Once upon a time";
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--target") o->target = v;
    else if (k == "--streams") o->streams = std::atoi(v.c_str());
    else if (k == "--requests") o->requests = std::atoi(v.c_str());
    else if (k == "--max-new-tokens") o->max_new_tokens = std::atoi(v.c_str());
    else if (k == "--prompt") o->prompt = v;
    else return false;
  }
  return argc % 2 == 1 && !o->target.empty() && o->streams > 0 && o->requests > 0 && o->max_new_tokens > 0;
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: generate_client --target HOST:PORT [--streams N] [--requests N] "
                 "[--max-new-tokens N] [--prompt TEXT]\n");
    return 2;
  }
  auto channel = grpc::CreateChannel(o.target, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    std::fprintf(stderr, "generate_client: cannot connect to %s\n", o.target.c_str());
    return 1;
  }
  auto stub = v1::Inference::NewStub(channel);
  v1::GenerateRequest request;
  request.set_text(o.prompt);
  request.mutable_sampling()->set_max_new_tokens(o.max_new_tokens);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_sampling()->set_ignore_eos(true);

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
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
        const auto sent = Clock::now();
        auto reader = stub->Generate(&ctx, request);
        v1::GenerateResponse msg;
        Clock::time_point last{};
        bool first = true;
        while (reader->Read(&msg)) {
          const auto now = Clock::now();
          for (int t = 0; t < msg.token_ids_size(); ++t) {
            if (first) {
              my_ttft.push_back(Ms(now - sent));
              first = false;
            } else {
              my_itl.push_back(t == 0 ? Ms(now - last) : 0.0);
            }
            ++my_tokens;
          }
          if (msg.token_ids_size() > 0) last = now;
        }
        const grpc::Status status = reader->Finish();
        if (!status.ok()) ++my_errors[std::to_string(status.error_code())];
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
