// The published chat templates behind each ChatFormat (chat_template.h), as
// their Jinja source: one table, so that KnownChatTemplate can recognise a
// model's template and the format names have one home.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_TEXTS_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_TEXTS_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/tokenizers/chat_template.h"

namespace attnserve {

struct ChatTemplateText {
  ChatFormat format;
  absl::string_view name;  // the format's name ("chatml")
  // The template as Jinja source: the text of tokenizer_config.json's
  // "chat_template" once JSON-decoded.
  absl::string_view jinja;
};

// One for each format, in ChatFormat's order of names (--help lists them so).
absl::Span<const ChatTemplateText> PublishedChatTemplates();

// Further texts recognised as a format: other models' copies of its
// template, typed differently but rendering the same.
absl::Span<const ChatTemplateText> OtherChatTemplateTexts();

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_CHAT_TEMPLATE_TEXTS_H_
