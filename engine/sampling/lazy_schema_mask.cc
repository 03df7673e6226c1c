// A lazy JSON schema's first mask (lazy_schema_mask.h).
#include "engine/sampling/lazy_schema_mask.h"

namespace attnserve {
namespace {

// Walks a vocabulary for the tokens whose first byte may begin `start`'s
// value (the bytes after it are not looked at).
struct FirstByteOf {
  JsonSchemaAcceptor start;
  bool fed = false;
  bool Feed(uint8_t byte) {
    if (fed) return true;
    fed = true;
    return start.Feed(byte);
  }
};

}  // namespace

int LazySchemaStartMask(const SortedVocabulary& vocabulary, const JsonSchemaAcceptor& start, int vocab_size,
                        std::vector<uint8_t>& allowed) {
  std::vector<uint8_t> begins(vocab_size, 0);
  vocabulary.Walk(FirstByteOf{start}, begins);
  allowed.assign(vocab_size, 0);
  int count = vocabulary.Walk(start, allowed);  // the value begun as the schema allows
  for (int id = 0; id < vocab_size; ++id) {
    if (begins[id] == 0 && allowed[id] == 0) {  // cannot begin it: free
      allowed[id] = 1;
      ++count;
    }
  }
  return count;
}

}  // namespace attnserve
