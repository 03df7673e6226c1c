// DecoderEngine: the step-level engine the server's scheduler drives.
//
// It owns the sequences, the paged KV cache and each sequence's sampling
// state. Each Step runs ONE batched forward over a ragged batch: sequences
// still in their prompt feed a chunk of it (causal within the chunk,
// attending to their cached past), the others feed their last sampled token;
// then every sequence that has consumed its whole prompt samples one token.
//
// Sequence lifecycle:
//   AddSequence -> [prefill chunks] -> [decode steps] -> finished -> Release
// A finished sequence (length, stop token/string, context full) returns its
// KV blocks to the pool at once; its record stays until Release so the
// scheduler can still read PeakKvBytes. Release frees everything (also for
// cancel, error and preemption) and is a no-op for unknown ids.
//
// Batch invariance: a sequence's tokens depend only on its own prompt,
// parameters and seed. Per-row work (norms, rope, attention, sampling) never
// mixes rows; the GEMMs are oneDNN's (see docs/benchmarks.md on invariance).
//
// Thread-compatible: one thread (the scheduler) owns a DecoderEngine.
// The model is shared and immutable.
#ifndef ATTNSERVE_ENGINE_RUNTIME_DECODER_ENGINE_H_
#define ATTNSERVE_ENGINE_RUNTIME_DECODER_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/kv/kv_cache.h"
#include "engine/models/decoder_model.h"
#include "engine/sampling/choice_acceptor.h"
#include "engine/sampling/json_schema.h"
#include "engine/sampling/json_token_mask.h"
#include "engine/sampling/sampler.h"

namespace attnserve {

// What the output must be. kJsonObject is OpenAI's response_format
// {"type": "json_object"}: every token is masked to keep the text a prefix
// of a JSON object (engine/sampling/json_acceptor.h for the exact grammar),
// and once the object closes only an end-of-sequence id may follow.
// kChoice is vLLM's guided_choice: the text is exactly one of
// GenerationParams::choices (an end id is allowed once the text is a whole
// choice, and a longer choice may still go on). kJsonSchema is OpenAI's
// response_format {"type": "json_schema"}: one JSON object that
// GenerationParams::json_schema accepts, written as
// engine/sampling/json_schema.h says.
// kRegex (vLLM's guided_regex): the whole output matches
// GenerationParams::regex (engine/sampling/regex_dfa.h); it may end once it
// does, or go on where the regex allows.
// kLazyJsonSchema (llama.cpp's lazy grammars): free text, unless the
// output's first byte is one the schema's value may begin with ('{' for an
// object): then the whole output is kJsonSchema's. Until a token with
// bytes is drawn (control tokens have none) either may come; tokens that
// begin with such a byte but leave the schema are masked. How tool_choice
// "auto" keeps a call the model begins to the tools' schemas. With a
// GenerationParams::lazy_trigger the text is free until it writes the
// trigger; the bytes after it are then held to the schema until its value
// is whole, and the text is free again (another trigger holds another
// value): llama.cpp's lazy grammar with a trigger word, how hermes calls
// (<tool_call>\n{...}) are held.
enum class OutputFormat : uint8_t { kText, kJsonObject, kChoice, kJsonSchema, kRegex, kLazyJsonSchema };

// JSON schema mode keeps each schema's token masks by grammar state across
// requests (the same schema's next request starts warm): at most this many
// bytes of masks in all, and this many schemas. The schemas' pattern
// automata (at most kMaxSchemaPatternBytes each) take the rest of a 16 MiB
// budget.
inline constexpr int kMaxCachedSchemas = 64;
inline constexpr int64_t kSchemaMaskCacheBytes = (int64_t{16} << 20) - kMaxCachedSchemas * kMaxSchemaPatternBytes;

struct GenerationParams {
  int max_new_tokens = 64;          // >= 1
  float temperature = 1.0f;         // 0: greedy
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float typical_p = 1.0f;           // 1: off
  float repetition_penalty = 1.0f;  // 1: off
  float frequency_penalty = 0.0f;   // 0: off; counts this request's output tokens
  float presence_penalty = 0.0f;    // 0: off; likewise
  std::vector<LogitBias> logit_bias;  // OpenAI's logit_bias (SamplingParams)
  // vLLM's allowed_token_ids: when not empty, every generated token is one
  // of these (an end-of-sequence token only if listed); with a constrained
  // format, one both allow.
  std::vector<int32_t> allowed_token_ids;
  // vLLM's bad_words: none of these words is written. Each is tokenized
  // as vLLM does (as written, and after a space where that gives other
  // tokens of the same count); a one-token word's token is never drawn,
  // a longer word's last token not after the output's tokens of the rest.
  // At most kMaxBadWords of 1..kMaxBadWordBytes bytes.
  std::vector<std::string> bad_words;
  // vLLM's cache_salt: prompt blocks are shared only with requests of the
  // same salt ("" shares with others without one); at most
  // kMaxCacheSaltBytes.
  std::string cache_salt;
  uint64_t seed = 0;
  std::vector<std::string> stop;        // stop strings (not in the text unless include_stop_string)
  bool include_stop_string = false;     // vLLM's include_stop_str_in_output
  std::vector<int32_t> stop_token_ids;  // extra ids that end generation
  bool ignore_eos = false;              // keep going past the model's EOS ids
  // Control tokens generated mid-answer add nothing to the text (vLLM's
  // default, skip_special_tokens); false writes each as its vocabulary entry
  // ("<|im_start|>"). A token that ends the answer (EOS, end of turn, a stop
  // id) is never written, as vLLM leaves it out either way.
  bool skip_special_tokens = true;
  // More ids that end generation as EOS does (and are ignored with it): a
  // chat template's end-of-turn token ("<|im_end|>", "<|eot_id|>") where it
  // is not the model's EOS.
  std::vector<int32_t> end_of_turn_ids;
  // Make at least this many tokens (<= max_new_tokens) before stopping, as
  // vLLM's min_tokens: until then the EOS ids (unless ignore_eos) and
  // stop_token_ids cannot be sampled, and stop strings are looked for only
  // in the text of the tokens after the min_tokens-th.
  int min_tokens = 0;
  bool logprobs = false;                // report logprob of each chosen token
  int top_logprobs = 0;                 // and the top-n alternatives (needs logprobs)
  // Score the prompt too: each prompt token after the first gets its
  // log-probability given the tokens before it and its rank among the
  // vocabulary, with the prompt_top_logprobs best alternatives (vLLM's
  // prompt_logprobs, TGI's decoder_input_details). The whole prompt is
  // computed (no prefix-cache sharing for such a sequence); the scores come
  // with the first generated token's event.
  bool prompt_logprobs = false;
  // How many alternatives each prompt position gets: 0..kMaxTopLogprobs,
  // or -1 for top_logprobs (only with prompt_logprobs).
  int prompt_top_logprobs = -1;
  // Resuming after a preemption: the last `resumed_tokens` prompt tokens are
  // this request's own output so far, recomputed rather than new prompt
  // (max_new_tokens then counts what is left). The sequence goes on as if it
  // had never stopped: its RNG skips the draws those tokens took, so a seed
  // gives the same tokens; and its text resumes where the streamed text
  // ended, holding back again what was held back then (the bytes of an
  // unfinished character, text that may begin a stop string), so the text is
  // the same too. vLLM keeps a request's generator across preemption alike.
  int resumed_tokens = 0;
  // A constrained format cannot be combined with ignore_eos or min_tokens:
  // the constraint decides where the output ends.
  OutputFormat output_format = OutputFormat::kText;
  // kChoice: 1..kMaxChoices distinct strings of 1..kMaxChoiceBytes bytes.
  std::vector<std::string> choices;
  // kJsonSchema, kLazyJsonSchema: the schema's JSON text (CompileJsonSchema's subset).
  std::string json_schema;
  // kLazyJsonSchema: "" (the value may begin at the first byte), or the
  // text after which each value begins (1..kMaxLazyTriggerBytes bytes).
  std::string lazy_trigger;
  // Any format but kText: "" (the format holds the output from its first
  // byte), or up to kMaxLazyTriggerBytes bytes the output is free text
  // until it writes them ("</think>"): the format then holds the output
  // from the next token to the end (vLLM's structured outputs after a
  // reasoning model's thinking, which start at the token after the one
  // that ends it). kLazyJsonSchema's value, or its trigger, is looked for
  // only from there (llama.cpp's lazy tool-call grammars wait for the
  // thinking too). An end token before them ends the output free.
  std::string constrain_after;
  // kRegex: the regex (at most kMaxRegexBytes).
  std::string regex;
  // A reasoning model's thinking budget (vLLM's thinking_token_budget,
  // llama.cpp's reasoning budget): -1 none; else, with `thinking_end` (the
  // text that ends the thinking, 1..kMaxLazyTriggerBytes bytes: "</think>"),
  // once the output has this many tokens (counted from its first, the
  // thinking's opening tag included) without having written thinking_end,
  // the tokens that spell it are written next, one a step, and the output
  // goes on free. The end is looked for in the text as written (a special
  // token counts only with skip_special_tokens false), as constrain_after's,
  // which then holds the answer after it. A format that holds the thinking
  // too (no constrain_after) is not broken into: nothing is forced while
  // it holds the output.
  int thinking_token_budget = -1;
  std::string thinking_end;
};

inline constexpr int kMaxStopStrings = 16;
inline constexpr int kMaxLazyTriggerBytes = 64;
inline constexpr int kMaxCacheSaltBytes = 1024;
inline constexpr int kMaxBadWords = 64;
inline constexpr int kMaxBadWordBytes = 256;
inline constexpr int kMaxStopStringBytes = 256;

// The sampler's share of `params` (logprobs off unless requested).
SamplingParams SamplingParamsOf(const GenerationParams& params);

// INVALID_ARGUMENT naming the field and its limit. `compile_constraints`
// false skips compiling a JSON schema or regex: AddSequence does that only
// when its cache lacks it (and returns the same error), so a cached one is
// not compiled again on the engine's thread for every request.
absl::Status ValidateGenerationParams(const GenerationParams& params, const ModelDescription& model,
                                      bool compile_constraints = true);

enum class FinishReason : uint8_t {
  kNone,        // still running
  kLength,      // max_new_tokens reached
  kStop,        // EOS or a stop token id
  kStopString,  // a stop string appeared in the text
  kContext,     // the model's context is full
};
const char* FinishReasonName(FinishReason reason);

// One sequence's share of a step.
struct StepItem {
  SeqId seq = 0;
  int max_prompt_tokens = 512;  // prefill chunk limit; a decoding sequence feeds 1 token
};

struct StepEvent {
  SeqId seq = 0;
  int prompt_tokens_fed = 0;            // prompt positions computed this step
  std::vector<int32_t> token_ids;       // sampled this step (0 or 1)
  std::string text;                     // UTF-8-safe text delta (may be empty)
  std::vector<SampledToken> logprobs;   // per token in token_ids when requested
  // With prompt_logprobs, on the event of the first generated token: the
  // prompt's ids and the text each adds after the one before it
  // (Tokenizer::TokenBytes; "" for control tokens) ...
  std::vector<int32_t> prompt_ids;
  std::vector<std::string> prompt_token_text;
  // ... and each prompt token from position 1 on (position 0 has nothing
  // before it) scored: logprob and alternatives with their text.
  std::vector<SampledToken> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  int stop_index = -1;  // kStopString: which of GenerationParams::stop matched
};

class DecoderEngine {
 public:
  // INVALID_ARGUMENT when the KV options do not fit the model.
  static absl::StatusOr<std::unique_ptr<DecoderEngine>> Create(
      std::shared_ptr<const DecoderModel> model, const KvCacheOptions& kv_options);
  ~DecoderEngine();
  DecoderEngine(const DecoderEngine&) = delete;
  DecoderEngine& operator=(const DecoderEngine&) = delete;

  // Validates and registers a sequence; shares cached prefix blocks when it
  // can. `prompt` holds token ids (BOS included if the model wants one) and
  // must be non-empty and shorter than the model's context.
  absl::StatusOr<SeqId> AddSequence(std::vector<int32_t> prompt, GenerationParams params);

  // Runs one batched step over `items` (each sequence at most once, none
  // finished). Reserves the KV blocks first: RESOURCE_EXHAUSTED with nothing
  // changed when they do not fit (the scheduler may wait or preempt).
  absl::StatusOr<std::vector<StepEvent>> Step(absl::Span<const StepItem> items);

  void Release(SeqId seq);

  bool IsFinished(SeqId seq) const;
  bool InPrefill(SeqId seq) const;
  KvStats kv_stats() const { return kv_->Stats(); }
  // > 0 when every layer attends to that many positions at most: a
  // sequence then holds only its window's blocks (DecoderConfig::UniformWindow).
  int kv_window() const { return kv_window_; }
  KvSequenceStats kv_sequence_stats(SeqId seq) const { return kv_->SequenceStats(seq); }
  int64_t PeakKvBytes(SeqId seq) const;
  // Prompt positions taken from the prefix cache when the sequence was added.
  int CachedPromptTokens(SeqId seq) const;
  const DecoderModel& model() const { return *model_; }
  // Constrained decoding's sorted token table and JSON mode's cached masks
  // (0 before the first constrained request).
  int64_t json_mask_bytes() const;
  // Working buffers held between steps: the forward's activations and the
  // logits (grown to the largest step so far and kept), the sampler's.
  // Kernel buffers shared by every model are PackedGemmPanelScratchBytes().
  int64_t scratch_bytes() const;

 private:
  struct Sequence;
  struct SchemaMasks;
  DecoderEngine(std::shared_ptr<const DecoderModel> model, std::unique_ptr<KvCache> kv);
  void Finish(Sequence& s, FinishReason reason);
  // Before constrain_after is written: reads `token`'s bytes for it (the
  // format holds from the next token once they are).
  bool AdvanceFree(Sequence& s, int32_t token);
  // The bytes `token` writes where a text is looked for in the output (a
  // control token's only with skip_special_tokens false); *prev is the
  // token before it, which decides a SentencePiece space, and becomes it.
  std::string WrittenBytes(const Sequence& s, int32_t token, int32_t* prev) const;
  // thinking_token_budget: reads `token`'s bytes for thinking_end.
  void WatchThinkingEnd(Sequence& s, int32_t token);
  // A constrained sequence: feeds `token`'s bytes to its acceptor; false if
  // it refuses them.
  bool AdvanceConstraint(Sequence& s, int32_t token);
  // kLazyJsonSchema with a trigger: reads the token's bytes, free text
  // until the trigger is written, then the schema's value until it is
  // whole. False where a value begun before this token refuses a byte.
  bool AdvanceTriggered(Sequence& s, int32_t token);
  // bad_words: the tokens the next draw may not take, into s.sampling.banned.
  void BanBadWords(Sequence& s);
  // Which tokens may come next for constrained `s`, into constraint_allowed_;
  // returns how many.
  int FillConstraintMask(Sequence& s);
  // kLazyJsonSchema before its first bytes, into constraint_allowed_ (cached
  // in `entry`); returns how many tokens it allows.
  int FillLazyStartMask(SchemaMasks& entry, const JsonSchemaAcceptor& start);
  // Forgets every schema's cached masks (the cache is full).
  void ClearSchemaMasks();
  void AppendToken(Sequence& s, const SampledToken& tok, StepEvent& ev);
  bool FlushText(Sequence& s, StepEvent& ev);
  // Scores the prompt tokens that rows [first_row, first_row + end - begin)
  // of logits_ predict (the chunk batch_.tokens[begin, end) of `s`, fed
  // from s.prompt_fed).
  void ScorePromptChunk(Sequence& s, int begin, int end, int first_row);

  std::shared_ptr<const DecoderModel> model_;
  std::unique_ptr<KvCache> kv_;
  int kv_window_ = 0;  // model_->config().UniformWindow()
  std::vector<int32_t> eos_ids_;
  // Constrained decoding's tables, built for the first request that asks.
  std::shared_ptr<const SortedVocabulary> vocabulary_;
  std::unique_ptr<const JsonTokenMask> json_mask_;
  // A compiled schema and the masks its states have needed.
  struct SchemaMasks {
    std::shared_ptr<const CompiledJsonSchema> schema;
    absl::flat_hash_map<JsonSchemaAcceptor::Key, std::pair<std::vector<uint8_t>, int>> masks;
    // kLazyJsonSchema's mask before the first bytes (always at the schema's
    // start), built for its first such request: the tokens that begin the
    // value as the schema allows, and every token that cannot begin it (no
    // bytes, end ids among them, or a first byte the value never starts
    // with), which leaves the output free.
    std::vector<uint8_t> lazy_start;
    int lazy_start_count = 0;
  };
  absl::flat_hash_map<std::string, std::shared_ptr<SchemaMasks>> schemas_;  // by the schema's text
  int64_t schema_mask_bytes_ = 0;
  int64_t schema_pattern_bytes_ = 0;  // the cached schemas' pattern automata
  std::vector<uint8_t> constraint_allowed_;  // reused across draws
  std::vector<int32_t> end_ids_;             // likewise
  absl::flat_hash_map<SeqId, std::unique_ptr<Sequence>> seqs_;
  SeqId next_id_ = 1;
  // Reused across steps.
  ForwardBatch batch_;
  DecoderScratch scratch_;
  std::vector<float> logits_;
  SamplingScratch sample_scratch_;
};

// One request at a time: adds the sequence, runs Step until it finishes,
// calling on_event after each step that produced something; on_event
// returning false cancels. Releases the sequence on every path.
absl::Status GenerateOne(DecoderEngine& engine, std::vector<int32_t> prompt,
                         const GenerationParams& params,
                         const std::function<bool(const StepEvent&)>& on_event,
                         int prefill_chunk = 512);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_RUNTIME_DECODER_ENGINE_H_
