// llama.cpp's block quantisations against gguf-py's numpy dequantisers
// (tests/golden/gguf_quants/blocks.json, tools/golden/ggml_dequant_blocks.py):
// random blocks, so every bit of every field is exercised, read directly
// and through a GGUF file's LoadTensor into f32 and bf16 storage.
#include "engine/formats/ggml_dequantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/half.h"
#include "engine/formats/gguf_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/gguf_test_writer.h"

namespace attnserve {
namespace {

using ::attnserve::testing::GgufTestWriter;

struct QuantCase {
  std::string name;
  GgmlType type;
  int64_t block_size = 0, block_bytes = 0;
  std::vector<std::byte> blocks;
  std::vector<float> values;
};

std::vector<QuantCase> ReadCases() {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/gguf_quants/blocks.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  std::vector<QuantCase> cases;
  if (doc.is_discarded()) return cases;
  for (const auto& t : doc["types"]) {
    QuantCase c;
    c.name = t["name"].get<std::string>();
    c.type = static_cast<GgmlType>(t["id"].get<uint32_t>());
    c.block_size = t["block_size"].get<int64_t>();
    c.block_bytes = t["block_bytes"].get<int64_t>();
    const std::string hex = t["hex"].get<std::string>();
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      c.blocks.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    c.values = t["values"].get<std::vector<float>>();
    cases.push_back(std::move(c));
  }
  return cases;
}

// gguf-py computes in numpy f32 in its own order; ours may fuse a
// multiply-add, so equal to a rounding of the largest term.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int wrong = 0;
  for (size_t i = 0; i < want.size() && wrong < 5; ++i) {
    const float tol = 2e-6f * std::max(1.0f, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << ", gguf-py " << want[i];
      ++wrong;
    }
  }
}

TEST(GgmlDequantizeTest, EveryTypeMatchesGgufPy) {
  const std::vector<QuantCase> cases = ReadCases();
  ASSERT_EQ(cases.size(), 12u) << "tests/golden/gguf_quants/blocks.json";
  for (const QuantCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(CanDequantizeGgml(c.type));
    EXPECT_STREQ(GgmlTypeName(c.type), c.name.c_str());
    const auto traits = GgmlTraits(static_cast<uint32_t>(c.type));
    ASSERT_TRUE(traits.has_value());
    EXPECT_EQ(traits->block_size, c.block_size);
    EXPECT_EQ(traits->block_bytes, c.block_bytes);
    ASSERT_EQ(static_cast<int64_t>(c.blocks.size()), c.block_bytes * static_cast<int64_t>(c.values.size()) /
                                                         c.block_size);
    std::vector<float> got(c.values.size(), std::nanf(""));
    DequantizeGgml(c.type, c.blocks.data(), got.data(), static_cast<int64_t>(got.size()));
    ExpectClose(got, c.values, c.name);
  }
}

TEST(GgmlDequantizeTest, UnquantisedAndIntermediateTypesAreNotDequantised) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_1, GgmlType::kQ8_K,
                     GgmlType::kI8, GgmlType::kF64}) {
    EXPECT_FALSE(CanDequantizeGgml(t)) << GgmlTypeName(t);
  }
}

// Through a GGUF file: a 2-D tensor of the golden blocks repeated past the
// loader's 2^20-value slice and the parallel threshold, loaded into f32 and
// into bf16 storage.
TEST(GgmlDequantizeTest, LoadTensorExpandsEveryTypeIntoF32AndBf16) {
  for (const QuantCase& c : ReadCases()) {
    SCOPED_TRACE(c.name);
    const int64_t golden_blocks = static_cast<int64_t>(c.values.size()) / c.block_size;
    const int64_t repeats = ((int64_t{1} << 20) + 4096) / (golden_blocks * c.block_size) + 1;  // > 2^20 values
    std::vector<std::byte> data;
    std::vector<float> want;
    for (int64_t r = 0; r < repeats; ++r) {
      data.insert(data.end(), c.blocks.begin(), c.blocks.end());
      want.insert(want.end(), c.values.begin(), c.values.end());
    }
    const int64_t cols = c.block_size * golden_blocks;  // one row = the golden blocks
    GgufTestWriter w;
    w.Tensor("w", {cols, repeats}, static_cast<uint32_t>(c.type), data);
    const std::vector<std::byte> image = w.Build();
    auto file = GgufFile::Parse(absl::Span<const std::byte>(image.data(), image.size()), c.name + ".gguf");
    ASSERT_TRUE(file.ok()) << file.status();
    auto f32 = (*file)->LoadTensor("w", DType::kF32);
    ASSERT_TRUE(f32.ok()) << f32.status();
    ASSERT_EQ(f32->shape(), (std::vector<int64_t>{repeats, cols}));
    ExpectClose(std::vector<float>(f32->f32(), f32->f32() + f32->numel()), want, c.name + " f32");
    auto bf16 = (*file)->LoadTensor("w", DType::kBF16);
    ASSERT_TRUE(bf16.ok()) << bf16.status();
    const auto* h = static_cast<const uint16_t*>(bf16->raw());
    int wrong = 0;
    for (int64_t i = 0; i < bf16->numel() && wrong < 5; ++i) {
      // bf16 of our f32, which is gguf-py's to a rounding: one bf16 step.
      const float got = Bf16ToFloat(h[i]);
      if (!(std::fabs(got - want[i]) <= std::fabs(want[i]) / 128.0f)) {
        ADD_FAILURE() << c.name << " bf16 element " << i << ": " << got << ", gguf-py " << want[i];
        ++wrong;
      }
    }
  }
}

}  // namespace
}  // namespace attnserve
