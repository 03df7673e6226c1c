// Encoder tokenizer throughput: every text of a JSON list tokenized with the
// model's special tokens, one after another on one thread, repeated for at
// least --min-seconds; prints one JSON line (texts, tokens, a hash of every
// id, seconds per pass, tokens per second). bench/tokenizers/run.sh runs
// Hugging Face tokenizers on the same texts beside it and checks the hashes
// agree (peer.py hashes the same way).
//
// Usage: tokenize_bench TOKENIZER_JSON TEXTS_JSON [--min-seconds S] [--label L]
//        tokenize_bench TOKENIZER_JSON TEXTS_JSON --ids   (each text's ids, one
//        JSON list a line, to find where a hash mismatch comes from)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/formats/json_util.h"
#include "engine/tokenizers/encoder_tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXTS_JSON [--min-seconds S] [--label L]\n", argv[0]);
    return 2;
  }
  double min_seconds = 2.0;
  std::string label = "texts";
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--min-seconds") min_seconds = std::atof(argv[i + 1]);
    if (flag == "--label") label = argv[i + 1];
  }
  auto tokenizer = attnserve::LoadEncoderTokenizer(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  auto texts_json = attnserve::ReadJsonFile(argv[2]);
  if (!texts_json.ok() || !texts_json->is_array()) {
    std::fprintf(stderr, "%s: not a JSON list of texts\n", argv[2]);
    return 1;
  }
  const std::vector<std::string> texts = texts_json->get<std::vector<std::string>>();
  if (argc == 4 && std::string(argv[3]) == "--ids") {
    for (const std::string& text : texts) {
      auto enc = (*tokenizer)->Encode(text, /*add_special_tokens=*/true);
      if (!enc.ok()) return 1;
      std::string line = "[";
      for (size_t i = 0; i < enc->ids.size(); ++i) line += (i ? ", " : "") + std::to_string(enc->ids[i]);
      std::printf("%s]\n", line.c_str());
    }
    return 0;
  }
  int64_t tokens = 0;
  uint64_t ids_hash = 0;
  int passes = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    tokens = 0;
    ids_hash = 1469598103934665603ull;  // FNV-1a over each id's value
    for (const std::string& text : texts) {
      auto enc = (*tokenizer)->Encode(text, /*add_special_tokens=*/true);
      if (!enc.ok()) {
        std::fprintf(stderr, "%s\n", enc.status().ToString().c_str());
        return 1;
      }
      tokens += static_cast<int64_t>(enc->ids.size());
      for (int32_t id : enc->ids) ids_hash = (ids_hash ^ static_cast<uint32_t>(id)) * 1099511628211ull;
    }
    ++passes;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < min_seconds);
  std::printf(
      "{\"engine\": \"attnserve\", \"tokenizer\": \"%s\", \"vocab\": %d, \"label\": \"%s\", \"texts\": %zu, "
      "\"tokens\": %lld, \"ids_hash\": \"%016llx\", \"seconds_per_pass\": %.6f, \"tokens_per_second\": %.1f}\n",
      std::string((*tokenizer)->kind()).c_str(), (*tokenizer)->vocab_size(), label.c_str(), texts.size(),
      static_cast<long long>(tokens), static_cast<unsigned long long>(ids_hash),
      elapsed / passes, static_cast<double>(tokens) * passes / elapsed);
  return 0;
}
