// Conversions between the attnserve.v1 proto messages and engine types, and
// the request checks that must happen before a request is queued (so a bad
// request is refused alone and never fails a batch it would have joined).
// Pure functions; messages name the proto field and the limit.
#ifndef ATTNSERVE_SERVER_CORE_PROTO_CONVERT_H_
#define ATTNSERVE_SERVER_CORE_PROTO_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "attnserve/v1/inference.pb.h"
#include "server/core/chat_prompt.h"
#include "engine/models/encoder_model.h"
#include "engine/runtime/decoder_engine.h"

namespace attnserve {

// EncodeRequest -> engine inputs and options. Checks the input count and the
// attention layers; per-input token checks are the scheduler backend's.
struct EncodeCall {
  std::vector<EncoderInput> inputs;
  EncodeOptions options;
};
absl::StatusOr<EncodeCall> ToEncodeCall(const v1::EncodeRequest& request, const ModelDescription& model,
                                        int max_inputs);

// Engine results -> EncodeResponse.
v1::EncodeResponse ToEncodeResponse(std::vector<EncodeResult> results, const v1::EncodeUsage& usage,
                                    const std::string& model_name);

// Generate sampling parameters with defaults filled and limits checked.
// `random_seed` is used when the request sets none.
absl::StatusOr<GenerationParams> ToGenerationParams(const v1::GenerateRequest& request, const ModelDescription& model,
                                                    int max_new_tokens_limit, uint64_t random_seed);

// The prompt as token ids: tokenized text (BOS per the model), the given
// ids, or a chat rendered with `chat` (chat_prompt.h; nullptr: refused),
// checked against the vocabulary and the context length.
absl::StatusOr<std::vector<int32_t>> ToPromptIds(const v1::GenerateRequest& request, const Tokenizer& tokenizer,
                                                 int max_positions, const ChatSetup* chat = nullptr);

// One step's tokens -> a stream message (alternatives' text as the engine
// decoded it, invalid UTF-8 replaced).
v1::GenerateResponse ToGenerateChunk(const StepEvent& event);

// Appends `next` to `into`, as if the two messages had been one: tokens,
// text and logprobs concatenated; finish_reason and usage taken from `next`
// when it has them. For streams that fall behind (the message list stays a
// valid stream: text is only ever cut between whole characters).
void AppendGenerateChunk(v1::GenerateResponse* into, v1::GenerateResponse next);

v1::FinishReason ToProtoFinishReason(FinishReason reason, int32_t last_token, const GenerationParams& params);

// Sets `last`'s stop_reason from its finish_reason: the stop string that
// matched (params.stop[stop_index]) or the stop token id (`last_token`).
void SetStopReason(const GenerationParams& params, int32_t last_token, int stop_index, v1::GenerateResponse* last);

// Replaces invalid UTF-8 sequences with U+FFFD (proto strings must be UTF-8).
std::string ReplaceInvalidUtf8(std::string_view text);

v1::ModelInfo ToModelInfo(const ModelDescription& description, v1::ModelKind kind);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_PROTO_CONVERT_H_
