#include "engine/formats/gguf_file.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/half.h"
#include "engine/core/q8_0.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fuzz/gguf_test_writer.h"

namespace attnserve {
namespace {

using ::attnserve::testing::GgufTestWriter;
using ::testing::HasSubstr;

const std::string kStories = std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kTiny = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/llama_tiny/";

absl::Span<const std::byte> Span(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

std::vector<float> Iota(int n, float scale) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i - n / 2);
  return v;
}

// A small valid image with every metadata value type and two tensors.
std::vector<std::byte> SmallImage() {
  GgufTestWriter w;
  w.KvStr("general.architecture", "llama");
  w.KvU8("t.u8", 200);
  w.KvI8("t.i8", -5);
  w.KvU16("t.u16", 60000);
  w.KvI16("t.i16", -30000);
  w.KvU32("t.u32", 4000000000u);
  w.KvI32("t.i32", -7);
  w.KvF32("t.f32", 1.5f);
  w.KvBool("t.bool", true);
  w.KvU64("t.u64", 1ull << 40);
  w.KvI64("t.i64", -(1ll << 40));
  w.KvF64("t.f64", 0.25);
  w.KvStrArray("t.strs", {"a", "", "▁b"});
  w.KvF32Array("t.floats", {0.5f, -1.0f});
  w.KvI32Array("t.ints", {1, -2, 3});
  w.TensorF32("a", {4, 2}, Iota(8, 0.5f));
  w.TensorF32("b", {3}, {1, 2, 3});
  return w.Build();
}

TEST(GgufTest, ParsesEveryValueType) {
  std::vector<std::byte> img = SmallImage();
  auto f = GgufFile::Parse(Span(img), "small");
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("t.u8"), 200);
  EXPECT_EQ(*g.GetInt("t.i8"), -5);
  EXPECT_EQ(*g.GetInt("t.u16"), 60000);
  EXPECT_EQ(*g.GetInt("t.i16"), -30000);
  EXPECT_EQ(*g.GetInt("t.u32"), 4000000000ll);
  EXPECT_EQ(*g.GetInt("t.i32"), -7);
  EXPECT_EQ(*g.GetFloatOr("t.f32", 0), 1.5);
  EXPECT_TRUE(*g.GetBoolOr("t.bool", false));
  EXPECT_EQ(*g.GetInt("t.u64"), 1ll << 40);
  EXPECT_EQ(*g.GetInt("t.i64"), -(1ll << 40));
  EXPECT_EQ(*g.GetFloatOr("t.f64", 0), 0.25);
  EXPECT_THAT(**g.GetStringArray("t.strs"), ::testing::ElementsAre("a", "", "▁b"));
  EXPECT_THAT(**g.GetFloatArray("t.floats"), ::testing::ElementsAre(0.5, -1.0));
  EXPECT_THAT(**g.GetIntArray("t.ints"), ::testing::ElementsAre(1, -2, 3));
  // Wrong types and missing keys are errors naming the key.
  EXPECT_THAT(std::string(g.GetInt("t.f32").status().message()), HasSubstr("t.f32"));
  EXPECT_EQ(g.GetString("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*g.GetIntOr("nope", 9), 9);
  EXPECT_FALSE(g.GetStringArray("t.ints").ok());
  ASSERT_EQ(g.tensors().size(), 2u);
  const GgufTensorInfo* a = g.FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 4}));
  auto t = g.LoadTensor("a", DType::kF32);
  ASSERT_TRUE(t.ok());
  std::vector<float> want = Iota(8, 0.5f);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t->f32()[i], want[i]);
  EXPECT_FALSE(g.LoadTensorWithShape("a", {4, 2}, DType::kF32).ok());
}

TEST(GgufTest, CustomAlignmentAndHalfTypes) {
  GgufTestWriter w;
  w.set_alignment(64);
  w.KvU32("general.alignment", 64);
  std::vector<float> vals = Iota(64, 0.125f);
  std::vector<std::byte> f16(128), bf16(128);
  for (int i = 0; i < 64; ++i) {
    uint16_t h = FloatToF16(vals[i]), b = FloatToBf16(vals[i]);
    std::memcpy(f16.data() + 2 * i, &h, 2);
    std::memcpy(bf16.data() + 2 * i, &b, 2);
  }
  w.TensorF32("pad", {3}, {1, 2, 3});
  w.Tensor("h", {32, 2}, 1, f16);
  w.Tensor("b", {32, 2}, 30, bf16);
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "aligned");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->FindTensor("h")->offset % 64, 0u);
  for (const char* name : {"h", "b"}) {
    auto t = (*f)->LoadTensor(name, DType::kF32);
    ASSERT_TRUE(t.ok());
    for (int i = 0; i < 64; ++i) EXPECT_EQ(t->f32()[i], vals[i]) << name << i;  // exactly representable
    auto tb = (*f)->LoadTensor(name, DType::kBF16);
    ASSERT_TRUE(tb.ok());
    for (int i = 0; i < 64; ++i) EXPECT_EQ(Bf16ToFloat(tb->u16()[i]), vals[i]);
  }
}

// Found by ./dev fuzz (libFuzzer + UBSan): a tensor with no elements reached
// memcpy with a null destination. It must load as an empty tensor of its
// shape, in every storage type, and never touch memory.
TEST(GgufTest, ZeroElementTensorLoadsEmpty) {
  GgufTestWriter w;
  w.TensorF32("empty", {0, 4}, {});
  w.Tensor("empty_f16", {4, 0}, 1, {});
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "empty");
  ASSERT_TRUE(f.ok()) << f.status();
  for (const char* name : {"empty", "empty_f16"}) {
    for (DType storage : {DType::kF32, DType::kBF16}) {
      auto t = (*f)->LoadTensor(name, storage);
      ASSERT_TRUE(t.ok()) << name << ": " << t.status();
      EXPECT_EQ(t->numel(), 0) << name;
    }
  }
}

TEST(GgufTest, Q8_0Dequantisation) {
  // One block: scale 0.5 (f16), quants -128..127 pattern.
  std::vector<std::byte> blk(34);
  uint16_t d = FloatToF16(0.5f);
  std::memcpy(blk.data(), &d, 2);
  for (int k = 0; k < 32; ++k) blk[2 + k] = static_cast<std::byte>(static_cast<int8_t>(k * 8 - 128));
  GgufTestWriter w;
  w.Tensor("q", {32}, 8, blk);
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "q8");
  ASSERT_TRUE(f.ok()) << f.status();
  auto t = (*f)->LoadTensor("q", DType::kF32);
  ASSERT_TRUE(t.ok());
  for (int k = 0; k < 32; ++k) EXPECT_EQ(t->f32()[k], 0.5f * static_cast<float>(k * 8 - 128));
}

// Held as q8_0, a Q8_0 tensor is the file's blocks as written, even a block
// another quantiser wrote with codes short of ±127 (requantising its values
// would stretch them to ±127 and change every code).
TEST(GgufTest, Q8_0StorageKeepsTheFilesBlocks) {
  std::vector<std::byte> blk(34);
  const uint16_t d = FloatToF16(0.25f);
  std::memcpy(blk.data(), &d, 2);
  for (int k = 0; k < 32; ++k) blk[2 + k] = static_cast<std::byte>(static_cast<int8_t>(3 * k - 50));  // -50..43
  GgufTestWriter w;
  w.Tensor("q", {32}, 8, blk);
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "q8");
  ASSERT_TRUE(f.ok()) << f.status();
  auto t = (*f)->LoadTensor("q", DType::kQ8_0);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kQ8_0);
  ASSERT_EQ(t->bytes(), 34u);
  EXPECT_EQ(std::memcmp(t->raw(), blk.data(), 34), 0);
}

// Another block type held as q8_0 is expanded a slice (2^20 values) at a
// time and each slice quantised in its place: a Q4_0 tensor of more than
// one slice gives the blocks of its whole f32 expansion.
TEST(GgufTest, Q8_0StorageQuantisesALargeTensorSliceBySlice) {
  const int64_t rows = 16386, cols = 64;  // 1,048,704 values: two slices
  std::vector<std::byte> data(static_cast<size_t>(rows * cols / 32 * 18));
  std::mt19937 rng(7);
  for (size_t b = 0; b < data.size(); b += 18) {
    const uint16_t scale = FloatToF16(0.01f * static_cast<float>(1 + rng() % 50));
    std::memcpy(data.data() + b, &scale, 2);
    for (int i = 2; i < 18; ++i) data[b + i] = static_cast<std::byte>(rng() & 0xff);
  }
  GgufTestWriter w;
  w.Tensor("w", {cols, rows}, 2, data);  // Q4_0
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "q4_0");
  ASSERT_TRUE(f.ok()) << f.status();
  auto values = (*f)->LoadTensor("w", DType::kF32);
  auto held = (*f)->LoadTensor("w", DType::kQ8_0);
  ASSERT_TRUE(values.ok() && held.ok());
  std::vector<std::byte> want(held->bytes());
  QuantizeRowQ8_0(values->f32(), values->numel(), want.data());
  EXPECT_EQ(std::memcmp(held->raw(), want.data(), want.size()), 0);
}

// A mixture's stacked experts ([experts, rows, cols]) read one expert at a
// time: each slab is the same values as that part of the whole tensor, for
// a block type (Q4_0: the slab starts a whole number of blocks in), for a
// Q8_0 slab held as its file blocks, and for f32; a wrong index or shape is
// refused naming the tensor.
TEST(GgufTest, SlabsOfAStackedTensor) {
  const int64_t experts = 3, rows = 2, cols = 64;
  std::vector<std::byte> q4(static_cast<size_t>(experts * rows * cols / 32 * 18));
  std::vector<std::byte> q8(static_cast<size_t>(experts * rows * cols / 32 * 34));
  std::mt19937 rng(11);
  for (std::vector<std::byte>* data : {&q4, &q8}) {
    const size_t block = data == &q4 ? 18 : 34;
    for (size_t b = 0; b < data->size(); b += block) {
      const uint16_t scale = FloatToF16(0.01f * static_cast<float>(1 + rng() % 50));
      std::memcpy(data->data() + b, &scale, 2);
      for (size_t i = 2; i < block; ++i) (*data)[b + i] = static_cast<std::byte>(rng() & 0xff);
    }
  }
  std::vector<float> f32(static_cast<size_t>(experts * rows * cols));
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i);
  GgufTestWriter w;
  w.Tensor("q4", {cols, rows, experts}, 2, q4);
  w.Tensor("q8", {cols, rows, experts}, 8, q8);
  w.TensorF32("f32", {cols, rows, experts}, f32);
  std::vector<std::byte> img = w.Build();
  auto f = GgufFile::Parse(Span(img), "experts");
  ASSERT_TRUE(f.ok()) << f.status();
  const std::vector<int64_t> shape = {experts, rows, cols};
  for (const char* name : {"q4", "q8", "f32"}) {
    auto whole = (*f)->LoadTensor(name, DType::kF32);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (int64_t e = 0; e < experts; ++e) {
      auto slab = (*f)->LoadTensorSlab(name, shape, e, DType::kF32);
      ASSERT_TRUE(slab.ok()) << slab.status();
      EXPECT_EQ(slab->shape(), (std::vector<int64_t>{rows, cols}));
      EXPECT_EQ(std::memcmp(slab->f32(), whole->f32() + e * rows * cols, sizeof(float) * rows * cols), 0)
          << name << " expert " << e;
    }
  }
  auto held = (*f)->LoadTensorSlab("q8", shape, 2, DType::kQ8_0);
  ASSERT_TRUE(held.ok()) << held.status();
  const size_t slab_bytes = static_cast<size_t>(rows * cols / 32 * 34);
  ASSERT_EQ(held->bytes(), slab_bytes);
  EXPECT_EQ(std::memcmp(held->raw(), q8.data() + 2 * slab_bytes, slab_bytes), 0);
  EXPECT_THAT(std::string((*f)->LoadTensorSlab("q4", shape, 3, DType::kF32).status().message()),
              HasSubstr("tensor 'q4': slab 3 of 3"));
  EXPECT_THAT(std::string((*f)->LoadTensorSlab("q4", {experts, cols, rows}, 0, DType::kF32).status().message()),
              HasSubstr("tensor 'q4' has shape [3, 2, 64], expected [3, 64, 2]"));
}

TEST(GgufTest, Stories260K) {
  auto f = GgufFile::Open(kStories);
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*g.GetInt("llama.context_length"), 128);
  EXPECT_EQ((*g.GetStringArray("tokenizer.ggml.tokens"))->size(), 512u);
  EXPECT_EQ(g.tensors().size(), 48u);
  auto emb = g.LoadTensorWithShape("token_embd.weight", {512, 64}, DType::kF32);
  ASSERT_TRUE(emb.ok()) << emb.status();
  auto out = g.LoadTensorWithShape("output.weight", {512, 64}, DType::kF32);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(std::memcmp(emb->raw(), out->raw(), emb->bytes()), 0);  // README: output is a copy
  EXPECT_EQ(g.FindTensor("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(g.FindTensor("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{64, 172}));
}

TEST(GgufTest, F16AndQ8VariantsMatchF32) {
  auto f32 = GgufFile::Open(kTiny + "model.gguf");
  auto f16 = GgufFile::Open(kTiny + "model-f16.gguf");
  auto q8 = GgufFile::Open(kTiny + "model-q8_0.gguf");
  ASSERT_TRUE(f32.ok() && f16.ok() && q8.ok()) << f32.status() << f16.status() << q8.status();
  EXPECT_EQ((*f16)->FindTensor("blk.0.attn_q.weight")->type, GgmlType::kF16);
  EXPECT_EQ((*q8)->FindTensor("blk.0.attn_q.weight")->type, GgmlType::kQ8_0);
  for (const GgufTensorInfo& info : (*f32)->tensors()) {
    auto a = (*f32)->LoadTensor(info.name, DType::kF32);
    auto b = (*f16)->LoadTensor(info.name, DType::kF32);
    auto c = (*q8)->LoadTensor(info.name, DType::kF32);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << info.name;
    ASSERT_EQ(a->shape(), c->shape());
    float amax = 0;
    for (int64_t i = 0; i < a->numel(); ++i) amax = std::max(amax, std::fabs(a->f32()[i]));
    for (int64_t i = 0; i < a->numel(); ++i) {
      ASSERT_NEAR(b->f32()[i], a->f32()[i], 1e-3f * std::fabs(a->f32()[i]) + 1e-7f) << info.name;
      // Q8_0: per-block scale amax/127, so the error is at most half a step.
      ASSERT_NEAR(c->f32()[i], a->f32()[i], amax / 127.0f) << info.name;
    }
  }
}

// ---- malformed files: each fails with a reason, never a crash ----

absl::Status ParseStatus(const std::vector<std::byte>& img) { return GgufFile::Parse(Span(img), "bad.gguf").status(); }

void ExpectInvalid(const std::vector<std::byte>& img, const std::string& reason) {
  absl::Status s = ParseStatus(img);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad.gguf"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(reason));
}

TEST(GgufMalformedTest, EveryTruncationFails) {
  std::vector<std::byte> img = SmallImage();
  for (size_t n = 0; n < img.size(); ++n) {
    std::vector<std::byte> cut(img.begin(), img.begin() + n);
    EXPECT_FALSE(ParseStatus(cut).ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufMalformedTest, HeaderErrors) {
  std::vector<std::byte> img = SmallImage();
  auto bad_magic = img;
  bad_magic[0] = std::byte{'X'};
  ExpectInvalid(bad_magic, "bad magic");
  GgufTestWriter v1;
  v1.set_version(1);
  ExpectInvalid(v1.Build(), "version 1");
  // Counts far beyond the file size.
  std::vector<std::byte> b;
  GgufTestWriter::PutU32(b, 0x46554747u);
  GgufTestWriter::PutU32(b, 3);
  GgufTestWriter::PutU64(b, 0);
  GgufTestWriter::PutU64(b, 1ull << 60);
  ExpectInvalid(b, "metadata count");
  b.clear();
  GgufTestWriter::PutU32(b, 0x46554747u);
  GgufTestWriter::PutU32(b, 3);
  GgufTestWriter::PutU64(b, ~0ull);
  GgufTestWriter::PutU64(b, 0);
  ExpectInvalid(b, "tensor count");
}

std::vector<std::byte> WithRawKv(const std::vector<std::byte>& raw) {
  GgufTestWriter w;
  w.KvRaw(raw);
  return w.Build();
}

TEST(GgufMalformedTest, MetadataErrors) {
  std::vector<std::byte> r;
  GgufTestWriter::PutU64(r, 1ull << 40);  // key length
  r.resize(r.size() + 16);
  ExpectInvalid(WithRawKv(r), "string length");
  r.clear();
  GgufTestWriter::PutStr(r, "k");
  GgufTestWriter::PutU32(r, 13);  // unknown type
  ExpectInvalid(WithRawKv(r), "unknown value type 13");
  r.clear();
  GgufTestWriter::PutStr(r, "k");
  GgufTestWriter::PutU32(r, 9);
  GgufTestWriter::PutU32(r, 9);  // array of arrays
  GgufTestWriter::PutU64(r, 1);
  ExpectInvalid(WithRawKv(r), "nested arrays");
  r.clear();
  GgufTestWriter::PutStr(r, "k");
  GgufTestWriter::PutU32(r, 9);
  GgufTestWriter::PutU32(r, 6);
  GgufTestWriter::PutU64(r, 1ull << 61);  // huge array
  ExpectInvalid(WithRawKv(r), "cannot fit");
  r.clear();
  GgufTestWriter::PutStr(r, "k");
  GgufTestWriter::PutU32(r, 7);
  r.push_back(std::byte{2});  // bool 2
  ExpectInvalid(WithRawKv(r), "bool value 2");

  GgufTestWriter dup;
  dup.KvU32("a", 1);
  dup.KvU32("a", 2);
  ExpectInvalid(dup.Build(), "duplicate metadata key 'a'");
  GgufTestWriter align;
  align.KvU32("general.alignment", 48);
  ExpectInvalid(align.Build(), "not a power of two");
  GgufTestWriter align_type;
  align_type.KvU64("general.alignment", 32);
  ExpectInvalid(align_type.Build(), "general.alignment must be uint32");
}

TEST(GgufMalformedTest, TensorErrors) {
  std::vector<std::byte> four(16);
  {
    GgufTestWriter w;
    w.Tensor("t", {}, 0, {});
    ExpectInvalid(w.Build(), "0 dimensions");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {1, 1, 1, 1, 1}, 0, four);
    ExpectInvalid(w.Build(), "5 dimensions");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {-4}, 0, four);
    ExpectInvalid(w.Build(), "negative dimension");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {1ll << 40, 1ll << 40}, 0, four);
    ExpectInvalid(w.Build(), "overflows");
  }
  {
    // Found by ./dev fuzz: zero elements, but the other dimensions' product
    // overflowed Tensor's element count (multiplied in the other order).
    GgufTestWriter w;
    w.Tensor("t", {0, 1ll << 40, 1ll << 40}, 0, {});
    ExpectInvalid(w.Build(), "overflows");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {4}, 77, four);
    ExpectInvalid(w.Build(), "unknown ggml type 77");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {16}, 8, four);
    ExpectInvalid(w.Build(), "block size 32");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {4}, 0, four, /*offset=*/4);
    ExpectInvalid(w.Build(), "not a multiple of the alignment");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {4}, 0, four);
    w.Tensor("u", {1000}, 0, four);
    ExpectInvalid(w.Build(), "runs past the end");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {8}, 0, std::vector<std::byte>(32));
    w.Tensor("u", {8}, 0, std::vector<std::byte>(32), /*offset=*/0);
    ExpectInvalid(w.Build(), "overlap");
  }
  {
    GgufTestWriter w;
    w.Tensor("t", {4}, 0, four);
    w.Tensor("t", {4}, 0, four);
    ExpectInvalid(w.Build(), "duplicate tensor name 't'");
  }
  {
    // Parses, but a type this reader does not dequantise (Q8_1, llama.cpp's
    // intermediate format) is refused at load, naming the file, the tensor
    // and the type.
    GgufTestWriter w;
    w.Tensor("t", {32}, 9, std::vector<std::byte>(36));
    std::vector<std::byte> img = w.Build();
    auto f = GgufFile::Parse(Span(img), "q8_1.gguf");
    ASSERT_TRUE(f.ok()) << f.status();
    absl::Status s = (*f)->LoadTensor("t", DType::kF32).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(s.message()), HasSubstr("q8_1.gguf: tensor 't' has ggml type Q8_1"));
  }
}

TEST(GgufMalformedTest, MissingFileNamesThePath) {
  absl::Status s = GgufFile::Open("/nonexistent/x.gguf").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/x.gguf"));
}

}  // namespace
}  // namespace attnserve
