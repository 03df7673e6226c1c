// The first mask of a lazy JSON schema (OutputFormat::kLazyJsonSchema,
// llama.cpp's lazy grammars): before the output has bytes, free text or the
// schema's value may begin. Allowed: every token whose bytes the schema's
// start state takes (the value begun as the schema allows) and every token
// that cannot begin the value (no bytes, as control and end tokens, or a
// first byte the value never starts with, which leaves the output free).
// Refused: the tokens that would begin the value but leave the schema
// ("{}" or "{\n" where the value must be {"name": ...}).
#ifndef ATTNSERVE_ENGINE_SAMPLING_LAZY_SCHEMA_MASK_H_
#define ATTNSERVE_ENGINE_SAMPLING_LAZY_SCHEMA_MASK_H_

#include <cstdint>
#include <vector>

#include "engine/sampling/json_schema.h"
#include "engine/sampling/sorted_vocabulary.h"

namespace attnserve {

// Fills allowed[0, vocab_size) (ids past the vocabulary's, which have no
// bytes, are allowed) and returns how many are allowed. `start`: a fresh
// JsonSchemaAcceptor of the schema.
int LazySchemaStartMask(const SortedVocabulary& vocabulary, const JsonSchemaAcceptor& start, int vocab_size,
                        std::vector<uint8_t>& allowed);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_SAMPLING_LAZY_SCHEMA_MASK_H_
