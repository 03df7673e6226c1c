// The HTTP gateway's request bodies as a fuzz body, shared by the libFuzzer
// entry point (http_request_fuzzer.cc, clang -fsanitize=fuzzer builds) and
// the gtest that drives it with a fixed-seed mutation loop (GCC has no
// libFuzzer): tests/server/http_request_fuzz_test.cc.
//
// Every byte of an HTTP request body reaches one of these parsers, then the
// checks both doors share (server/core/proto_convert.h) before anything is
// queued: a crash or an uncaught exception here takes the whole server down
// with every request in flight. The first input byte picks the endpoint
// (selector % kHttpFuzzEndpoints): /v1/encode, /v1/generate, /v1/tokenize,
// /v1/detokenize, /v1/embeddings, /v1/completions, /v1/chat/completions,
// /v1/responses, /v1/messages, /v1/messages/count_tokens, /v1/score,
// /v1/rerank, TEI's /similarity and /embed_all, vLLM's /tokenize and
// /detokenize; the rest is the body. Chat completions are read as with
// --tool-call-parser (tool_choice "auto" holds a call to the tools'
// schemas, compiled by the shared checks).
//
// Contracts (a violation aborts, which libFuzzer and the gtest report):
// - no crash, no sanitizer report, no exception out of the parser;
// - a refused body is INVALID_ARGUMENT with a message that is non-empty and
//   valid UTF-8 (messages quote client input and are sent as JSON strings);
// - a native body that parses prints (ProtoToJson, what the gateway writes)
//   to JSON that parses back to the same message, byte for byte serialized
//   (deterministically: map entries in key order);
// - what parses then goes through the shared checks as the server runs
//   them: Encode requests through ToEncodeCall (MiniLM's 6 layers, 32
//   inputs), Generate requests and every completion choice through
//   ToGenerationParams (max_new_tokens limit 256) and ToPromptIds
//   (stories260K's tokenizer from its GGUF, context 512; chat prompts in the
//   Llama-2 chat format, as --chat-template=llama2). Refusals are
//   INVALID_ARGUMENT as above; what passes is inside the documented ranges
//   (max_new_tokens in [1, 256], temperature finite in [0, 100], top_p in
//   (0, 1], min_p in [0, 1], min_tokens in [0, max_new_tokens], repetition_penalty in (0, 10], frequency and presence
//   penalties in [-2, 2], logit_bias ids in [0, vocab) with biases in
//   [-100, 100], at most 1024; top_logprobs in [0, 20]; prompt
//   ids in [0, vocab), at least one and fewer than the context; encode
//   inputs in [1, 32], attention layers in [0, 6)).
// - a completion call has n >= 1 choices per prompt, at least one prompt,
//   at most kMaxCompletionChoices requests in all; a Responses or Messages
//   call exactly one request, a chat prompt;
// - a scoring call names each input, and pairs its texts 1:N or N:N.
#ifndef ATTNSERVE_TESTS_FUZZ_HTTP_REQUEST_FUZZ_TARGET_H_
#define ATTNSERVE_TESTS_FUZZ_HTTP_REQUEST_FUZZ_TARGET_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/formats/gguf_file.h"
#include "engine/models/model_description.h"
#include "engine/tokenizers/tokenizer.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "engine/tokenizers/unicode_util.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/core/proto_convert.h"
#include "server/http/json_body.h"
#include "server/http/native_api.h"
#include "server/core/chat_prompt.h"
#include "server/http/openai_api.h"
#include "server/http/anthropic_messages.h"
#include "server/http/hf_api.h"
#include "server/http/openai_chat.h"
#include "server/http/openai_responses.h"
#include "server/http/vllm_tokenize.h"
#include "server/http/score_api.h"

namespace attnserve::fuzz {

// What the checks after parsing need: a decoder tokenizer and the two
// models' descriptions (only their layer count and vocabulary matter here).
struct HttpFuzzContext {
  std::unique_ptr<Tokenizer> tokenizer;  // stories260K's
  ModelDescription encoder;
  ModelDescription decoder;
  ChatSetup chat;  // the Llama-2 format over the tokenizer
};

inline constexpr int kHttpFuzzEndpoints = 16;

inline constexpr int kHttpFuzzMaxNewTokens = 256;  // below the context, so this limit is the one that binds
inline constexpr int kHttpFuzzContext = 512;
inline constexpr int kHttpFuzzMaxInputs = 32;

// `shared_dir`: ../shared (stories260K's GGUF).
inline absl::StatusOr<HttpFuzzContext> LoadHttpFuzzContext(const std::string& shared_dir) {
  HttpFuzzContext ctx;
  absl::StatusOr<std::unique_ptr<GgufFile>> gguf = GgufFile::Open(shared_dir + "/models/stories260K/stories260K.gguf");
  if (!gguf.ok()) return gguf.status();
  absl::StatusOr<std::unique_ptr<Tokenizer>> t = TokenizerFromGguf(**gguf);
  if (!t.ok()) return t.status();
  ctx.tokenizer = std::move(*t);
  ctx.chat = ResolveChatSetup("llama2", "", *ctx.tokenizer);
  ctx.encoder.architecture = "bert";
  ctx.encoder.num_layers = 6;  // all-MiniLM-L6-v2
  ctx.encoder.hidden_size = 384;
  ctx.decoder.architecture = "llama";
  ctx.decoder.num_layers = 5;
  ctx.decoder.vocab_size = ctx.tokenizer->vocab_size();
  ctx.decoder.max_positions = kHttpFuzzContext;
  return ctx;
}

namespace http_fuzz_internal {

[[noreturn]] inline void Fail(const char* endpoint, const char* what, absl::string_view detail,
                              absl::string_view body) {
  std::fprintf(stderr, "http request fuzz (%s): %s: %.*s\nbody (%zu bytes): %.*s\n", endpoint, what,
               static_cast<int>(detail.size()), detail.data(), body.size(), static_cast<int>(body.size()),
               body.data());
  std::abort();
}

// A refusal must be a 400 with a message a client can read.
inline void CheckRefusal(const char* endpoint, const absl::Status& s, absl::string_view body) {
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail(endpoint, "refused with a code other than INVALID_ARGUMENT", s.ToString(), body);
  if (s.message().empty()) Fail(endpoint, "refused with an empty message", "", body);
  if (!IsValidUtf8(s.message())) Fail(endpoint, "refusal message is not valid UTF-8", SanitizeUtf8(s.message()), body);
}

// Serialized with map entries in key order, so equal messages give equal
// bytes (map order is otherwise unspecified, as in logit_bias).
inline std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

// Field by field, floats by value: protobuf's JSON prints a float -0 as
// "-0" and reads that back as +0 (a bias or penalty of -1e-500 is such a
// zero), which changes the bytes but not what the request asks.
inline bool SameByValue(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_float_comparison(google::protobuf::util::DefaultFieldComparator::EXACT);
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differ;
  differ.set_field_comparator(&comparator);
  return differ.Compare(a, b);
}

// What the gateway prints parses back to the same message.
template <typename Message, typename Parse>
void CheckRoundTrip(const char* endpoint, const Message& m, Parse parse, absl::string_view body) {
  const std::string printed = ProtoToJson(m);
  absl::StatusOr<Message> again = parse(printed);
  if (!again.ok()) Fail(endpoint, "printed JSON does not parse back", again.status().ToString() + " in " + printed, body);
  if (DeterministicBytes(m) != DeterministicBytes(*again) && !SameByValue(m, *again)) {
    Fail(endpoint, "printed JSON parses back to a different message", printed, body);
  }
}

// A native endpoint's parse: a refusal checked as above, an accepted body
// printed and parsed back; the message when accepted.
template <typename Message, typename Parse>
std::optional<Message> ParseNative(const char* endpoint, Parse parse, absl::string_view body) {
  absl::StatusOr<Message> r = parse(body);
  if (!r.ok()) {
    CheckRefusal(endpoint, r.status(), body);
    return std::nullopt;
  }
  CheckRoundTrip(endpoint, *r, parse, body);
  return std::move(*r);
}

// True when the request passed the checks (and what passed is in range).
inline bool CheckEncode(const HttpFuzzContext& ctx, const char* endpoint, const v1::EncodeRequest& r,
                        absl::string_view body) {
  absl::StatusOr<EncodeCall> call = ToEncodeCall(r, ctx.encoder, kHttpFuzzMaxInputs);
  if (!call.ok()) {
    CheckRefusal(endpoint, call.status(), body);
    return false;
  }
  const size_t n = call->inputs.size();
  if (n < 1 || n > static_cast<size_t>(kHttpFuzzMaxInputs) || static_cast<int>(n) != r.inputs_size()) {
    Fail(endpoint, "accepted an input count outside [1, 32]", std::to_string(n), body);
  }
  for (int layer : call->options.attention_layers) {
    if (layer < 0 || layer >= ctx.encoder.num_layers) Fail(endpoint, "accepted an attention layer out of range", std::to_string(layer), body);
  }
  const int dims = call->options.dimensions;
  if (dims < 0 || dims > ctx.encoder.hidden_size || (dims > 0 && call->options.pooling == PoolingMode::kNone)) {
    Fail(endpoint, "accepted dimensions outside [1, hidden size] or without pooling", std::to_string(dims), body);
  }
  return true;
}

inline bool CheckGenerate(const HttpFuzzContext& ctx, const char* endpoint, const v1::GenerateRequest& r,
                          absl::string_view body) {
  absl::StatusOr<GenerationParams> p = ToGenerationParams(r, ctx.decoder, kHttpFuzzMaxNewTokens, /*random_seed=*/7);
  if (!p.ok()) {
    CheckRefusal(endpoint, p.status(), body);
    return false;
  }
  if (p->max_new_tokens < 1 || p->max_new_tokens > kHttpFuzzMaxNewTokens) Fail(endpoint, "max_new_tokens out of range", std::to_string(p->max_new_tokens), body);
  if (!std::isfinite(p->temperature) || p->temperature < 0 || p->temperature > 100) Fail(endpoint, "temperature out of range", std::to_string(p->temperature), body);
  if (!(p->top_p > 0 && p->top_p <= 1)) Fail(endpoint, "top_p out of range", std::to_string(p->top_p), body);
  if (!(p->repetition_penalty > 0 && p->repetition_penalty <= 10)) Fail(endpoint, "repetition_penalty out of range", std::to_string(p->repetition_penalty), body);
  if (p->min_tokens < 0 || p->min_tokens > p->max_new_tokens) Fail(endpoint, "min_tokens out of range", std::to_string(p->min_tokens), body);
  if (!(p->min_p >= 0 && p->min_p <= 1)) Fail(endpoint, "min_p out of range", std::to_string(p->min_p), body);
  if (!(p->frequency_penalty >= -2 && p->frequency_penalty <= 2)) Fail(endpoint, "frequency_penalty out of range", std::to_string(p->frequency_penalty), body);
  if (!(p->presence_penalty >= -2 && p->presence_penalty <= 2)) Fail(endpoint, "presence_penalty out of range", std::to_string(p->presence_penalty), body);
  if (p->logit_bias.size() > 1024) Fail(endpoint, "too many logit_bias entries", std::to_string(p->logit_bias.size()), body);
  for (const LogitBias& b : p->logit_bias) {
    if (b.id < 0 || b.id >= ctx.decoder.vocab_size) Fail(endpoint, "logit_bias id out of range", std::to_string(b.id), body);
    if (!(b.bias >= -100 && b.bias <= 100)) Fail(endpoint, "logit_bias value out of range", std::to_string(b.bias), body);
  }
  if (p->top_logprobs < 0 || p->top_logprobs > 20) Fail(endpoint, "top_logprobs out of range", std::to_string(p->top_logprobs), body);
  if (p->top_k < 0) Fail(endpoint, "negative top_k accepted", std::to_string(p->top_k), body);
  absl::StatusOr<std::vector<int32_t>> ids = ToPromptIds(r, *ctx.tokenizer, kHttpFuzzContext, &ctx.chat);
  if (!ids.ok()) {
    CheckRefusal(endpoint, ids.status(), body);
    return false;
  }
  if (ids->empty() || ids->size() >= static_cast<size_t>(kHttpFuzzContext)) Fail(endpoint, "prompt length out of range", std::to_string(ids->size()), body);
  for (int32_t id : *ids) {
    if (id < 0 || id >= ctx.tokenizer->vocab_size()) Fail(endpoint, "prompt id out of range", std::to_string(id), body);
  }
  return true;
}

// A Responses or Messages call: one chat request, checked as Generate's.
inline bool CheckOneChatChoice(const HttpFuzzContext& ctx, const char* endpoint, const absl::Status& status,
                               const CompletionCall* call, absl::string_view body) {
  if (!status.ok()) {
    CheckRefusal(endpoint, status, body);
    return false;
  }
  if (call->requests.size() != 1 || !call->format.chat || !call->requests[0].has_chat()) {
    Fail(endpoint, "not one chat request", std::to_string(call->requests.size()), body);
  }
  return CheckGenerate(ctx, endpoint, call->requests[0], body);
}

inline bool CheckScore(const HttpFuzzContext& ctx, const char* endpoint, const absl::StatusOr<ScoreCall>& call,
                       absl::string_view body) {
  if (!call.ok()) {
    CheckRefusal(endpoint, call.status(), body);
    return false;
  }
  if (call->left < 1 || call->right() < 1 || (call->left != 1 && call->left != call->right()) ||
      call->fields.size() != static_cast<size_t>(call->request.inputs_size())) {
    Fail(endpoint, "scoring pairs out of shape",
         std::to_string(call->left) + " against " + std::to_string(call->right()), body);
  }
  return CheckEncode(ctx, endpoint, call->request, body);
}

}  // namespace http_fuzz_internal

// True when the body was accepted: it parsed and passed every check the
// server runs before queueing it (the fixed-seed loop counts these, so that
// it is known to reach past the parsers).
inline bool HttpRequestFuzzOne(const HttpFuzzContext& ctx, const uint8_t* data, size_t size) {
  using namespace http_fuzz_internal;  // NOLINT: the checks above, local to this header
  if (size == 0) return false;
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % kHttpFuzzEndpoints) {
    case 0: {
      std::optional<v1::EncodeRequest> r = ParseNative<v1::EncodeRequest>("encode", ParseEncodeRequest, body);
      return r.has_value() && CheckEncode(ctx, "encode", *r, body);
    }
    case 1: {
      std::optional<v1::GenerateRequest> r = ParseNative<v1::GenerateRequest>("generate", ParseGenerateRequest, body);
      return r.has_value() && CheckGenerate(ctx, "generate", *r, body);
    }
    case 2:
      return ParseNative<v1::TokenizeRequest>("tokenize", ParseTokenizeRequest, body).has_value();
    case 3:
      return ParseNative<v1::DetokenizeRequest>("detokenize", ParseDetokenizeRequest, body).has_value();
    case 4: {
      absl::StatusOr<EmbeddingsCall> call = ParseEmbeddingsRequest(body);
      if (!call.ok()) {
        CheckRefusal("embeddings", call.status(), body);
        return false;
      }
      return CheckEncode(ctx, "embeddings", call->request, body);
    }
    case 7: {
      const absl::StatusOr<ResponsesCall> call = ParseResponsesRequest(body, ToolSupport{});
      return CheckOneChatChoice(ctx, "responses", call.status(), call.ok() ? &call->completion : nullptr, body);
    }
    case 8: {
      const absl::StatusOr<AnthropicCall> call = ParseAnthropicMessagesRequest(body, ToolSupport{});
      return CheckOneChatChoice(ctx, "messages", call.status(), call.ok() ? &call->completion : nullptr, body);
    }
    case 9: {
      const absl::StatusOr<v1::TokenizeRequest> r = ParseAnthropicCountTokensRequest(body, ToolSupport{});
      if (!r.ok()) {
        CheckRefusal("count_tokens", r.status(), body);
        return false;
      }
      if (!r->has_chat() || r->model() != v1::MODEL_KIND_DECODER) Fail("count_tokens", "not a chat", "", body);
      return true;
    }
    case 10: return CheckScore(ctx, "score", ParseScoreRequest(body), body);
    case 11: {
      // As the gateway reads /rerank: TEI's "texts" or vLLM's "documents";
      // scored by a one-label cross-encoder when the body's length is odd.
      const absl::StatusOr<nlohmann::json> root = ParseJsonObject(body);
      absl::StatusOr<ScoreCall> call = !root.ok()          ? absl::StatusOr<ScoreCall>(root.status())
                                       : IsTeiRerank(*root) ? ParseTeiRerankJson(*root)
                                                            : ParseRerankJson(*root);
      if (call.ok() && body.size() % 2 == 1) {
        const absl::Status cross = UseCrossEncoder({"LABEL_0"}, &*call);
        if (!cross.ok()) Fail("rerank", "a one-label cross-encoder refused", std::string(cross.message()), body);
      }
      return CheckScore(ctx, "rerank", call, body);
    }
    case 12: return CheckScore(ctx, "similarity", ParseSimilarityRequest(body), body);
    case 13: {
      absl::StatusOr<v1::EncodeRequest> r = ParseTeiEmbedAllRequest(body);
      if (!r.ok()) {
        CheckRefusal("embed_all", r.status(), body);
        return false;
      }
      return CheckEncode(ctx, "embed_all", *r, body);
    }
    case 14: {
      const absl::StatusOr<VllmTokenizeCall> call =
          ParseVllmTokenizeRequest(body, v1::MODEL_KIND_DECODER,
                                   ToolSupport{.auto_parser = AutoToolParser::kLlama3Json});
      if (!call.ok()) {
        CheckRefusal("vllm tokenize", call.status(), body);
        return false;
      }
      if (call->request.model() != v1::MODEL_KIND_DECODER) Fail("vllm tokenize", "not the decoder", "", body);
      return true;
    }
    case 15: {
      const absl::StatusOr<v1::DetokenizeRequest> r = ParseVllmDetokenizeRequest(body, v1::MODEL_KIND_DECODER);
      if (!r.ok()) {
        CheckRefusal("vllm detokenize", r.status(), body);
        return false;
      }
      if (r->skip_special_tokens()) Fail("vllm detokenize", "skips special tokens", "", body);
      return true;
    }
    default: {
      const bool chat = data[0] % kHttpFuzzEndpoints == 6;
      const char* endpoint = chat ? "chat completions" : "completions";
      absl::StatusOr<CompletionCall> call =
          chat ? ParseChatCompletionRequest(body, ToolSupport{.auto_parser = AutoToolParser::kLlama3Json})
               : ParseCompletionRequest(body);
      if (!call.ok()) {
        CheckRefusal(endpoint, call.status(), body);
        return false;
      }
      if (call->n < 1 || call->requests.empty() || call->requests.size() > kMaxCompletionChoices ||
          call->requests.size() % static_cast<size_t>(call->n) != 0 || call->format.chat != chat) {
        Fail(endpoint, "choices out of shape",
             std::to_string(call->requests.size()) + " requests, n = " + std::to_string(call->n), body);
      }
      bool all = true;
      for (const v1::GenerateRequest& r : call->requests) all = CheckGenerate(ctx, endpoint, r, body) && all;
      return all;
    }
  }
}

}  // namespace attnserve::fuzz

#endif  // ATTNSERVE_TESTS_FUZZ_HTTP_REQUEST_FUZZ_TARGET_H_
