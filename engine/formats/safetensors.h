// Safetensors reader: memory-mapped files, header and bounds validated, a
// name -> {dtype, shape, data span} index, single files and sharded
// directories (model.safetensors.index.json). Generic: used by the encoder and
// by the decoders for Hugging Face directories.
//
// Validation at open time (each failure is INVALID_ARGUMENT naming the file
// and the reason): the 8-byte header length fits in the file; the header is a
// JSON object; every entry has a known dtype string, a shape of non-negative
// integers and data_offsets [begin, end] with begin <= end <= data size;
// numel x dtype size == end - begin; no two tensors overlap.
//
// Thread-safety: immutable after Open; concurrent reads are safe.
#ifndef ATTNSERVE_ENGINE_FORMATS_SAFETENSORS_H_
#define ATTNSERVE_ENGINE_FORMATS_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/core/tensor.h"

namespace attnserve {

// A read-only memory mapping of a whole file (RAII: unmapped on destruction).
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::byte* data_;
  size_t size_;
};

// One tensor entry of a safetensors header.
struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;          // as written in the header: "F32", "BF16", "I64", ...
  std::optional<DType> dtype;      // set for F32 / F16 / BF16 (and a GGUF file's Q8_0), the dtypes the engine reads
  std::vector<int64_t> shape;
  absl::Span<const std::byte> data;  // inside the mapping
  std::string file;                // the file it lives in (for error messages)
  int64_t numel() const;
};

// Row block `part` of `parts` equal ones of `t` (a fused projection's
// query, key or value rows) as a [rows / parts, ...] view of the same
// memory. Rows are contiguous in every dtype a view holds (a Q8_0 row is
// whole blocks). INVALID_ARGUMENT naming the tensor and its file when the
// rows do not split so.
absl::StatusOr<SafetensorsTensor> RowBlock(SafetensorsTensor t, int part, int parts);

// Parses and validates a whole safetensors image (header + data) already in
// memory. `where` names it in errors. The returned spans point into `image`.
// Exposed for the fuzz target and for tests.
absl::StatusOr<std::vector<SafetensorsTensor>> ParseSafetensors(absl::Span<const std::byte> image,
                                                                const std::string& where);

// A set of safetensors files seen as one name -> tensor index.
class SafetensorsArchive {
 public:
  // One file.
  static absl::StatusOr<std::unique_ptr<SafetensorsArchive>> OpenFile(const std::string& path);
  // A Hugging Face model directory: model.safetensors, or the shards named by
  // model.safetensors.index.json (every tensor listed there must be present in
  // the shard the index names).
  static absl::StatusOr<std::unique_ptr<SafetensorsArchive>> OpenDirectory(const std::string& dir);

  // An index over tensors that live in memory the archive does not map
  // itself (a GGUF file's, under Hugging Face names, so that a loader written
  // for safetensors reads them): `owner` keeps that memory alive as long as
  // the archive. `source` names it in errors; INVALID_ARGUMENT for a name
  // given twice.
  static absl::StatusOr<std::unique_ptr<SafetensorsArchive>> FromTensors(std::string source,
                                                                         std::vector<SafetensorsTensor> tensors,
                                                                         std::shared_ptr<const void> owner);

  // nullptr when absent.
  const SafetensorsTensor* Find(const std::string& name) const;
  // NOT_FOUND naming the tensor and the source when absent.
  absl::StatusOr<const SafetensorsTensor*> Get(const std::string& name) const;
  // Checks the tensor's shape; INVALID_ARGUMENT naming both shapes otherwise.
  absl::StatusOr<const SafetensorsTensor*> GetWithShape(const std::string& name,
                                                        const std::vector<int64_t>& shape) const;
  // Copies a tensor out, converted to `storage` (kF32 or kBF16; f16 is
  // accepted too). Source dtype must be F32, F16 or BF16.
  absl::StatusOr<Tensor> Load(const std::string& name, DType storage) const;
  // Load with a shape check.
  absl::StatusOr<Tensor> LoadWithShape(const std::string& name, const std::vector<int64_t>& shape,
                                       DType storage) const;

  std::vector<std::string> Names() const;
  size_t size() const { return tensors_.size(); }
  const std::string& source() const { return source_; }

 private:
  SafetensorsArchive() = default;
  absl::Status AddFile(const std::string& path);

  std::string source_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::shared_ptr<const void> owner_;  // FromTensors' memory
  std::map<std::string, SafetensorsTensor> tensors_;
};

// Converts `src` (the bytes of a tensor of dtype `from`) into `dst` of dtype
// `to` (n elements each; where either is kQ8_0, n a multiple of 32, and a
// q8_0 `to` is quantised as ggml quantises).
void ConvertTensorData(const std::byte* src, DType from, void* dst, DType to, int64_t n);

// OK unless `storage` is kQ8_0 and the shape's last dimension is not a
// multiple of 32 (Q8_0 blocks run along a row); the error names the file and
// the tensor.
absl::Status CheckQ8_0Shape(const std::vector<int64_t>& shape, DType storage, absl::string_view file,
                            absl::string_view tensor);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_SAFETENSORS_H_
