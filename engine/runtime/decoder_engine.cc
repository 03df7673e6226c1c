#include "engine/runtime/decoder_engine.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/sampling/lazy_schema_mask.h"
#include "engine/tokenizers/stop_strings.h"
#include "engine/tokenizers/streaming_detokenizer.h"

namespace attnserve {

struct DecoderEngine::Sequence {
  SeqId id = 0;
  std::vector<int32_t> prompt;
  GenerationParams params;
  SamplingParams sampling;
  SamplingRng rng{0};
  int prompt_fed = 0;             // prompt positions in the cache
  int cached_prompt = 0;          // of which taken from the prefix cache
  std::vector<int32_t> history;   // prompt + generated (repetition penalty)
  int generated = 0;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  int64_t peak_kv_bytes = 0;
  StreamingDetokenizer detok;  // UTF-8-safe text of generated tokens
  std::vector<SampledToken> prompt_scores;  // prompt_logprobs: positions 1.. scored so far
  StopStringMatcher stops;     // holds back text that may start a stop string
  // Constrained output: the output so far as its acceptor has read it (JSON
  // mode, or a choice among sorted_choices), and the last ordinary token
  // (whose kind decides a SentencePiece "▁"'s space).
  std::optional<JsonAcceptor> json;
  std::vector<std::string> sorted_choices;
  std::optional<ChoiceAcceptor> choice;
  std::shared_ptr<SchemaMasks> schema;  // the schema and its cached masks
  std::optional<JsonSchemaAcceptor> schema_state;
  // kLazyJsonSchema before its first bytes: free text or the schema's
  // value may begin (the first token with bytes decides; free text drops
  // schema and schema_state).
  bool lazy = false;
  // kLazyJsonSchema with a trigger: the trigger; while the text is free
  // (schema_state empty), its last bytes, which may be the trigger's start.
  std::string trigger;
  std::string trigger_tail;
  bool watching() const { return !trigger.empty() && !schema_state.has_value(); }
  // constrain_after until the output has written it (then empty): the text
  // is free, its last bytes in free_tail; the format holds what follows.
  std::string free_until;
  std::string free_tail;
  bool thinking() const { return !free_until.empty(); }
  // thinking_token_budget: the tokens that spell thinking_end, forced once the
  // budget is spent; end_tail the output's last bytes, until it has
  // written thinking_end (then thinking_ended).
  std::vector<int32_t> forced_end;
  std::string end_tail;
  int32_t end_prev = -1;
  bool thinking_ended = false;
  // The token the budget forces next, or -1.
  int32_t ForcedToken() const {
    if (params.thinking_token_budget < 0 || thinking_ended) return -1;
    const int64_t index = int64_t{params.resumed_tokens} + generated - params.thinking_token_budget;
    return index >= 0 && index < static_cast<int64_t>(forced_end.size()) ? forced_end[index] : -1;
  }
  // allowed_token_ids as a mask over the vocabulary (empty: no such list).
  std::vector<uint8_t> allowed_ids;
  // bad_words, each as the token ids that spell it.
  std::vector<std::vector<int32_t>> bad_word_ids;
  int32_t constraint_prev = -1;
  bool constrained() const {
    return !thinking() && (json.has_value() || choice.has_value() || schema_state.has_value());
  }
  bool constraint_complete() const {
    if (json.has_value()) return json->complete();
    if (schema_state.has_value()) return schema_state->complete();
    return choice->complete();
  }
  bool constraint_can_continue() const {
    if (json.has_value()) return !json->complete();
    if (schema_state.has_value()) return schema_state->can_continue();
    return choice->can_continue();
  }

  Sequence(const Tokenizer& tokenizer, int32_t last_prompt_token, std::vector<std::string> stop, bool include_stop,
           bool write_special)
      : detok(tokenizer, last_prompt_token, write_special), stops(std::move(stop), include_stop) {}
  bool in_prefill() const { return prompt_fed < static_cast<int>(prompt.size()); }
  // Stop strings are looked for in the text of output tokens past
  // min_tokens (the output counts the tokens made before a preemption).
  bool stop_strings_armed() const { return params.resumed_tokens + generated > params.min_tokens; }
};

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kStopString: return "stop_string";
    case FinishReason::kContext: return "context";
  }
  return "unknown";
}

SamplingParams SamplingParamsOf(const GenerationParams& p) {
  SamplingParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.typical_p = p.typical_p;
  s.repetition_penalty = p.repetition_penalty;
  s.frequency_penalty = p.frequency_penalty;
  s.presence_penalty = p.presence_penalty;
  s.logit_bias = p.logit_bias;
  s.min_tokens = p.min_tokens;
  s.seed = p.seed;
  s.logprob = p.logprobs;
  s.top_logprobs = p.logprobs ? p.top_logprobs : 0;
  return s;
}

namespace {

// Appends c to `tail`, the output's last bytes (at most text.size() kept);
// whether they are now `text`. How a text is looked for in the output as it
// is written, a byte at a time.
bool EndsWithAfter(std::string& tail, char c, const std::string& text) {
  tail.push_back(c);
  if (tail.size() > text.size()) tail.erase(0, 1);
  return tail == text;
}

// The root of a salted sequence's block hash chain (0: unsalted).
uint64_t CacheSaltRoot(const std::string& salt) {
  if (salt.empty()) return 0;
  const uint64_t h = absl::HashOf(salt);
  return h == 0 ? 1 : h;
}

// The JSON schema or regex of `p` compiled; its error names the field.
absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> CompileConstraint(const GenerationParams& p) {
  if (p.output_format == OutputFormat::kRegex) return CompileRegexConstraint(p.regex);
  absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(p.json_schema);
  if (!schema.ok()) return absl::InvalidArgumentError(absl::StrCat("json_schema: ", schema.status().message()));
  return schema;
}

}  // namespace

absl::Status ValidateGenerationParams(const GenerationParams& p, const ModelDescription& model,
                                      bool compile_constraints) {
  if (p.max_new_tokens < 1 || p.max_new_tokens > model.max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("max_new_tokens must be in [1, ",
                                                   model.max_positions, "], got ",
                                                   p.max_new_tokens));
  }
  SamplingParams s = SamplingParamsOf(p);
  s.top_logprobs = p.top_logprobs;  // validated even when logprobs is off
  RETURN_IF_ERROR(ValidateSamplingParams(s, model.vocab_size));
  // A resumed sequence's max_new_tokens counts what is left; min_tokens
  // counts the whole output.
  if (p.min_tokens < 0 || p.min_tokens > p.max_new_tokens + std::max(p.resumed_tokens, 0)) {
    return absl::InvalidArgumentError(absl::StrCat("min_tokens must be in [0, max_new_tokens = ",
                                                   p.max_new_tokens, "], got ", p.min_tokens));
  }
  if (p.resumed_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("resumed_tokens must be >= 0, got ", p.resumed_tokens));
  }
  if (p.output_format == OutputFormat::kJsonObject && p.ignore_eos) {
    return absl::InvalidArgumentError(
        "ignore_eos cannot be combined with a JSON object response_format: the object's end ends the output");
  }
  if (p.output_format == OutputFormat::kJsonObject && p.min_tokens > 0) {
    return absl::InvalidArgumentError(
        "min_tokens cannot be combined with a JSON object response_format: the object's end ends the output");
  }
  if (p.output_format == OutputFormat::kChoice) {
    if (p.ignore_eos || p.min_tokens > 0) {
      return absl::InvalidArgumentError(absl::StrCat(p.ignore_eos ? "ignore_eos" : "min_tokens",
                                                     " cannot be combined with choice: the choice ends the output"));
    }
    if (p.choices.empty() || p.choices.size() > static_cast<size_t>(kMaxChoices)) {
      return absl::InvalidArgumentError(
          absl::StrCat("choice: 1 to ", kMaxChoices, " strings, got ", p.choices.size()));
    }
    std::vector<std::string> sorted = p.choices;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < p.choices.size(); ++i) {
      if (p.choices[i].empty() || p.choices[i].size() > static_cast<size_t>(kMaxChoiceBytes)) {
        return absl::InvalidArgumentError(absl::StrCat("choice[", i, "] must be 1..", kMaxChoiceBytes,
                                                       " bytes, got ", p.choices[i].size()));
      }
      if (i > 0 && sorted[i] == sorted[i - 1]) {
        return absl::InvalidArgumentError(absl::StrCat("choice: \"", sorted[i], "\" is listed twice"));
      }
    }
  } else if (!p.choices.empty()) {
    return absl::InvalidArgumentError("choice: only with the choice format");
  }
  // A JSON schema or a regex: the constraint decides where the output may
  // end, and must compile.
  const bool schema = p.output_format == OutputFormat::kJsonSchema || p.output_format == OutputFormat::kLazyJsonSchema;
  const bool regex = p.output_format == OutputFormat::kRegex;
  if (!schema && !p.json_schema.empty()) return absl::InvalidArgumentError("json_schema: only with the JSON schema format");
  if (!regex && !p.regex.empty()) return absl::InvalidArgumentError("regex: only with the regex format");
  if (!p.lazy_trigger.empty() && p.output_format != OutputFormat::kLazyJsonSchema) {
    return absl::InvalidArgumentError("lazy_trigger: only with the lazy JSON schema format");
  }
  if (p.lazy_trigger.size() > kMaxLazyTriggerBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("lazy_trigger: ", p.lazy_trigger.size(), " bytes, at most ", kMaxLazyTriggerBytes));
  }
  if (!p.constrain_after.empty() && p.output_format == OutputFormat::kText) {
    return absl::InvalidArgumentError("constrain_after: only with a format (JSON object, JSON schema, lazy JSON "
                                      "schema, choice or regex)");
  }
  if (p.constrain_after.size() > kMaxLazyTriggerBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("constrain_after: ", p.constrain_after.size(), " bytes, at most ", kMaxLazyTriggerBytes));
  }
  if (p.thinking_token_budget < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("thinking_token_budget: ", p.thinking_token_budget, ", must be >= 0 (or -1: no budget)"));
  }
  if (p.thinking_token_budget >= 0 &&
      (p.thinking_end.empty() || p.thinking_end.size() > static_cast<size_t>(kMaxLazyTriggerBytes))) {
    return absl::InvalidArgumentError(absl::StrCat("thinking_end: ", p.thinking_end.size(), " bytes, must be 1..",
                                                   kMaxLazyTriggerBytes, " with a thinking_token_budget"));
  }
  if (p.thinking_token_budget < 0 && !p.thinking_end.empty()) {
    return absl::InvalidArgumentError("thinking_end: only with a thinking_token_budget");
  }
  if (schema || regex) {
    if (p.ignore_eos || p.min_tokens > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          p.ignore_eos ? "ignore_eos" : "min_tokens", " cannot be combined with ",
          schema ? "a JSON schema: the object's end ends the output" : "a regex: the match decides where the "
                                                                       "output may end"));
    }
    if (compile_constraints) RETURN_IF_ERROR(CompileConstraint(p).status());
  }
  if (p.top_logprobs > 0 && !p.logprobs) {
    return absl::InvalidArgumentError("top_logprobs needs logprobs = true");
  }
  if (p.prompt_top_logprobs < -1 || p.prompt_top_logprobs > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat("prompt_top_logprobs must be in [0, ", kMaxTopLogprobs, "], got ",
                                                   p.prompt_top_logprobs));
  }
  if (p.prompt_top_logprobs >= 0 && !p.prompt_logprobs) {
    return absl::InvalidArgumentError("prompt_top_logprobs needs prompt_logprobs = true");
  }
  if (static_cast<int64_t>(p.allowed_token_ids.size()) > model.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("allowed_token_ids: ", p.allowed_token_ids.size(),
                                                   " ids, at most the vocabulary's ", model.vocab_size));
  }
  for (size_t i = 0; i < p.allowed_token_ids.size(); ++i) {
    if (p.allowed_token_ids[i] < 0 || p.allowed_token_ids[i] >= model.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("allowed_token_ids[", i, "]: token id ",
                                                     p.allowed_token_ids[i], " is outside [0, ", model.vocab_size,
                                                     ")"));
    }
  }
  if (p.bad_words.size() > kMaxBadWords) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad_words: ", p.bad_words.size(), " words, at most ", kMaxBadWords));
  }
  for (size_t i = 0; i < p.bad_words.size(); ++i) {
    if (absl::StripLeadingAsciiWhitespace(p.bad_words[i]).empty() || p.bad_words[i].size() > kMaxBadWordBytes) {
      return absl::InvalidArgumentError(absl::StrCat("bad_words[", i, "] must be 1..", kMaxBadWordBytes,
                                                     " bytes, not only spaces; got ", p.bad_words[i].size()));
    }
  }
  if (p.cache_salt.size() > kMaxCacheSaltBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache_salt: ", p.cache_salt.size(), " bytes, at most ", kMaxCacheSaltBytes));
  }
  if (p.stop.size() > kMaxStopStrings) {
    return absl::InvalidArgumentError(absl::StrCat("stop: at most ", kMaxStopStrings,
                                                   " strings, got ", p.stop.size()));
  }
  for (size_t i = 0; i < p.stop.size(); ++i) {
    if (p.stop[i].empty() || p.stop[i].size() > kMaxStopStringBytes) {
      return absl::InvalidArgumentError(absl::StrCat("stop[", i, "] must be 1..",
                                                     kMaxStopStringBytes, " bytes, got ",
                                                     p.stop[i].size()));
    }
  }
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i) {
    if (p.stop_token_ids[i] < 0 || p.stop_token_ids[i] >= model.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("stop_token_ids[", i, "] = ",
                                                     p.stop_token_ids[i], " is not in [0, ",
                                                     model.vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DecoderEngine>> DecoderEngine::Create(
    std::shared_ptr<const DecoderModel> model, const KvCacheOptions& kv_options) {
  if (model == nullptr) return absl::InvalidArgumentError("DecoderEngine: no model");
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::Create(model->kv_shape(), kv_options));
  return std::unique_ptr<DecoderEngine>(new DecoderEngine(std::move(model), std::move(kv)));
}

DecoderEngine::DecoderEngine(std::shared_ptr<const DecoderModel> model, std::unique_ptr<KvCache> kv)
    : model_(std::move(model)), kv_(std::move(kv)), kv_window_(model_->config().UniformWindow()) {
  const DecoderConfig& c = model_->config();
  for (int id : c.eos_token_ids) eos_ids_.push_back(id);
  if (c.eos_token_id >= 0) eos_ids_.push_back(c.eos_token_id);
  if (model_->tokenizer().special().eos >= 0) eos_ids_.push_back(model_->tokenizer().special().eos);
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
}

DecoderEngine::~DecoderEngine() = default;

absl::StatusOr<SeqId> DecoderEngine::AddSequence(std::vector<int32_t> prompt,
                                                 GenerationParams params) {
  const ModelDescription& d = model_->description();
  RETURN_IF_ERROR(ValidateGenerationParams(params, d, /*compile_constraints=*/false));
  if (prompt.empty()) return absl::InvalidArgumentError("prompt: no tokens");
  if (static_cast<int>(prompt.size()) >= model_->max_positions()) {
    return absl::InvalidArgumentError(absl::StrCat("prompt: ", prompt.size(),
                                                   " tokens, the model's context is ",
                                                   model_->max_positions()));
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= d.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("prompt[", i, "] = ", prompt[i],
                                                     " is not a token id in [0, ", d.vocab_size,
                                                     ")"));
    }
  }
  const int resumed = params.resumed_tokens;
  if (resumed >= static_cast<int>(prompt.size())) {
    return absl::InvalidArgumentError(absl::StrCat("resumed_tokens = ", resumed, " leaves no prompt of the ",
                                                   prompt.size(), " tokens"));
  }
  const size_t prompt_end = prompt.size() - static_cast<size_t>(resumed);  // the request's own prompt
  const SeqId id = next_id_++;
  auto s = std::make_unique<Sequence>(model_->tokenizer(), prompt[prompt_end - 1], params.stop,
                                      params.include_stop_string, !params.skip_special_tokens);
  s->id = id;
  s->sampling = SamplingParamsOf(params);
  if (params.min_tokens > 0) {
    if (!params.ignore_eos) {
      s->sampling.min_tokens_suppressed = eos_ids_;
      s->sampling.min_tokens_suppressed.insert(s->sampling.min_tokens_suppressed.end(),
                                               params.end_of_turn_ids.begin(), params.end_of_turn_ids.end());
    }
    s->sampling.min_tokens_suppressed.insert(s->sampling.min_tokens_suppressed.end(), params.stop_token_ids.begin(),
                                             params.stop_token_ids.end());
  }
  s->rng = SamplingRng(params.seed);
  // Resuming: replay the output so far through the RNG and the text
  // pipeline; the text it releases was streamed before the preemption.
  for (int i = 0; i < resumed * RandomDrawsPerToken(s->sampling); ++i) s->rng.Next();
  for (size_t i = prompt_end; i < prompt.size(); ++i) {
    const std::string piece = s->detok.Push(prompt[i]);
    if (static_cast<int>(i - prompt_end) + 1 > params.min_tokens) s->stops.Push(piece);
  }
  if (params.output_format != OutputFormat::kText) {
    if (vocabulary_ == nullptr) vocabulary_ = std::make_shared<const SortedVocabulary>(model_->tokenizer());
    if (params.output_format == OutputFormat::kJsonObject) {
      if (json_mask_ == nullptr) json_mask_ = std::make_unique<JsonTokenMask>(vocabulary_);
      s->json.emplace();
    } else if (params.output_format == OutputFormat::kJsonSchema || params.output_format == OutputFormat::kRegex ||
               params.output_format == OutputFormat::kLazyJsonSchema) {
      // Regexes share the schemas' cache; no schema text starts so.
      const std::string key =
          params.output_format == OutputFormat::kRegex ? "regex:" + params.regex : params.json_schema;
      std::shared_ptr<SchemaMasks>& entry = schemas_[key];
      if (entry == nullptr) {
        if (static_cast<int>(schemas_.size()) > kMaxCachedSchemas) {
          // Forget the schemas no running sequence uses (entry is new, so kept).
          for (auto it = schemas_.begin(); it != schemas_.end();) {
            if (it->second != nullptr && it->second.use_count() == 1) {
              schema_mask_bytes_ -= static_cast<int64_t>(it->second->masks.size()) * model_->config().vocab_size +
                                    static_cast<int64_t>(it->second->lazy_start.size());
              schema_pattern_bytes_ -= it->second->schema->pattern_bytes;
              schemas_.erase(it++);
            } else {
              ++it;
            }
          }
        }
        absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileConstraint(params);
        if (!schema.ok()) {  // the one compile of a new schema or regex (not in the validation above)
          schemas_.erase(key);
          return schema.status();
        }
        std::shared_ptr<SchemaMasks>& slot = schemas_[key];
        slot = std::make_shared<SchemaMasks>();
        slot->schema = *std::move(schema);
        schema_pattern_bytes_ += slot->schema->pattern_bytes;
        s->schema = slot;
      } else {
        s->schema = entry;
      }
      s->trigger = params.output_format == OutputFormat::kLazyJsonSchema ? params.lazy_trigger : "";
      // With a trigger the text begins free: no acceptor until it is written.
      if (s->trigger.empty()) s->schema_state.emplace(s->schema->schema.get());
      s->lazy = params.output_format == OutputFormat::kLazyJsonSchema && s->trigger.empty();
    } else {
      s->sorted_choices = params.choices;
      std::sort(s->sorted_choices.begin(), s->sorted_choices.end());
      s->choice.emplace(&s->sorted_choices);
    }
    s->constraint_prev = prompt[prompt_end - 1];
    s->free_until = params.constrain_after;
    // A lazy one may end free; a triggered one is read while free too.
    for (size_t i = prompt_end; i < prompt.size() && (s->constrained() || s->watching() || s->thinking()); ++i) {
      if (!AdvanceConstraint(*s, prompt[i])) {
        return absl::InvalidArgumentError(absl::StrCat("resumed_tokens: token ", prompt[i], " at ", i,
                                                       " does not continue the constrained output"));
      }
    }
  }
  for (const std::string& word : params.bad_words) {
    // As vLLM: the word as written (leading spaces dropped), then after a
    // space where that spells it with other tokens of the same count.
    const std::string bare(absl::StripLeadingAsciiWhitespace(word));
    TokenizeOptions plain;
    plain.add_bos = false;
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, model_->tokenizer().Encode(bare, plain));
    ASSIGN_OR_RETURN(std::vector<int32_t> spaced, model_->tokenizer().Encode(" " + bare, plain));
    const bool other = !spaced.empty() && spaced.size() == ids.size() && spaced[0] != ids[0];
    if (!ids.empty()) s->bad_word_ids.push_back(std::move(ids));
    if (other) s->bad_word_ids.push_back(std::move(spaced));
  }
  if (!params.allowed_token_ids.empty()) {
    s->allowed_ids.assign(model_->config().vocab_size, 0);
    for (int32_t id : params.allowed_token_ids) s->allowed_ids[id] = 1;
  }
  s->params = std::move(params);
  s->history = prompt;
  s->prompt = std::move(prompt);
  if (s->params.thinking_token_budget >= 0) {
    TokenizeOptions plain;
    plain.add_bos = false;
    ASSIGN_OR_RETURN(s->forced_end, model_->tokenizer().Encode(s->params.thinking_end, plain));
    if (s->forced_end.empty()) return absl::InvalidArgumentError("thinking_end: spells no tokens");
    // A resumed sequence's earlier output (the end of its prompt) may have
    // ended its thinking already.
    s->end_prev = s->prompt[prompt_end - 1];
    for (size_t i = prompt_end; i < s->prompt.size() && !s->thinking_ended; ++i) WatchThinkingEnd(*s, s->prompt[i]);
  }
  RETURN_IF_ERROR(kv_->AddSequence(id, CacheSaltRoot(s->params.cache_salt)));
  // Shared prefix blocks skip computing those positions, whose logits
  // prompt logprobs need.
  absl::StatusOr<int> cached = s->params.prompt_logprobs ? 0 : kv_->AttachPrefix(id, s->prompt);
  if (!cached.ok()) {
    kv_->Free(id);
    return cached.status();
  }
  s->prompt_fed = s->cached_prompt = *cached;
  // A shared prefix longer than the window: its first chunk reads keys from
  // cached - window + 1 on.
  if (kv_window_ > 0) kv_->ReleaseBefore(id, *cached - kv_window_ + 1);
  s->peak_kv_bytes = kv_->SequenceStats(id).peak_bytes;
  seqs_.emplace(id, std::move(s));
  return id;
}

void DecoderEngine::BanBadWords(Sequence& s) {
  // The output so far (a resumed sequence's earlier output ends its prompt).
  const size_t output = static_cast<size_t>(std::max(s.params.resumed_tokens, 0)) + static_cast<size_t>(s.generated);
  const std::vector<int32_t>& h = s.history;
  s.sampling.banned.clear();
  for (const std::vector<int32_t>& word : s.bad_word_ids) {
    const size_t rest = word.size() - 1;
    if (rest > output || rest > h.size()) continue;
    if (std::equal(word.begin(), word.end() - 1, h.end() - static_cast<std::ptrdiff_t>(rest))) {
      s.sampling.banned.push_back(word.back());
    }
  }
}

bool DecoderEngine::AdvanceTriggered(Sequence& s, int32_t token) {
  const Tokenizer& tok = model_->tokenizer();
  const bool held_before = s.schema_state.has_value();
  std::string bytes;
  if (tok.IsControl(token)) {
    // A control token is text the trigger may hold only where the answer
    // writes it (skip_special_tokens false: a model whose tag is a special
    // token); a held value's mask never lets one through.
    if (s.params.skip_special_tokens || held_before) return true;
    bytes = tok.IdToPiece(token);
  } else {
    bytes = tok.TokenBytes(token, s.constraint_prev);
    s.constraint_prev = token;
  }
  for (char c : bytes) {
    if (!s.schema_state.has_value()) {
      if (EndsWithAfter(s.trigger_tail, c, s.trigger)) {
        s.schema_state.emplace(s.schema->schema.get());
        s.trigger_tail.clear();
      }
      continue;
    }
    if (!s.schema_state->Feed(static_cast<uint8_t>(c))) {
      // The mask held a value begun before this token; one begun inside it
      // (free text's tokens are not masked) that goes astray is free text.
      if (held_before) return false;
      s.schema_state.reset();
      continue;
    }
    if (s.schema_state->complete() && !s.schema_state->can_continue()) s.schema_state.reset();
  }
  return true;
}

std::string DecoderEngine::WrittenBytes(const Sequence& s, int32_t token, int32_t* prev) const {
  const Tokenizer& tok = model_->tokenizer();
  if (tok.IsControl(token)) {
    // As a lazy trigger: a special token counts where the answer writes it.
    return s.params.skip_special_tokens ? std::string() : tok.IdToPiece(token);
  }
  std::string bytes = tok.TokenBytes(token, *prev);
  *prev = token;
  return bytes;
}

void DecoderEngine::WatchThinkingEnd(Sequence& s, int32_t token) {
  const std::string& end = s.params.thinking_end;
  for (char c : WrittenBytes(s, token, &s.end_prev)) {
    if (EndsWithAfter(s.end_tail, c, end)) {
      s.thinking_ended = true;
      s.end_tail.clear();
      return;
    }
  }
}

bool DecoderEngine::AdvanceFree(Sequence& s, int32_t token) {
  const std::string bytes = WrittenBytes(s, token, &s.constraint_prev);
  for (char c : bytes) {
    if (EndsWithAfter(s.free_tail, c, s.free_until)) {
      // Held from the next token on, as vLLM's structured outputs start at
      // the token after the one that ends the thinking (what this token
      // writes past the bytes is free).
      s.free_until.clear();
      s.free_tail.clear();
      return true;
    }
  }
  return true;
}

bool DecoderEngine::AdvanceConstraint(Sequence& s, int32_t token) {
  if (s.thinking()) return AdvanceFree(s, token);  // free text until constrain_after
  if (!s.trigger.empty()) {
    // An end id ends a held value only where it is whole (the mask's rule).
    const bool end_id = std::binary_search(eos_ids_.begin(), eos_ids_.end(), token) ||
                        std::find(s.params.end_of_turn_ids.begin(), s.params.end_of_turn_ids.end(), token) !=
                            s.params.end_of_turn_ids.end();
    if (end_id) return !s.schema_state.has_value() || s.schema_state->complete();
    return AdvanceTriggered(s, token);
  }
  const Tokenizer& tok = model_->tokenizer();
  if (s.lazy) {
    // The first token with bytes decides: the schema's value begun, or free
    // text (the mask let only such tokens through, but SortedVocabulary's
    // bytes of a first token after a lone BOS keep a space the exact bytes
    // lose: a token the schema then refuses leaves the output free too).
    if (tok.IsControl(token)) return true;
    const std::string bytes = tok.TokenBytes(token, s.constraint_prev);
    if (bytes.empty()) return true;
    s.lazy = false;
    JsonSchemaAcceptor begun = *s.schema_state;
    for (char c : bytes) {
      if (!begun.Feed(static_cast<uint8_t>(c))) {
        s.schema_state.reset();
        s.schema.reset();
        return true;
      }
    }
    s.schema_state = begun;
    s.constraint_prev = token;
    return true;
  }
  const bool complete = s.constraint_complete();
  // An end id passes the mask only where the output is whole (and after a
  // whole JSON object nothing else does).
  const bool end_id = std::binary_search(eos_ids_.begin(), eos_ids_.end(), token) ||
                      std::find(s.params.end_of_turn_ids.begin(), s.params.end_of_turn_ids.end(), token) !=
                          s.params.end_of_turn_ids.end();
  if (end_id || tok.IsControl(token) || (complete && !s.constraint_can_continue())) return complete;
  const std::string bytes = tok.TokenBytes(token, s.constraint_prev);
  s.constraint_prev = token;
  if (s.json.has_value()) return s.json->Feed(bytes);
  if (s.schema_state.has_value()) {
    for (char c : bytes) {
      if (!s.schema_state->Feed(static_cast<uint8_t>(c))) return false;
    }
    return true;
  }
  for (char c : bytes) {
    if (!s.choice->Feed(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

int DecoderEngine::FillConstraintMask(Sequence& s) {
  end_ids_ = eos_ids_;
  end_ids_.insert(end_ids_.end(), s.params.end_of_turn_ids.begin(), s.params.end_of_turn_ids.end());
  if (s.json.has_value()) return json_mask_->Fill(*s.json, end_ids_, constraint_allowed_);
  if (s.schema_state.has_value()) {
    const int vocab = model_->config().vocab_size;
    if (s.lazy) return FillLazyStartMask(*s.schema, *s.schema_state);
    // Where the output may end, the end ids; where it may go on, the tokens
    // that keep it on course (a regex match may do both).
    const bool complete = s.schema_state->complete();
    auto allow_ends = [&]() {
      int count = 0;
      for (int32_t id : end_ids_) {
        if (id >= 0 && id < vocab && constraint_allowed_[id] == 0) {
          constraint_allowed_[id] = 1;
          ++count;
        }
      }
      return count;
    };
    if (!s.schema_state->can_continue()) {
      constraint_allowed_.assign(vocab, 0);
      return allow_ends();
    }
    // Cached masks hold the walked tokens only: the end ids differ between
    // requests (a chat's end of turn), so they are added after.
    const JsonSchemaAcceptor::Key key = s.schema_state->StateKey(vocabulary_->longest_token_bytes());
    auto& masks = s.schema->masks;
    int count;
    if (auto it = masks.find(key); it != masks.end()) {
      constraint_allowed_ = it->second.first;
      count = it->second.second;
    } else {
      constraint_allowed_.assign(vocab, 0);
      count = vocabulary_->Walk(*s.schema_state, constraint_allowed_);
      if (schema_mask_bytes_ + vocab > kSchemaMaskCacheBytes) ClearSchemaMasks();
      masks[key] = {constraint_allowed_, count};
      schema_mask_bytes_ += vocab;
    }
    return count + (complete ? allow_ends() : 0);
  }
  constraint_allowed_.assign(model_->config().vocab_size, 0);
  int count = 0;
  if (s.choice->complete()) {
    for (int32_t id : end_ids_) {
      if (id >= 0 && id < static_cast<int32_t>(constraint_allowed_.size()) && constraint_allowed_[id] == 0) {
        constraint_allowed_[id] = 1;
        ++count;
      }
    }
  }
  if (s.choice->can_continue()) count += vocabulary_->Walk(*s.choice, constraint_allowed_);
  return count;
}

int DecoderEngine::FillLazyStartMask(SchemaMasks& entry, const JsonSchemaAcceptor& start) {
  if (entry.lazy_start.empty()) {
    const int vocab = model_->config().vocab_size;
    const int count = LazySchemaStartMask(*vocabulary_, start, vocab, constraint_allowed_);
    if (schema_mask_bytes_ + vocab > kSchemaMaskCacheBytes) ClearSchemaMasks();
    entry.lazy_start = constraint_allowed_;
    entry.lazy_start_count = count;
    schema_mask_bytes_ += vocab;
    return count;
  }
  constraint_allowed_ = entry.lazy_start;
  return entry.lazy_start_count;
}

void DecoderEngine::ClearSchemaMasks() {
  for (auto& [text, entry] : schemas_) {
    entry->masks.clear();
    entry->lazy_start.clear();
  }
  schema_mask_bytes_ = 0;
}

void DecoderEngine::Finish(Sequence& s, FinishReason reason) {
  s.finished = true;
  s.reason = reason;
  s.peak_kv_bytes = std::max(s.peak_kv_bytes, kv_->SequenceStats(s.id).peak_bytes);
  kv_->Free(s.id);
}

// Releases the text still held (incomplete UTF-8, possible stop prefixes).
// Returns true when a stop string turned up in it.
bool DecoderEngine::FlushText(Sequence& s, StepEvent& ev) {
  if (!s.stop_strings_armed()) {
    ev.text += s.detok.Flush();
    return false;
  }
  StopStringMatcher::Result r = s.stops.Push(s.detok.Flush());
  ev.text += r.text;
  if (r.stopped) {
    ev.stop_index = r.stop_index;
    return true;
  }
  ev.text += s.stops.Flush();
  return false;
}

void DecoderEngine::AppendToken(Sequence& s, const SampledToken& tok, StepEvent& ev) {
  if (s.params.logprobs) {
    // Each alternative's text as it would follow the previous token (which
    // decides, for SentencePiece, whether a leading "▁" is a space).
    SampledToken reported = tok;
    const int32_t prev = s.history.empty() ? -1 : s.history.back();
    for (TokenLogprob& alt : reported.top) alt.text = model_->tokenizer().TokenBytes(alt.id, prev);
    ev.logprobs.push_back(std::move(reported));
  }
  s.history.push_back(tok.id);
  ++s.generated;
  ev.token_ids.push_back(tok.id);
  const GenerationParams& p = s.params;
  const bool is_eos = !p.ignore_eos && (std::binary_search(eos_ids_.begin(), eos_ids_.end(), tok.id) ||
                                        std::find(p.end_of_turn_ids.begin(), p.end_of_turn_ids.end(), tok.id) !=
                                            p.end_of_turn_ids.end());
  const bool is_stop_id =
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), tok.id) != p.stop_token_ids.end();
  if (is_eos || is_stop_id) {
    // The stop token's own text is not part of the output.
    Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kStop);
    return;
  }
  StopStringMatcher::Result r;
  if (s.stop_strings_armed()) {
    r = s.stops.Push(s.detok.Push(tok.id));
  } else {
    r.text = s.detok.Push(tok.id);  // within min_tokens: no stop string yet
  }
  ev.text += r.text;
  if (r.stopped) {
    ev.stop_index = r.stop_index;
    Finish(s, FinishReason::kStopString);
  } else if (s.generated >= p.max_new_tokens) {
    Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kLength);
  } else if (static_cast<int>(s.history.size()) > model_->max_positions()) {
    // The token just sampled would be fed at position history.size() - 1,
    // past the context.
    Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kContext);
  }
}

void DecoderEngine::ScorePromptChunk(Sequence& s, int begin, int end, int first_row) {
  // Row r of the chunk (the token at position prompt_fed + r) predicts the
  // token at the next position; the chunk's last row predicts the first
  // generated token when the prompt ends there (SampleToken's job).
  const int vocab = model_->config().vocab_size;
  const int top_n = s.params.prompt_top_logprobs >= 0 ? s.params.prompt_top_logprobs : s.params.top_logprobs;
  for (int r = 0; r < end - begin; ++r) {
    const int next = s.prompt_fed + r + 1;
    if (next >= static_cast<int>(s.prompt.size())) break;
    absl::Span<const float> row(logits_.data() + (first_row + r) * static_cast<size_t>(vocab), vocab);
    SampledToken scored = ScoreToken(row, s.prompt[next], top_n);
    // vLLM's rank: 1 + the tokens strictly more likely.
    const float own = row[s.prompt[next]];
    scored.rank = 1 + static_cast<int32_t>(std::count_if(row.begin(), row.end(), [own](float v) { return v > own; }));
    for (TokenLogprob& alt : scored.top) alt.text = model_->tokenizer().TokenBytes(alt.id, s.prompt[next - 1]);
    s.prompt_scores.push_back(std::move(scored));
  }
}

absl::StatusOr<std::vector<StepEvent>> DecoderEngine::Step(absl::Span<const StepItem> items) {
  std::vector<Sequence*> batch_seqs;
  std::vector<SeqId> ids;
  std::vector<int> want;
  batch_seqs.reserve(items.size());
  for (const StepItem& item : items) {
    auto it = seqs_.find(item.seq);
    if (it == seqs_.end()) return absl::NotFoundError(absl::StrCat("no sequence ", item.seq));
    Sequence& s = *it->second;
    if (s.finished) {
      return absl::FailedPreconditionError(absl::StrCat("sequence ", item.seq, " is finished"));
    }
    if (std::find(ids.begin(), ids.end(), s.id) != ids.end()) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", item.seq, " listed twice"));
    }
    if (s.in_prefill() && item.max_prompt_tokens < 1) {
      return absl::InvalidArgumentError("max_prompt_tokens must be >= 1");
    }
    batch_seqs.push_back(&s);
    ids.push_back(s.id);
  }
  // Plan the batch: prompt chunks or one decode token each.
  batch_.Clear();
  for (size_t i = 0; i < batch_seqs.size(); ++i) {
    Sequence& s = *batch_seqs[i];
    const int start = kv_->NumTokens(s.id);
    if (s.in_prefill()) {
      const int n = std::min<int>(items[i].max_prompt_tokens,
                                  static_cast<int>(s.prompt.size()) - s.prompt_fed);
      batch_.Add(s.id, s.prompt.data() + s.prompt_fed, n, start);
      want.push_back(start + n);
    } else {
      batch_.Add(s.id, &s.history.back(), 1, start);
      want.push_back(start + 1);
    }
  }
  // Which logits row each sequence samples from; a prompt-scoring
  // sequence in prefill gets a row for every token of its chunk.
  std::vector<int> sample_row(batch_seqs.size());
  bool scoring = false;
  for (const Sequence* s : batch_seqs) scoring |= s->params.prompt_logprobs && s->in_prefill();
  if (scoring) {
    for (size_t i = 0; i < batch_seqs.size(); ++i) {
      const int begin = batch_.seq_start[i], end = batch_.seq_start[i + 1];
      const bool all = batch_seqs[i]->params.prompt_logprobs && batch_seqs[i]->in_prefill();
      for (int t = all ? begin : end - 1; t < end; ++t) batch_.logit_tokens.push_back(t);
      sample_row[i] = static_cast<int>(batch_.logit_tokens.size()) - 1;
    }
  } else {
    for (size_t i = 0; i < batch_seqs.size(); ++i) sample_row[i] = static_cast<int>(i);
  }
  RETURN_IF_ERROR(kv_->Reserve(ids, want));
  for (Sequence* s : batch_seqs) {
    s->peak_kv_bytes = std::max(s->peak_kv_bytes, kv_->SequenceStats(s->id).peak_bytes);
  }
  absl::Status fwd = model_->Forward(batch_, *kv_, scratch_, logits_);
  if (!fwd.ok()) return fwd;  // blocks stay reserved; the caller releases on error

  std::vector<StepEvent> events(batch_seqs.size());
  const int vocab = model_->config().vocab_size;
  for (size_t i = 0; i < batch_seqs.size(); ++i) {
    Sequence& s = *batch_seqs[i];
    StepEvent& ev = events[i];
    ev.seq = s.id;
    const int begin = batch_.seq_start[i], end = batch_.seq_start[i + 1];
    absl::Span<const int32_t> fed(batch_.tokens.data() + begin, end - begin);
    const bool was_prefill = s.in_prefill();
    RETURN_IF_ERROR(kv_->Commit(s.id, fed, /*publish=*/was_prefill));
    // Every layer windowed: the next token (at NumTokens) reads keys from
    // NumTokens - window + 1 on; the blocks wholly before go back to the pool.
    if (kv_window_ > 0) kv_->ReleaseBefore(s.id, kv_->NumTokens(s.id) - kv_window_ + 1);
    if (was_prefill) {
      if (s.params.prompt_logprobs) ScorePromptChunk(s, begin, end, sample_row[i] - (end - begin - 1));
      s.prompt_fed += end - begin;
      ev.prompt_tokens_fed = end - begin;
      if (s.in_prefill()) continue;  // more prompt to go: no token yet
    }
    absl::Span<const float> row(logits_.data() + sample_row[i] * static_cast<size_t>(vocab), vocab);
    // A spent thinking budget writes the end of the thinking, a token a
    // step (drawn from a one-token mask, so the RNG and the logprobs go on
    // as for any token).
    const int32_t forced = s.constrained() ? -1 : s.ForcedToken();
    if (forced >= 0) {
      constraint_allowed_.assign(vocab, 0);
      constraint_allowed_[forced] = 1;
      s.sampling.allowed = constraint_allowed_;
    } else if (s.constrained()) {
      int count = FillConstraintMask(s);
      if (!s.allowed_ids.empty()) {  // the tokens both allow
        count = 0;
        for (size_t id = 0; id < constraint_allowed_.size(); ++id) {
          constraint_allowed_[id] &= id < s.allowed_ids.size() ? s.allowed_ids[id] : 0;
          count += constraint_allowed_[id];
        }
      }
      if (count == 0) {
        // Nothing can follow: a whole object and a model without an end
        // id, or a vocabulary that cannot spell what must come next.
        Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kStop);
        ev.finished = true;
        ev.finish_reason = s.reason;
        continue;
      }
      s.sampling.allowed = constraint_allowed_;
    } else if (!s.allowed_ids.empty()) {
      s.sampling.allowed = s.allowed_ids;
    }
    if (!s.bad_word_ids.empty()) BanBadWords(s);
    // A resumed sequence's earlier output is at the end of its prompt.
    SampledToken tok = SampleToken(row, s.sampling, s.history, s.params.resumed_tokens + s.generated, s.rng,
                                   sample_scratch_);
    s.sampling.allowed = {};
    if (tok.id < 0) {
      // The request's masks left nothing to draw (allowed_token_ids held
      // back by min_tokens, or banned by bad_words): it ends here.
      Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kStop);
      ev.finished = true;
      ev.finish_reason = s.reason;
      continue;
    }
    if ((s.constrained() || s.watching() || s.thinking()) && !AdvanceConstraint(s, tok.id)) {
      // Cannot happen while the mask holds; end this sequence, not the batch.
      Finish(s, FlushText(s, ev) ? FinishReason::kStopString : FinishReason::kStop);
      ev.finished = true;
      ev.finish_reason = s.reason;
      continue;
    }
    if (s.params.thinking_token_budget >= 0 && !s.thinking_ended) WatchThinkingEnd(s, tok.id);
    if (s.params.prompt_logprobs && s.generated == 0) {
      ev.prompt_logprobs = std::move(s.prompt_scores);
      s.prompt_scores.clear();
      ev.prompt_ids = s.prompt;
      ev.prompt_token_text.reserve(s.prompt.size());
      for (size_t p = 0; p < s.prompt.size(); ++p) {
        ev.prompt_token_text.push_back(model_->tokenizer().TokenBytes(s.prompt[p], p == 0 ? -1 : s.prompt[p - 1]));
      }
    }
    AppendToken(s, tok, ev);
    ev.finished = s.finished;
    ev.finish_reason = s.reason;
  }
  return events;
}

int64_t DecoderEngine::json_mask_bytes() const {
  int64_t bytes = (vocabulary_ == nullptr ? 0 : vocabulary_->bytes()) +
                  (json_mask_ == nullptr ? 0 : json_mask_->cache_bytes());
  return bytes + schema_mask_bytes_ + schema_pattern_bytes_;
}

int64_t DecoderEngine::scratch_bytes() const {
  return scratch_.HeldBytes() + static_cast<int64_t>(logits_.capacity() * sizeof(float)) +
         sample_scratch_.HeldBytes();
}

void DecoderEngine::Release(SeqId seq) {
  kv_->Free(seq);
  seqs_.erase(seq);
}

bool DecoderEngine::IsFinished(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it != seqs_.end() && it->second->finished;
}

bool DecoderEngine::InPrefill(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it != seqs_.end() && it->second->in_prefill();
}

int64_t DecoderEngine::PeakKvBytes(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return 0;
  return std::max(it->second->peak_kv_bytes, kv_->SequenceStats(seq).peak_bytes);
}

int DecoderEngine::CachedPromptTokens(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second->cached_prompt;
}

absl::Status GenerateOne(DecoderEngine& engine, std::vector<int32_t> prompt,
                         const GenerationParams& params,
                         const std::function<bool(const StepEvent&)>& on_event,
                         int prefill_chunk) {
  ASSIGN_OR_RETURN(SeqId id, engine.AddSequence(std::move(prompt), params));
  absl::Status status;
  while (!engine.IsFinished(id)) {
    StepItem item{id, prefill_chunk};
    absl::StatusOr<std::vector<StepEvent>> events = engine.Step({&item, 1});
    if (!events.ok()) {
      status = events.status();
      break;
    }
    const StepEvent& ev = events->front();
    if ((!ev.token_ids.empty() || ev.finished) && !on_event(ev)) break;  // cancelled
  }
  engine.Release(id);
  return status;
}

}  // namespace attnserve
