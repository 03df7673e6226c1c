// JSON mode's cost per token: JsonTokenMask::Fill (which tokens may come
// next) plus feeding the chosen token, at each step of a fixed JSON object
// tokenized over a realistic vocabulary (bench/sampling/json_vocab.py).
// Also, in the same run, the plain definition: every token's bytes fed to a
// copy of the state. One JSON line per implementation; the peer is
// xgrammar_peer.py (bench/sampling/run.sh). "first_us_per_step" is the
// first pass, with the mask cache empty (a model's first JSON request);
// "us_per_step" the median of the passes after it. Then JSON schema mode,
// likewise (its masks cached by state for the schema, as the engine does).
//
// Usage: json_mask_bench DIR [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/container/flat_hash_map.h"
#include "engine/sampling/json_acceptor.h"
#include "engine/sampling/json_schema.h"
#include "engine/sampling/json_token_mask.h"
#include "engine/tokenizers/tokenizer.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using Clock = std::chrono::steady_clock;

// A vocabulary of raw byte strings; id 0 (byte 0x00) stands in for EOS.
class BytesTokenizer : public Tokenizer {
 public:
  explicit BytesTokenizer(std::vector<std::string> tokens) : tokens_(std::move(tokens)) { special_.eos = 0; }
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view, const TokenizeOptions&) const override {
    return absl::UnimplementedError("not needed");
  }
  std::string TokenBytes(int32_t id, int32_t) const override { return id == 0 ? "" : tokens_[id]; }
  std::string IdToPiece(int32_t id) const override { return tokens_[id]; }
  std::optional<int32_t> PieceToId(std::string_view) const override { return std::nullopt; }
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  bool IsControl(int32_t id) const override { return id == 0; }
  const SpecialTokens& special() const override { return special_; }
  std::string_view kind() const override { return "bytes"; }

 private:
  std::vector<std::string> tokens_;
  SpecialTokens special_;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: json_mask_bench DIR [--rounds N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int rounds = 5;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[++i]);
  }
  std::vector<std::string> tokens;
  std::ifstream vocab_in(dir + "/vocab.hex");
  for (std::string line; std::getline(vocab_in, line);) {
    std::string bytes;
    if (!absl::HexStringToBytes(line, &bytes)) {
      std::fprintf(stderr, "%s/vocab.hex: not hex: %s\n", dir.c_str(), line.c_str());
      return 1;
    }
    tokens.push_back(std::move(bytes));
  }
  std::ifstream doc_in(dir + "/doc.json");
  const nlohmann::json doc = nlohmann::json::parse(doc_in);
  const std::vector<int32_t> ids = doc.at("ids").get<std::vector<int32_t>>();
  const std::string doc_name = doc.value("name", "story");
  const BytesTokenizer tok(std::move(tokens));

  const auto t_build = Clock::now();
  const JsonTokenMask mask(std::make_shared<const SortedVocabulary>(tok));
  const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_build).count();
  const std::vector<int32_t> end_ids = {0};
  std::vector<uint8_t> allowed(tok.vocab_size());

  // One pass over the document: mask, check the next token is allowed, feed it.
  // Counting the allowed tokens is not part of the work: only when asked.
  auto pass = [&](bool definition, bool count) {
    JsonAcceptor state;
    size_t allowed_total = 0;
    for (size_t step = 0; step <= ids.size(); ++step) {
      if (definition) {
        for (int32_t id = 0; id < tok.vocab_size(); ++id) {
          if (state.complete()) {
            allowed[id] = id == 0;
            continue;
          }
          JsonAcceptor copy = state;
          const std::string& b = tok.IdToPiece(id);
          allowed[id] = id != 0 && copy.Feed(b);
        }
      } else {
        mask.Fill(state, end_ids, allowed);
      }
      if (count) allowed_total += std::count(allowed.begin(), allowed.end(), 1);
      if (step == ids.size()) break;
      if (!allowed[ids[step]]) {
        std::fprintf(stderr, "step %zu: token %d not allowed\n", step, ids[step]);
        std::exit(1);
      }
      state.Feed(tok.TokenBytes(ids[step], -1));
    }
    if (!state.complete() || !allowed[0]) {
      std::fprintf(stderr, "the document did not end complete\n");
      std::exit(1);
    }
    return allowed_total;
  };
  for (bool definition : {false, true}) {
    std::vector<double> per_step;
    double first = 0.0;
    for (int r = 0; r <= rounds; ++r) {
      const auto t0 = Clock::now();
      pass(definition, false);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                        static_cast<double>(ids.size() + 1);
      if (r == 0) {
        first = us;
      } else {
        per_step.push_back(us);
      }
    }
    std::printf(
        "{\"bench\":\"json_mask\",\"impl\":\"%s\",\"vocab\":%d,\"steps\":%zu,\"us_per_step\":%.2f,"
        "\"first_us_per_step\":%.2f,\"setup_ms\":%.1f,\"mean_allowed\":%.0f,\"mode\":\"json_object\","
        "\"doc\":\"%s\"}\n",
        definition ? "attnserve each token alone" : "attnserve", tok.vocab_size(), ids.size() + 1,
        Median(per_step), first, definition ? 0.0 : build_ms,
        static_cast<double>(pass(definition, true)) / (ids.size() + 1), doc_name.c_str());
  }
  // JSON schema mode as the engine runs it: the schema compiled once, its
  // masks kept by state across requests (DecoderEngine's schema cache), so
  // the first pass is a new schema's first request.
  const std::string schema_text = doc.at("schema").get<std::string>();
  auto vocabulary = std::make_shared<const SortedVocabulary>(tok);
  const auto t_compile = Clock::now();
  absl::StatusOr<std::shared_ptr<const CompiledJsonSchema>> schema = CompileJsonSchema(schema_text);
  if (!schema.ok()) {
    std::fprintf(stderr, "schema: %s\n", std::string(schema.status().message()).c_str());
    return 1;
  }
  const double setup_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_compile).count();
  // Keyed as the engine keys its cache (the horizon: the longest token, so
  // a long maxLength's far lengths share a key, as do a bounded number's
  // values its bounds no longer restrict), and, in the same run, with a key
  // per length and per value as before that (the horizon unbounded).
  for (const int horizon : {vocabulary->longest_token_bytes(), std::numeric_limits<int>::max()}) {
    absl::flat_hash_map<JsonSchemaAcceptor::Key, std::vector<uint8_t>> cache;
    std::vector<double> per_step;
    for (int r = 0; r <= rounds; ++r) {
      const auto t1 = Clock::now();
      JsonSchemaAcceptor state(schema->get());
      for (size_t step = 0; step <= ids.size(); ++step) {
        if (state.complete()) {
          allowed.assign(tok.vocab_size(), 0);
          allowed[0] = 1;
        } else if (auto it = cache.find(state.StateKey(horizon)); it != cache.end()) {
          allowed = it->second;
        } else {
          allowed.assign(tok.vocab_size(), 0);
          vocabulary->Walk(state, allowed);
          cache[state.StateKey(horizon)] = allowed;
        }
        if (step == ids.size()) break;
        if (!allowed[ids[step]]) {
          std::fprintf(stderr, "schema mode, step %zu: token %d not allowed\n", step, ids[step]);
          return 1;
        }
        for (char c : tok.TokenBytes(ids[step], -1)) state.Feed(static_cast<uint8_t>(c));
      }
      if (!state.complete() || !allowed[0]) {
        std::fprintf(stderr, "schema mode: the document did not end complete\n");
        return 1;
      }
      per_step.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t1).count() /
                         static_cast<double>(ids.size() + 1));
    }
    const double first = per_step.front();
    per_step.erase(per_step.begin());
    const bool engine_keys = horizon != std::numeric_limits<int>::max();
    std::printf(
        "{\"bench\":\"json_mask\",\"impl\":\"%s\",\"vocab\":%d,\"steps\":%zu,\"us_per_step\":%.2f,"
        "\"first_us_per_step\":%.2f,\"setup_ms\":%.3f,\"masks\":%zu,\"mode\":\"json_schema\",\"doc\":\"%s\"}\n",
        engine_keys ? "attnserve" : "attnserve, a key per length and value", tok.vocab_size(), ids.size() + 1,
        Median(per_step), first, setup_ms, cache.size(), doc_name.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) { return attnserve::Main(argc, argv); }
