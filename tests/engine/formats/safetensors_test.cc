#include "engine/formats/safetensors.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/formats/safetensors_test_util.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;
using testing_util::SafetensorsImage;
using testing_util::WriteFile;

std::string FloatBytes(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s.append(reinterpret_cast<const char*>(&v), 4);
  return s;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("attnserve_st_", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsTest, ReadsTensorsAndConverts) {
  uint16_t bf[2] = {FloatToBf16(1.5f), FloatToBf16(-2.0f)};
  std::string data = FloatBytes({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) + std::string(reinterpret_cast<char*>(bf), 4) +
                     std::string(16, '\0');
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},"ids":{"dtype":"I64","shape":[2],"data_offsets":[28,44]}})";
  WriteFile(Path("m.safetensors"), SafetensorsImage(header, data));
  auto archive = SafetensorsArchive::OpenFile(Path("m.safetensors"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ((*archive)->size(), 3u);
  auto a = (*archive)->LoadWithShape("a", {2, 3}, DType::kF32);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->f32()[5], 6.0f);
  auto a16 = (*archive)->Load("a", DType::kBF16);
  ASSERT_TRUE(a16.ok());
  EXPECT_EQ(Bf16ToFloat(a16->u16()[2]), 3.0f);
  auto b = (*archive)->Load("b", DType::kF32);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->f32()[0], 1.5f);
  EXPECT_EQ(b->f32()[1], -2.0f);
  // An I64 tensor is indexed (models carry position_ids buffers) but cannot be loaded as weights.
  ASSERT_NE((*archive)->Find("ids"), nullptr);
  EXPECT_THAT((*archive)->Load("ids", DType::kF32).status().message(), HasSubstr("I64"));
  auto shape = (*archive)->LoadWithShape("a", {3, 2}, DType::kF32);
  EXPECT_THAT(shape.status().message(), HasSubstr("[3, 2]"));
}

struct MalformedCase {
  const char* name;
  std::string image;
  const char* reason;
};

TEST_F(SafetensorsTest, MalformedFilesFailWithPathAndReason) {
  const std::string good_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string good = SafetensorsImage(good_header, FloatBytes({1, 2}));
  const MalformedCase cases[] = {
      {"empty", "", "shorter than the 8-byte header length"},
      {"short_length", std::string("\x05\x00\x00", 3), "shorter than the 8-byte"},
      {"truncated_data", good.substr(0, good.size() - 3), "past the end of the data"},
      {"truncated_header", good.substr(0, 20), "past the end of the file"},
      {"offsets_past_end", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", FloatBytes({1, 2})),
       "past the end of the data"},
      {"wrong_dtype", SafetensorsImage(R"({"a":{"dtype":"FLOAT32","shape":[2],"data_offsets":[0,8]}})", FloatBytes({1, 2})),
       "unknown dtype \"FLOAT32\""},
      {"shape_mismatch", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", FloatBytes({1, 2})),
       "needs 12 bytes"},
      {"overlap", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   FloatBytes({1, 2})),
       "overlap"},
      {"not_json", SafetensorsImage("{not json", ""), "not valid JSON"},
      {"not_object", SafetensorsImage("[1,2]", ""), "not a JSON object"},
      {"negative_dim", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", FloatBytes({1, 2})),
       "shape entries"},
      {"huge_dims", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,8]}})",
                                     FloatBytes({1, 2})),
       "overflowing"},
      {"empty_with_huge_dims",
       SafetensorsImage(R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,8],"data_offsets":[0,0]}})", ""),
       "overflowing"},
      {"begin_after_end", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", FloatBytes({1, 2})),
       "begin 8 > end 0"},
      {"missing_offsets", SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2]}})", FloatBytes({1, 2})), "data_offsets"},
      {"huge_header_length", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8), "exceeds the 100 MB limit"},
  };
  for (const MalformedCase& c : cases) {
    const std::string path = Path(absl::StrCat(c.name, ".safetensors"));
    WriteFile(path, c.image);
    auto archive = SafetensorsArchive::OpenFile(path);
    ASSERT_FALSE(archive.ok()) << c.name;
    EXPECT_EQ(archive.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(archive.status().message(), HasSubstr(path)) << c.name;
    EXPECT_THAT(archive.status().message(), HasSubstr(c.reason)) << c.name << ": " << archive.status();
  }
}

TEST_F(SafetensorsTest, MissingFileAndMissingTensor) {
  auto missing = SafetensorsArchive::OpenFile(Path("absent.safetensors"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  WriteFile(Path("m.safetensors"),
            SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", FloatBytes({1, 2})));
  auto archive = SafetensorsArchive::OpenFile(Path("m.safetensors"));
  ASSERT_TRUE(archive.ok());
  auto t = (*archive)->Get("encoder.layer.0.weight");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr("missing tensor \"encoder.layer.0.weight\""));
}

TEST_F(SafetensorsTest, ShardedDirectory) {
  WriteFile(Path("model-00001-of-00002.safetensors"),
            SafetensorsImage(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", FloatBytes({1, 2})));
  WriteFile(Path("model-00002-of-00002.safetensors"),
            SafetensorsImage(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", FloatBytes({7})));
  WriteFile(Path("model.safetensors.index.json"),
            R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
  auto archive = SafetensorsArchive::OpenDirectory(dir_.string());
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ((*archive)->size(), 2u);
  auto b = (*archive)->Load("b", DType::kF32);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->f32()[0], 7.0f);

  // The index names a tensor its shard lacks.
  WriteFile(Path("model.safetensors.index.json"),
            R"({"weight_map":{"a":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  auto bad = SafetensorsArchive::OpenDirectory(dir_.string());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"c\" is listed in shard"));
  // A shard path escaping the directory.
  WriteFile(Path("model.safetensors.index.json"), R"({"weight_map":{"a":"../x.safetensors"}})");
  EXPECT_THAT(SafetensorsArchive::OpenDirectory(dir_.string()).status().message(), HasSubstr("plain file name"));
}

TEST_F(SafetensorsTest, DirectoryWithoutWeights) {
  auto archive = SafetensorsArchive::OpenDirectory(dir_.string());
  EXPECT_EQ(archive.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(archive.status().message(), HasSubstr("model.safetensors"));
}

// A fused projection's row blocks are views of the same memory; rows that
// do not split evenly are refused naming the tensor and its file.
TEST(RowBlockTest, ViewsOneBlockOfRows) {
  std::vector<float> rows(6 * 2);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i);
  SafetensorsTensor t;
  t.name = "attn.Wqkv.weight";
  t.file = "dir/model.safetensors";
  t.dtype = DType::kF32;
  t.shape = {6, 2};
  t.data = absl::Span<const std::byte>(reinterpret_cast<const std::byte*>(rows.data()), rows.size() * sizeof(float));
  auto key = RowBlock(t, 1, 3);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->shape, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(key->data.size(), 4 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<const float*>(key->data.data())[0], 4.0f);  // row 2's first value
  auto uneven = RowBlock(t, 0, 4);
  ASSERT_FALSE(uneven.ok());
  EXPECT_THAT(uneven.status().message(), HasSubstr("dir/model.safetensors: tensor \"attn.Wqkv.weight\" has shape"));
  EXPECT_THAT(uneven.status().message(), HasSubstr("do not split in 4"));
}

}  // namespace
}  // namespace attnserve
