#include "engine/tokenizers/sequence_template.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"

namespace attnserve {
namespace {

// Keeps `keep` tokens of `text`, from its end or its start.
void Keep(size_t keep, TruncationSide side, TextEncoding* text) {
  if (keep >= text->ids.size()) return;
  if (side == TruncationSide::kStart) {
    const auto drop = static_cast<std::ptrdiff_t>(text->ids.size() - keep);
    text->ids.erase(text->ids.begin(), text->ids.begin() + drop);
    text->offsets.erase(text->offsets.begin(), text->offsets.begin() + drop);
  } else {
    text->ids.resize(keep);
    text->offsets.resize(keep);
  }
}

absl::Status Bad(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": post_processor: ", what));
}

// BertProcessing's "cls" / "sep": [token, id].
absl::StatusOr<int32_t> BertProcessingId(const nlohmann::json& pp, const char* name, const std::string& path) {
  auto it = pp.find(name);
  if (it == pp.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
    return Bad(path, absl::StrCat(name, " must be [token, id]"));
  }
  return (*it)[1].get<int32_t>();
}

}  // namespace

absl::StatusOr<SequenceTemplate> SequenceTemplate::FromPostProcessor(const nlohmann::json& pp, int64_t vocab_size,
                                                                     const std::string& path) {
  SequenceTemplate t;
  const std::string type = pp.is_object() && pp.contains("type") && pp["type"].is_string()
                               ? pp["type"].get<std::string>()
                               : std::string();
  if (type == "BertProcessing") {
    ASSIGN_OR_RETURN(int32_t cls, BertProcessingId(pp, "cls", path));
    ASSIGN_OR_RETURN(int32_t sep, BertProcessingId(pp, "sep", path));
    t.single_ = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}};
    t.pair_ = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}, {1, {}, 1}, {-1, {sep}, 1}};
  } else if (type == "RobertaProcessing") {
    // RoBERTa's: <s> $A </s> and <s> $A </s> </s> $B </s>, every token in
    // segment 0 (its trim_offsets is the tokenizer's business: it depends on
    // the byte-level tokens, see byte_level_bpe_encoder.h).
    ASSIGN_OR_RETURN(int32_t cls, BertProcessingId(pp, "cls", path));
    ASSIGN_OR_RETURN(int32_t sep, BertProcessingId(pp, "sep", path));
    t.single_ = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}};
    t.pair_ = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep, sep}, 0}, {1, {}, 0}, {-1, {sep}, 0}};
  } else if (type == "TemplateProcessing") {
    const nlohmann::json& specials = pp.contains("special_tokens") ? pp["special_tokens"] : nlohmann::json();
    for (const char* which : {"single", "pair"}) {
      auto list = pp.find(which);
      if (list == pp.end() || !list->is_array()) return Bad(path, absl::StrCat(which, " must be a list"));
      std::vector<Piece>& pieces = std::string(which) == "single" ? t.single_ : t.pair_;
      for (const nlohmann::json& item : *list) {
        Piece piece;
        const bool is_special = item.contains("SpecialToken");
        const nlohmann::json& body = is_special ? item["SpecialToken"] : item.contains("Sequence") ? item["Sequence"]
                                                                                                    : nlohmann::json();
        if (!body.is_object() || !body.contains("id") || !body["id"].is_string()) {
          return Bad(path, absl::StrCat(which, " entries must be SpecialToken or Sequence with an id"));
        }
        const std::string id = body["id"].get<std::string>();
        if (body.contains("type_id") && body["type_id"].is_number_integer()) piece.type_id = body["type_id"].get<int32_t>();
        if (is_special) {
          if (!specials.is_object() || !specials.contains(id) || !specials[id].contains("ids") ||
              !specials[id]["ids"].is_array() || specials[id]["ids"].empty()) {
            return Bad(path, absl::StrCat("special token ", id, " has no ids in special_tokens"));
          }
          for (const nlohmann::json& v : specials[id]["ids"]) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab_size) {
              return Bad(path, absl::StrCat("special token ", id, " has an id outside the vocabulary"));
            }
            piece.ids.push_back(v.get<int32_t>());
          }
        } else if (id == "A" || id == "B") {
          piece.sequence = id == "A" ? 0 : 1;
        } else {
          return Bad(path, absl::StrCat("sequence id \"", id, "\" (A or B expected)"));
        }
        pieces.push_back(std::move(piece));
      }
    }
  } else {
    return Bad(path, absl::StrCat("type \"", type,
                                  "\" is not supported (TemplateProcessing, BertProcessing or RobertaProcessing)"));
  }
  auto count = [](const std::vector<Piece>& pieces, int sequence) {
    return std::count_if(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.sequence == sequence; });
  };
  if (count(t.single_, 0) != 1 || count(t.single_, 1) != 0) return Bad(path, "single must hold $A once and no $B");
  if (count(t.pair_, 0) != 1 || count(t.pair_, 1) != 1) return Bad(path, "pair must hold $A and $B once each");
  for (const Piece& p : t.single_) {
    if (p.sequence < 0 && p.type_id != 0) return Bad(path, "single's special tokens must be segment 0");
  }
  return t;
}

int SequenceTemplate::AddedTokens(bool pair) const {
  int n = 0;
  for (const Piece& p : pair ? pair_ : single_) n += static_cast<int>(p.ids.size());
  return n;
}

int32_t SequenceTemplate::FirstSpecialId() const {
  return !single_.empty() && single_.front().sequence < 0 ? single_.front().ids.front() : -1;
}

int32_t SequenceTemplate::LastSpecialId() const {
  return !single_.empty() && single_.back().sequence < 0 ? single_.back().ids.back() : -1;
}

TextEncoding SequenceTemplate::Assemble(const std::vector<Piece>& pieces, const TextEncoding* sequences[2]) const {
  TextEncoding out;
  for (const Piece& p : pieces) {
    if (p.sequence < 0) {
      for (int32_t id : p.ids) {
        out.ids.push_back(id);
        out.offsets.emplace_back(0, 0);
        out.type_ids.push_back(p.type_id);
        out.special_tokens_mask.push_back(1);
      }
    } else {
      const TextEncoding& s = *sequences[p.sequence];
      out.ids.insert(out.ids.end(), s.ids.begin(), s.ids.end());
      out.offsets.insert(out.offsets.end(), s.offsets.begin(), s.offsets.end());
      out.type_ids.insert(out.type_ids.end(), s.ids.size(), p.type_id);
      out.special_tokens_mask.insert(out.special_tokens_mask.end(), s.ids.size(), 0);
    }
  }
  return out;
}

TextEncoding SequenceTemplate::Single(TextEncoding text, bool add_special_tokens, int max_length,
                                      TruncationSide side) const {
  const int added = add_special_tokens ? AddedTokens(false) : 0;
  const int64_t untruncated = static_cast<int64_t>(text.ids.size()) + added;
  bool truncated = false;
  if (max_length > 0 && untruncated > max_length) {
    Keep(static_cast<size_t>(std::max(0, max_length - added)), side, &text);
    truncated = true;
  }
  TextEncoding out;
  if (add_special_tokens) {
    const TextEncoding* sequences[2] = {&text, nullptr};
    out = Assemble(single_, sequences);
  } else {
    out = std::move(text);
  }
  out.type_ids.clear();  // every token is segment 0
  out.untruncated_length = untruncated;
  out.truncated = truncated;
  return out;
}

TextEncoding SequenceTemplate::Pair(TextEncoding first, TextEncoding second, int max_length,
                                    TruncationSide side) const {
  const int added = AddedTokens(true);
  const int64_t untruncated = static_cast<int64_t>(first.ids.size() + second.ids.size()) + added;
  bool truncated = false;
  if (max_length > 0 && untruncated > max_length) {
    const auto [keep_first, keep_second] = TruncateLongestFirst(
        first.ids.size(), second.ids.size(), static_cast<size_t>(std::max(0, max_length - added)));
    Keep(keep_first, side, &first);
    Keep(keep_second, side, &second);
    truncated = true;
  }
  const TextEncoding* sequences[2] = {&first, &second};
  TextEncoding out = Assemble(pair_, sequences);
  out.untruncated_length = untruncated;
  out.truncated = truncated;
  return out;
}

std::pair<size_t, size_t> TruncateLongestFirst(size_t first, size_t second, size_t budget) {
  if (first + second <= budget) return {first, second};
  const bool swapped = first > second;
  size_t shorter = std::min(first, second);
  size_t longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
  if (shorter + longer > budget) {
    shorter = budget / 2;
    longer = shorter + budget % 2;
  }
  const size_t keep_first = swapped ? longer : shorter;
  const size_t keep_second = swapped ? shorter : longer;
  return {std::min(first, keep_first), std::min(second, keep_second)};
}

}  // namespace attnserve
