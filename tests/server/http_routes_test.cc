// The gateway's routes served by a real HttpServer over a fake backend: HTTP
// status codes, SSE framing, Retry-After, deadlines and cancellation on
// client disconnect, without a model.
#include "server/http/api_routes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A stand-in for InferenceCore. Encode embeds each input as [len, 1, 2];
// Generate streams "t0 ", "t1 ", ... on its own thread (as the scheduler
// would), max_new_tokens of them, honouring cancellation between tokens.
class FakeCore {
 public:
  ~FakeCore() {
    for (std::thread& t : threads_) t.join();
  }

  GatewayBackend Backend() {
    GatewayBackend b;
    b.encoder_name = "fake-encoder";
    b.decoder_name = "fake-decoder";
    // Tokens = bytes of the text; a token id's text is that byte.
    b.tokenize = [](const v1::TokenizeRequest& r) -> absl::StatusOr<v1::TokenizeResponse> {
      if (r.text() == "bad") return absl::InvalidArgumentError("text: bad");
      v1::TokenizeResponse response;
      for (char c : r.text()) {
        response.add_token_ids(static_cast<unsigned char>(c));
        response.add_tokens(std::string(1, c));
      }
      return response;
    };
    b.detokenize = [](const v1::DetokenizeRequest& r) -> absl::StatusOr<v1::DetokenizeResponse> {
      v1::DetokenizeResponse response;
      for (int32_t id : r.token_ids()) {
        if (id < 0 || id > 127) return absl::InvalidArgumentError(absl::StrCat("token_ids: ", id, " is out of range"));
        response.mutable_text()->push_back(static_cast<char>(id));
      }
      return response;
    };
    b.model_info = [](const v1::GetModelInfoRequest&) {
      v1::GetModelInfoResponse response;
      v1::ModelInfo* decoder = response.add_models();
      decoder->set_name("fake-decoder");
      decoder->set_kind(v1::MODEL_KIND_DECODER);
      decoder->set_max_positions(64);
      decoder->set_max_input_tokens(63);
      return response;
    };
    b.encode = [this](const v1::EncodeRequest& r, std::shared_ptr<RequestControl> c, EncodeDone done) {
      Record(c);
      if (r.inputs_size() == 0) return done(absl::InvalidArgumentError("inputs: at least one input is required"));
      if (r.inputs(0).text() == "full") return done(absl::ResourceExhaustedError("queue is full (--max-queue=1)"));
      v1::EncodeResponse response;
      for (int i = 0; i < r.inputs_size(); ++i) {
        const std::string& text = r.inputs(i).text();
        if (text == "long") {
          return done(absl::InvalidArgumentError(absl::StrCat(
              "inputs[", i, "]: the input has 600 tokens; the model's limit is 256 tokens (truncation is off)")));
        }
        v1::Tensor* t = response.add_results()->mutable_embedding();
        if (r.pooling() == v1::POOLING_NONE) {  // a row (k, 1, 2) per byte k
          t->add_shape(static_cast<int64_t>(text.size()));
          t->add_shape(3);
          for (size_t k = 0; k < text.size(); ++k) {
            for (float v : {static_cast<float>(k), 1.0f, 2.0f}) t->add_values(v);
          }
          continue;
        }
        t->add_shape(3);
        t->add_values(static_cast<float>(text.size()));
        t->add_values(1);
        t->add_values(2);
      }
      response.mutable_usage()->set_prompt_tokens(r.inputs_size() * 2);
      response.set_model("fake-encoder");
      done(std::move(response));
    };
    b.generate = [this](const v1::GenerateRequest& r, std::shared_ptr<RequestControl> c, GenerateSink sink) {
      Record(c);
      const int n = r.sampling().has_max_new_tokens() ? r.sampling().max_new_tokens() : 4;
      if (n <= 0) return sink.on_done(absl::InvalidArgumentError("sampling.max_new_tokens: must be >= 1"));
      const bool fail_midway = r.text() == "fail";
      absl::MutexLock lock(&mu_);
      threads_.emplace_back([this, n, fail_midway, c, sink = std::move(sink)] {
        for (int i = 0; i < n; ++i) {
          if (c->cancelled.load()) {
            NoteCancelled();
            return sink.on_done(absl::CancelledError("cancelled"));
          }
          if (fail_midway && i == 2) return sink.on_done(absl::DeadlineExceededError("deadline passed"));
          v1::GenerateResponse chunk;
          chunk.add_token_ids(i);
          chunk.set_text(absl::StrCat("t", i, " "));
          if (i == n - 1) {
            chunk.set_finish_reason(v1::FINISH_REASON_LENGTH);
            chunk.mutable_usage()->set_prompt_tokens(2);
            chunk.mutable_usage()->set_generated_tokens(n);
            chunk.mutable_usage()->set_peak_kv_cache_bytes(1024);
          }
          sink.on_chunk(std::move(chunk));
          if (n > 100) absl::SleepFor(absl::Microseconds(200));
        }
        sink.on_done(absl::OkStatus());
      });
    };
    return b;
  }

  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  absl::Time last_deadline() {
    absl::MutexLock lock(&mu_);
    return last_deadline_;
  }
  std::string last_request_id() {
    absl::MutexLock lock(&mu_);
    return last_request_id_;
  }
  // Notified at the first cancellation the fake sees.
  absl::Notification& cancelled() { return cancelled_; }

 private:
  void NoteCancelled() {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.HasBeenNotified()) cancelled_.Notify();
  }

  void Record(const std::shared_ptr<RequestControl>& c) {
    absl::MutexLock lock(&mu_);
    ++calls_;
    last_deadline_ = c->deadline;
    last_request_id_ = c->request_id;
  }

  absl::Mutex mu_;
  int calls_ = 0;
  absl::Time last_deadline_;
  std::string last_request_id_;
  std::vector<std::thread> threads_;
  absl::Notification cancelled_;
};

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;                            // de-chunked
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string RawRequest(const std::string& method, const std::string& path, const std::string& body,
                       const std::string& extra_headers = "") {
  return absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n", extra_headers,
                      "\r\n", body);
}

std::string Dechunk(const std::string& raw) {
  std::string out;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(raw.substr(pos, eol - pos), &size) || size == 0) break;
    out += raw.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return out;
}

Reply Call(int port, const std::string& method, const std::string& path, const std::string& body,
           const std::string& extra_headers = "") {
  Reply reply;
  const int fd = Connect(port);
  if (fd < 0) return reply;
  const std::string request = RawRequest(method, path, body, extra_headers);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += n;
  }
  std::string raw;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, n);
  }
  close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return reply;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, head_end), "\r\n");
  std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &reply.status)) return reply;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    std::string name = lines[i].substr(0, colon);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    reply.headers[name] = std::string(absl::StripLeadingAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  reply.body = raw.substr(head_end + 4);
  if (reply.headers["transfer-encoding"] == "chunked") reply.body = Dechunk(reply.body);
  return reply;
}

// The `data:` payloads of an SSE body, with the event name of each ("" if none).
std::vector<std::pair<std::string, std::string>> SseEvents(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> events;
  for (absl::string_view block : absl::StrSplit(body, "\n\n", absl::SkipEmpty())) {
    std::string event, data;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::ConsumePrefix(&line, "event: ")) event = std::string(line);
      if (absl::ConsumePrefix(&line, "data: ")) data = std::string(line);
    }
    events.emplace_back(event, data);
  }
  return events;
}

// A server on a free local port.
HttpServerOptions LocalServer() {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  return options;
}

class HttpRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options = LocalServer();
    options.max_body_bytes = 1 << 16;
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(options, ApiRoutes(core_.Backend(), nullptr, GatewayOptions{}));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override { server_.reset(); }

  Reply Post(const std::string& path, const std::string& body, const std::string& headers = "") {
    return Call(server_->port(), "POST", path, body, headers);
  }

  FakeCore core_;  // outlives the server (declared first, destroyed last)
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpRoutesTest, EncodeAnswersTheResponseProtoAsJson) {
  Reply r = Post("/v1/encode", R"({"inputs": [{"text": "abcd"}, {"text": "xy"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.headers["content-type"], HasSubstr("application/json"));
  json j = json::parse(r.body);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["embedding"]["values"], json({2.0, 1.0, 2.0}));
  EXPECT_EQ(j["model"], "fake-encoder");
}

TEST_F(HttpRoutesTest, ShapeErrorsAre400NamingTheFieldAndNeverReachTheCore) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"inputs\": [", "not valid JSON"},
      {R"({"inputs": [{"txt": "a"}]})", "txt"},
      {R"({"inputs": [{"text": 3}]})", "text"},
      {"{\"inputs\": [{\"text\": \"\xFF\"}]}", "inputs[0].text"},
  };
  for (const auto& [body, expected] : cases) {
    Reply r = Post("/v1/encode", body);
    ASSERT_EQ(r.status, 400) << body;
    json j = json::parse(r.body);
    EXPECT_EQ(j["error"]["code"], "invalid_argument") << body;
    EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr(expected)) << body;
  }
  EXPECT_EQ(core_.calls(), 0);
}

TEST_F(HttpRoutesTest, CoreErrorsKeepTheirCodeAnd429CarriesRetryAfter) {
  Reply r = Post("/v1/encode", R"({"inputs": []})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("inputs: at least one input"));
  r = Post("/v1/encode", R"({"inputs": [{"text": "full"}]})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "resource_exhausted");
  r = Post("/v1/embeddings", R"({"input": "full", "model": "x"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
}

TEST_F(HttpRoutesTest, BodyOverTheLimitIs413) {
  Reply r = Post("/v1/encode", absl::StrCat(R"({"inputs": [{"text": ")", std::string(70000, 'a'), "\"}]}"));
  EXPECT_EQ(r.status, 413);
  EXPECT_THAT(r.body, HasSubstr("payload_too_large"));
  EXPECT_EQ(core_.calls(), 0);
}

TEST_F(HttpRoutesTest, WrongMethodIs405) {
  Reply r = Call(server_->port(), "GET", "/v1/encode", "");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "POST");
  r = Post("/v1/models", "{}");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET");
}

TEST_F(HttpRoutesTest, GenerateConcatenatesTheStream) {
  Reply r = Post("/v1/generate", R"({"text": "hi", "sampling": {"max_new_tokens": 3}})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["text"], "t0 t1 t2 ");
  EXPECT_EQ(j["token_ids"], json({0, 1, 2}));
  EXPECT_EQ(j["finish_reason"], "FINISH_REASON_LENGTH");
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], "1024");
}

TEST_F(HttpRoutesTest, GenerateStreamIsOneEventPerChunk) {
  Reply r = Post("/v1/generate_stream", R"({"text": "hi", "sampling": {"max_new_tokens": 3}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 3u) << r.body;
  EXPECT_EQ(json::parse(events[0].second)["text"], "t0 ");
  json last = json::parse(events[2].second);
  EXPECT_EQ(last["finish_reason"], "FINISH_REASON_LENGTH");
  EXPECT_EQ(last["usage"]["generated_tokens"], 3);
}

TEST_F(HttpRoutesTest, StreamRefusedBeforeAnyTokenIsAPlainError) {
  Reply r = Post("/v1/generate_stream", R"({"text": "hi", "sampling": {"max_new_tokens": 0}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("max_new_tokens"));
}

TEST_F(HttpRoutesTest, StreamFailureAfterTokensIsAnErrorEvent) {
  Reply r = Post("/v1/generate_stream", R"({"text": "fail", "sampling": {"max_new_tokens": 5}})");
  ASSERT_EQ(r.status, 200);
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 3u) << r.body;
  EXPECT_EQ(events[2].first, "error");
  EXPECT_EQ(json::parse(events[2].second)["error"]["code"], "deadline_exceeded");
}

TEST_F(HttpRoutesTest, CompletionsAndTheirStream) {
  Reply r = Post("/v1/completions", R"({"model": "x", "prompt": "hi", "max_tokens": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "fake-decoder");
  EXPECT_EQ(j["choices"][0]["text"], "t0 t1 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], 1024);

  r = Post("/v1/completions", R"({"model": "x", "prompt": "hi", "max_tokens": 2, "stream": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 3u) << r.body;
  EXPECT_EQ(json::parse(events[0].second)["choices"][0]["text"], "t0 ");
  EXPECT_EQ(json::parse(events[1].second)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse(events[0].second)["id"], json::parse(events[1].second)["id"]);
  EXPECT_EQ(events[2].second, "[DONE]");

  r = Post("/v1/completions", R"({"model": "x", "prompt": "hi", "max_tokens": 0})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("max_tokens"));
}

// Several choices (prompts × n) run as one Generate each; the answer has them
// in order with usage summed, and the stream interleaves them by index and
// ends with one usage chunk.
TEST_F(HttpRoutesTest, CompletionsWithSeveralChoicesAnswerAndStreamEach) {
  const std::string body = R"({"model": "x", "prompt": ["a", "b"], "n": 2, "max_tokens": 3)";
  Reply r = Post("/v1/completions", body + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(core_.calls(), 4);
  json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(j["choices"][k]["index"], k);
    EXPECT_EQ(j["choices"][k]["text"], "t0 t1 t2 ");
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], 4096);

  r = Post("/v1/completions", body + R"(, "stream": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = SseEvents(r.body);
  ASSERT_EQ(events.size(), 4u * 3u + 2u) << r.body;
  std::vector<std::string> texts(4);
  for (size_t e = 0; e < 12; ++e) {
    json chunk = json::parse(events[e].second);
    EXPECT_FALSE(chunk.contains("usage")) << events[e].second;
    ASSERT_EQ(chunk["choices"].size(), 1u);
    texts.at(chunk["choices"][0]["index"].get<int>()) += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_THAT(texts, ::testing::Each("t0 t1 t2 "));
  json usage = json::parse(events[12].second);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
  EXPECT_EQ(events[13].second, "[DONE]");
}

// One failing prompt fails the completion, names the prompt, and cancels the
// others: a plain error answer, or an error event once the stream started.
TEST_F(HttpRoutesTest, CompletionsFailureNamesThePromptAndCancelsTheRest) {
  Reply r = Post("/v1/completions", R"({"prompt": ["a", "fail"], "max_tokens": 500})");
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_THAT(r.body, HasSubstr("prompt[1]: deadline passed"));
  EXPECT_TRUE(core_.cancelled().WaitForNotificationWithTimeout(absl::Seconds(30)));

  r = Post("/v1/completions", R"({"prompt": ["a", "fail"], "max_tokens": 500, "stream": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = SseEvents(r.body);
  ASSERT_FALSE(events.empty());
  json error = json::parse(events.back().second);
  EXPECT_EQ(error["error"]["code"], "deadline_exceeded") << r.body;
  EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr("prompt[1]"));
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("[DONE]")));
}

TEST_F(HttpRoutesTest, EmbeddingsAndModels) {
  Reply r = Post("/v1/embeddings", R"({"model": "x", "input": ["abc", "de"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["data"][0]["embedding"], json({3.0, 1.0, 2.0}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["model"], "fake-encoder");

  r = Call(server_->port(), "GET", "/v1/models", "");
  ASSERT_EQ(r.status, 200);
  j = json::parse(r.body);
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][0]["id"], "fake-decoder");
  EXPECT_EQ(j["data"][1]["id"], "fake-encoder");
}

// The fake's embedding of a text is (bytes, 1, 2), so a pair's cosine is
// known in closed form.
double FakeCosine(double a, double b) { return (a * b + 5) / (std::sqrt(a * a + 5) * std::sqrt(b * b + 5)); }

TEST_F(HttpRoutesTest, ScoreRerankAndSimilarityAnswerCosinesOfOneEncodeCall) {
  Reply r = Post("/v1/score", R"({"model": "m", "text_1": "abc", "text_2": ["abc", "a", "abcdefgh"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "fake-encoder");
  EXPECT_THAT(j["id"].get<std::string>(), StartsWith("score-"));
  ASSERT_EQ(j["data"].size(), 3u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["object"], "score");
  EXPECT_NEAR(j["data"][0]["score"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(j["data"][1]["score"].get<double>(), FakeCosine(3, 1), 1e-12);
  EXPECT_NEAR(j["data"][2]["score"].get<double>(), FakeCosine(3, 8), 1e-12);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 8);  // the fake counts 2 a text: 4 texts, "abc" once
  EXPECT_EQ(core_.calls(), 1);

  r = Post("/rerank", R"({"query": "abc", "documents": ["a", {"text": "abcd"}, "abcdefgh"], "top_n": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["index"], 1);
  EXPECT_EQ(j["results"][0]["document"]["text"], "abcd");
  EXPECT_NEAR(j["results"][0]["relevance_score"].get<double>(), FakeCosine(3, 4), 1e-12);
  EXPECT_EQ(j["results"][1]["index"], 2);
  for (const char* path : {"/v1/rerank", "/v2/rerank", "/score"}) {
    EXPECT_EQ(Post(path, R"({"query": "a", "documents": ["b"], "text_1": "a", "text_2": "b"})").status, 200) << path;
  }

  r = Post("/similarity", R"({"inputs": {"source_sentence": "ab", "sentences": ["ab", "abcdef"]}})");
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_NEAR(j[0].get<double>(), 1.0, 1e-6);
  EXPECT_NEAR(j[1].get<double>(), FakeCosine(2, 6), 1e-6);
}

TEST_F(HttpRoutesTest, ScoreErrorsNameTheClientsFields) {
  Reply r = Post("/v1/score", R"({"text_1": ["a", "b"], "text_2": ["a", "b", "c"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("1:1, 1:N or N:N"));
  EXPECT_EQ(core_.calls(), 0);
  r = Post("/v1/rerank", R"({"query": "a", "documents": ["b", "long"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(json::parse(r.body)["error"]["message"].get<std::string>(),
              StartsWith("documents[1]: the input has 600 tokens"));
  r = Post("/similarity", R"({"inputs": {"source_sentence": "a", "sentences": ["long"]}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error_type"], "Validation");  // TEI's shape
  EXPECT_THAT(json::parse(r.body)["error"].get<std::string>(), StartsWith("inputs.sentences[0]: the input has"));
  r = Post("/v1/score", R"({"text_1": "full", "text_2": "b"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
}

TEST_F(HttpRoutesTest, EmbedAllAnswersEveryTokensState) {
  Reply r = Post("/embed_all", R"({"inputs": ["ab", "xyz"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json({{{0.0, 1.0, 2.0}, {1.0, 1.0, 2.0}},
                                       {{0.0, 1.0, 2.0}, {1.0, 1.0, 2.0}, {2.0, 1.0, 2.0}}}));
  r = Post("/embed_all", R"({"inputs": "a", "normalize": true})");
  EXPECT_EQ(r.status, 200) << r.body;  // TEI's embed_all has no normalize; unknown fields are ignored
  r = Post("/embed_all", R"({"inputs": []})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error_type"], "Validation");
}

TEST_F(HttpRoutesTest, TimeoutHeaderBecomesTheDeadline) {
  const absl::Time before = absl::Now();
  Reply r = Post("/v1/encode", R"({"inputs": [{"text": "a"}]})", "X-Request-Timeout: 30\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_GE(core_.last_deadline(), before + absl::Seconds(30));
  EXPECT_LT(core_.last_deadline(), absl::InfiniteFuture());
  r = Post("/v1/generate", R"({"text": "a"})", "X-Request-Timeout: soon\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("X-Request-Timeout"));
}

// Every Encode/Generate answer carries X-Request-Id: the client's own when it
// is usable (and then the core and the completion id use it too), else one
// the gateway made, also on refusals that never reach the core and on streams.
TEST_F(HttpRoutesTest, RequestIdIsTheClientsOrANewOneOnEveryAnswer) {
  Reply r = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2})", "X-Request-Id: trace-7/a\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-request-id"], "trace-7/a");
  EXPECT_EQ(core_.last_request_id(), "trace-7/a");
  EXPECT_EQ(json::parse(r.body)["id"], "cmpl-trace-7/a");

  r = Post("/v1/encode", R"({"inputs": [{"text": "a"}]})");
  ASSERT_EQ(r.status, 200);
  const std::string made = r.headers["x-request-id"];
  EXPECT_FALSE(made.empty());
  EXPECT_EQ(core_.last_request_id(), made);
  r = Post("/v1/encode", R"({"inputs": [{"text": "a"}]})");
  EXPECT_NE(r.headers["x-request-id"], made);

  r = Post("/v1/generate", R"({"text": "a"})", "X-Request-Id: has space\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers["x-request-id"], "has space");
  EXPECT_FALSE(r.headers["x-request-id"].empty());
  EXPECT_EQ(core_.last_request_id(), r.headers["x-request-id"]);

  const int calls = core_.calls();
  r = Post("/v1/embeddings", R"({"input": 5})", "X-Request-Id: bad-shape\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.headers["x-request-id"], "bad-shape");
  EXPECT_EQ(core_.calls(), calls);

  r = Post("/v1/generate_stream", R"({"text": "a"})", "X-Request-Id: s1\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.headers["content-type"], HasSubstr("text/event-stream"));
  EXPECT_EQ(r.headers["x-request-id"], "s1");

  // vLLM's body request_id names a completion that has no usable header;
  // the header wins, as in vLLM; a bad one is a 400 naming the field.
  r = Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}], "request_id": "rl-42"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-request-id"], "rl-42");
  EXPECT_EQ(core_.last_request_id(), "rl-42");
  EXPECT_EQ(json::parse(r.body)["id"], "chatcmpl-rl-42");
  r = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2, "request_id": "rl-43"})", "X-Request-Id: h-1\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["id"], "cmpl-h-1");
  r = Post("/v1/completions", R"({"prompt": "hi", "request_id": "two words"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request_id: must be a string of 1 to 128 letters"));
}

// The tokenizer and model-info calls of the gRPC door, over HTTP/JSON with
// the same messages.
TEST_F(HttpRoutesTest, TokenizeDetokenizeAndModelInfo) {
  Reply r = Post("/v1/tokenize", R"({"text": "hi", "add_special_tokens": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["token_ids"], json({104, 105}));
  EXPECT_EQ(j["tokens"], json({"h", "i"}));
  r = Post("/v1/detokenize", R"({"token_ids": [104, 105]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["text"], "hi");

  r = Post("/v1/detokenize", R"({"token_ids": [500]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("token_ids"));
  r = Post("/v1/tokenize", R"({"text": 5})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("text"));
  r = Post("/v1/tokenize", R"({"text": "bad"})");
  EXPECT_EQ(r.status, 400);

  r = Call(server_->port(), "GET", "/v1/model_info", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["models"][0]["name"], "fake-decoder");
  r = Post("/v1/model_info", "{}");
  EXPECT_EQ(r.status, 405);
  // TGI's /info for the decoder.
  r = Call(server_->port(), "GET", "/info", "");
  ASSERT_EQ(r.status, 200) << r.body;
  const json info = json::parse(r.body);
  EXPECT_EQ(info["model_id"], "fake-decoder");
  EXPECT_EQ(info["max_input_tokens"], 63);
  EXPECT_EQ(info["max_total_tokens"], 64);
  EXPECT_EQ(Post("/info", "{}").status, 405);
}

// With an API key every route needs "Authorization: Bearer <key>": 401 with
// WWW-Authenticate otherwise, and the core never sees the request.
TEST(HttpRoutesAuthTest, EveryRouteNeedsTheKey) {
  FakeCore core;
  GatewayOptions gateway;
  gateway.api_key = "k-123";
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(LocalServer(), ApiRoutes(core.Backend(), nullptr, gateway));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  const std::string body = R"({"inputs": [{"text": "a"}]})";
  for (const char* path : {"/v1/encode", "/v1/generate", "/v1/generate_stream", "/v1/embeddings",
                           "/v1/completions", "/v1/responses", "/v1/tokenize", "/v1/detokenize", "/v1/score", "/v1/rerank",
                           "/similarity", "/embed_all", "/embed_sparse"}) {
    Reply r = Call(port, "POST", path, body);
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer") << path;
    // TEI's routes answer in TEI's shape, which has no code.
    EXPECT_THAT(r.body, HasSubstr(path[1] == 'v' ? "unauthenticated" : "needs an API key")) << path;
    r = Call(port, "POST", path, body, "Authorization: Bearer wrong\r\n");
    EXPECT_EQ(r.status, 401) << path;
  }
  for (const char* path : {"/v1/models", "/v1/model_info", "/info"}) {
    EXPECT_EQ(Call(port, "GET", path, "").status, 401) << path;
    EXPECT_EQ(Call(port, "GET", path, "", "Authorization: Bearer k-123\r\n").status, 200) << path;
  }
  EXPECT_EQ(core.calls(), 0);
  Reply r = Call(port, "POST", "/v1/encode", body, "Authorization: Bearer k-123\r\n");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(core.calls(), 1);
  server->reset();
}

TEST_F(HttpRoutesTest, ClientDisconnectMidStreamCancelsTheRequest) {
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  const std::string request =
      RawRequest("POST", "/v1/generate_stream", R"({"text": "hi", "sampling": {"max_new_tokens": 1000000}})");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  char buf[256];
  ASSERT_GT(recv(fd, buf, sizeof(buf), 0), 0);  // the stream has started
  close(fd);
  // The generator runs until it sees the cancellation. The bound only keeps
  // a broken build from hanging the suite; it is not a latency requirement.
  EXPECT_TRUE(core_.cancelled().WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST(HttpRoutesMetricsTest, EveryRouteIsCountedByStatusClassAndTimed) {
  FakeCore core;
  ServerMetrics metrics(BuildLabels{});
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(LocalServer(), ApiRoutes(core.Backend(), &metrics, GatewayOptions{}));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // Every route's series exists before its first request.
  std::string scrape = metrics.Scrape();
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_requests_total{route=\"/v1/messages\",status=\"2xx\"} 0"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_request_duration_seconds_count{route=\"/v1/responses\"} 0"));

  EXPECT_EQ(Call(port, "POST", "/v1/score", R"({"text_1": "a", "text_2": ["b", "cd"]})").status, 200);
  EXPECT_EQ(Call(port, "POST", "/v1/score", R"({"text_1": "a"})").status, 400);
  EXPECT_EQ(Call(port, "POST", "/v1/encode", R"({"inputs": [{"text": "full"}]})").status, 429);
  EXPECT_EQ(Call(port, "GET", "/v1/models", "").status, 200);
  EXPECT_EQ(Call(port, "GET", "/v1/score", "").status, 405);
  scrape = metrics.Scrape();
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_requests_total{route=\"/v1/score\",status=\"2xx\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_requests_total{route=\"/v1/score\",status=\"4xx\"} 2"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_requests_total{route=\"/v1/encode\",status=\"4xx\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_requests_total{route=\"/v1/models\",status=\"2xx\"} 1"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_http_request_duration_seconds_count{route=\"/v1/score\"} 3"));
  server->reset();
}

TEST(HttpRoutesLimitTest, InferenceCallsPastTheLimitGet429AtOnceWhileQuickRoutesStillAnswer) {
  FakeCore core;
  ServerMetrics metrics(BuildLabels{});
  HttpServerOptions options = LocalServer();
  options.threads = 4;
  GatewayOptions gateway;
  gateway.max_inference_calls = 1;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, ApiRoutes(core.Backend(), &metrics, gateway));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();

  // One stream holds the only inference place.
  const int fd = Connect(port);
  ASSERT_GE(fd, 0);
  const std::string request =
      RawRequest("POST", "/v1/generate_stream", R"({"text": "hi", "sampling": {"max_new_tokens": 1000000}})");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  char buf[256];
  ASSERT_GT(recv(fd, buf, sizeof(buf), 0), 0);  // the stream has started

  // Every other inference route is refused at once, with Retry-After and a
  // message naming the flag; the core never sees them.
  const int calls_before = core.calls();
  for (const char* path : {"/v1/encode", "/v1/generate", "/v1/generate_stream", "/v1/embeddings", "/v1/completions"}) {
    const Reply r = Call(port, "POST", path, R"({"inputs": [{"text": "a"}], "text": "a", "input": "a", "prompt": "a"})");
    EXPECT_EQ(r.status, 429) << path;
    EXPECT_EQ(r.headers.at("retry-after"), "1") << path;
    EXPECT_THAT(r.body, HasSubstr("resource_exhausted")) << path;
    EXPECT_THAT(r.body, HasSubstr("serving 1 inference calls")) << path;
    EXPECT_THAT(r.body, HasSubstr("--http-threads")) << path;
    EXPECT_TRUE(r.headers.count("x-request-id") == 1 && !r.headers.at("x-request-id").empty()) << path;  // as on every Encode/Generate answer
  }
  EXPECT_EQ(core.calls(), calls_before);
  // Quick routes keep answering beside the held stream.
  EXPECT_EQ(Call(port, "GET", "/v1/models", "").status, 200);
  EXPECT_EQ(Call(port, "POST", "/v1/tokenize", R"({"text": "ab"})").status, 200);
  const std::string scrape = metrics.Scrape();
  EXPECT_THAT(scrape, HasSubstr("attnserve_rejections_total{reason=\"http_threads\"} 5"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_requests_total{code=\"resource_exhausted\",rpc=\"Encode\"} 2"));
  EXPECT_THAT(scrape, HasSubstr("attnserve_requests_total{code=\"resource_exhausted\",rpc=\"Generate\"} 3"));

  // Closing the stream cancels it and frees the place: a new call gets in.
  close(fd);
  ASSERT_TRUE(core.cancelled().WaitForNotificationWithTimeout(absl::Seconds(60)));
  int status = 0;
  // The place is freed when the stream's handler returns, just after the
  // cancellation; the bound only keeps a broken build from hanging the suite.
  for (int i = 0; i < 6000 && status != 200; ++i) {
    status = Call(port, "POST", "/v1/encode", R"({"inputs": [{"text": "a"}]})").status;
    if (status != 200) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(status, 200);
  server->reset();
}

}  // namespace
}  // namespace attnserve
