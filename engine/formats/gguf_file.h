// GGUF (llama.cpp's model format, versions 2 and 3) reader: header, metadata
// key/values of every value type (arrays included, nested arrays rejected as
// llama.cpp does), tensor infos, `general.alignment`, data offsets. The file
// is memory-mapped (MappedFile from safetensors.h); tensors are copied out
// and converted only when asked.
//
// Validation at parse time, each failure INVALID_ARGUMENT naming the file and
// the reason: magic, version, every count and string length against the bytes
// left (so a hostile count never triggers a huge allocation), known value and
// tensor types, 1..4 dims with non-negative sizes whose product does not
// overflow, rows a whole number of quantisation blocks, duplicate keys or
// tensor names, alignment a power of two, tensor offsets aligned and inside
// the data section, no overlapping tensors.
//
// Tensor shapes: GGUF lists ne[0] (fastest-varying) first. shape() here is
// the row-major order ([ne[n-1], ..., ne[0]]), so a GGUF matrix with
// ne = [in, out] is a row-major [out, in] Tensor, nn.Linear layout.
//
// Thread-safety: immutable after Open/Parse; concurrent reads are safe.
#ifndef ATTNSERVE_ENGINE_FORMATS_GGUF_FILE_H_
#define ATTNSERVE_ENGINE_FORMATS_GGUF_FILE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"

namespace attnserve {

enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* GgufValueTypeName(GgufValueType type);

// ggml tensor types this reader knows the size of. F32, F16, BF16 and the
// block quantisations ggml_dequantize.h expands can be loaded; the others
// (Q8_1, Q8_K: llama.cpp's intermediate formats, never a weight's; the
// integer and f64 types) parse, so a file is described fully, but
// LoadTensor refuses them with UNIMPLEMENTED.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kIQ4_NL = 20, kIQ4_XS = 23,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kBF16 = 30,
};
const char* GgmlTypeName(GgmlType type);

// One metadata value. Scalars: integers in `i` (uint64 values above INT64_MAX
// are kept in `u`), floats in `f`, bools in `b`, strings in `s`. Arrays:
// `array_type` and one of `ints` (all integer and bool types), `floats`,
// `strings`, by element type.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  GgufValueType array_type = GgufValueType::kUint8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  bool is_array() const { return type == GgufValueType::kArray; }
  bool is_integer() const;  // any integer scalar type
  bool is_float() const { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }
  uint64_t array_size() const { return ints.size() + floats.size() + strings.size(); }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;     // as in the file: ne[0] fastest
  std::vector<int64_t> shape;  // row-major: ne reversed
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;               // relative to the data section
  absl::Span<const std::byte> data;  // inside the image
  int64_t numel() const;
};

class GgufFile {
 public:
  // Maps and parses PATH.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an image already in memory (not copied: it must outlive the
  // result). `where` names it in errors. Used by tests and the fuzz target.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(absl::Span<const std::byte> image,
                                                         const std::string& where);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& where() const { return where_; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // nullptr when absent.
  const GgufValue* Find(absl::string_view key) const;
  const GgufTensorInfo* FindTensor(absl::string_view name) const;

  // Typed metadata getters. Missing key: NOT_FOUND naming the key (the
  // *Or variants return the default); wrong type: INVALID_ARGUMENT.
  // GetInt accepts any integer type (and range-checks uint64).
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;
  absl::StatusOr<int64_t> GetIntOr(absl::string_view key, int64_t default_value) const;
  absl::StatusOr<double> GetFloatOr(absl::string_view key, double default_value) const;  // float or integer
  absl::StatusOr<bool> GetBoolOr(absl::string_view key, bool default_value) const;
  absl::StatusOr<std::string> GetString(absl::string_view key) const;
  absl::StatusOr<std::string> GetStringOr(absl::string_view key, const std::string& default_value) const;
  // Array getters: the key must hold an array of the matching element kind.
  absl::StatusOr<const std::vector<std::string>*> GetStringArray(absl::string_view key) const;
  absl::StatusOr<const std::vector<double>*> GetFloatArray(absl::string_view key) const;
  absl::StatusOr<const std::vector<int64_t>*> GetIntArray(absl::string_view key) const;

  // Copies tensor NAME out as a row-major Tensor of `storage` (kF32, kBF16 or
  // kF16), converting F16 / BF16 and dequantising block types
  // (CanDequantizeGgml). NOT_FOUND when absent; UNIMPLEMENTED for other
  // ggml types.
  absl::StatusOr<Tensor> LoadTensor(absl::string_view name, DType storage) const;
  // LoadTensor plus a check of the row-major shape (INVALID_ARGUMENT naming
  // the tensor and both shapes).
  absl::StatusOr<Tensor> LoadTensorWithShape(absl::string_view name, const std::vector<int64_t>& shape,
                                             DType storage) const;
  // Slab `index` of tensor NAME along its first (slowest) dimension, which
  // must have row-major `shape` (rank >= 2): a tensor of shape[1:], as
  // LoadTensor converts it. llama.cpp stacks a mixture's experts so
  // (ffn_gate_exps [experts, ffn, hidden]); one expert is read without the
  // others.
  absl::StatusOr<Tensor> LoadTensorSlab(absl::string_view name, const std::vector<int64_t>& shape, int64_t index,
                                        DType storage) const;

 private:
  absl::StatusOr<Tensor> LoadElements(const GgufTensorInfo& info, const std::vector<int64_t>& shape, int64_t first,
                                      DType storage) const;
  GgufFile() = default;
  absl::Status ParseImage();

  std::unique_ptr<MappedFile> file_;
  absl::Span<const std::byte> image_;
  std::string where_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Element block size and bytes per block of a ggml type (1 and the element
// size for unquantised types); nullopt for an unknown type id.
struct GgmlTypeTraits {
  int64_t block_size;
  int64_t block_bytes;
};
std::optional<GgmlTypeTraits> GgmlTraits(uint32_t type_id);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_GGUF_FILE_H_
