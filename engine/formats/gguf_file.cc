#include "engine/formats/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/formats/ggml_dequantize.h"

namespace attnserve {
namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Strings longer than this are certainly corrupt (the largest real ones are
// chat templates of a few hundred KB).
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;

// Bounds-checked little-endian reader over the image. Every read fails with
// the offset and what was being read.
class Reader {
 public:
  Reader(absl::Span<const std::byte> data, const std::string& where) : data_(data), where_(where) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": GGUF: ", what, " (at byte ", pos_, ")"));
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    if (remaining() < sizeof(T)) return Error(absl::StrCat("truncated while reading ", what));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  absl::StatusOr<std::string> ReadString(absl::string_view what) {
    ASSIGN_OR_RETURN(uint64_t len, Read<uint64_t>(what));
    if (len > remaining() || len > kMaxStringBytes) {
      return Error(absl::StrCat(what, ": string length ", len, " exceeds the ", remaining(), " bytes left"));
    }
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  absl::Span<const std::byte> data_;
  const std::string& where_;
  size_t pos_ = 0;
};

// Smallest number of bytes one element of `type` can take (to bound counts).
uint64_t MinValueBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 1;
}

bool KnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

// Reads one scalar of `type` into `v` (as a scalar) or appends it to the
// array vectors of `v` when `append` is set.
absl::Status ReadScalar(Reader& r, GgufValueType type, GgufValue& v, bool append, absl::string_view what) {
  auto put_int = [&](int64_t x) {
    if (append) v.ints.push_back(x); else v.i = x;
  };
  auto put_float = [&](double x) {
    if (append) v.floats.push_back(x); else v.f = x;
  };
  switch (type) {
    case GgufValueType::kUint8: { ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(what)); put_int(x); break; }
    case GgufValueType::kInt8: { ASSIGN_OR_RETURN(int8_t x, r.Read<int8_t>(what)); put_int(x); break; }
    case GgufValueType::kUint16: { ASSIGN_OR_RETURN(uint16_t x, r.Read<uint16_t>(what)); put_int(x); break; }
    case GgufValueType::kInt16: { ASSIGN_OR_RETURN(int16_t x, r.Read<int16_t>(what)); put_int(x); break; }
    case GgufValueType::kUint32: { ASSIGN_OR_RETURN(uint32_t x, r.Read<uint32_t>(what)); put_int(x); break; }
    case GgufValueType::kInt32: { ASSIGN_OR_RETURN(int32_t x, r.Read<int32_t>(what)); put_int(x); break; }
    case GgufValueType::kInt64: { ASSIGN_OR_RETURN(int64_t x, r.Read<int64_t>(what)); put_int(x); break; }
    case GgufValueType::kUint64: {
      ASSIGN_OR_RETURN(uint64_t x, r.Read<uint64_t>(what));
      if (!append) v.u = x;
      // Values above INT64_MAX saturate in the int view (kept exact in u).
      put_int(x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                  ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(x));
      break;
    }
    case GgufValueType::kFloat32: { ASSIGN_OR_RETURN(float x, r.Read<float>(what)); put_float(x); break; }
    case GgufValueType::kFloat64: { ASSIGN_OR_RETURN(double x, r.Read<double>(what)); put_float(x); break; }
    case GgufValueType::kBool: {
      ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(what));
      if (x > 1) return r.Error(absl::StrCat(what, ": bool value ", static_cast<int>(x), " is not 0 or 1"));
      if (append) v.ints.push_back(x); else v.b = x != 0;
      break;
    }
    case GgufValueType::kString: {
      ASSIGN_OR_RETURN(std::string s, r.ReadString(what));
      if (append) v.strings.push_back(std::move(s)); else v.s = std::move(s);
      break;
    }
    case GgufValueType::kArray:
      return r.Error(absl::StrCat(what, ": nested arrays are not supported"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GgufValue> ReadValue(Reader& r, const std::string& key) {
  std::string what = absl::StrCat("value of '", key, "'");
  ASSIGN_OR_RETURN(uint32_t type_id, r.Read<uint32_t>(what));
  if (!KnownValueType(type_id)) return r.Error(absl::StrCat(what, ": unknown value type ", type_id));
  GgufValue v;
  v.type = static_cast<GgufValueType>(type_id);
  if (v.type != GgufValueType::kArray) {
    RETURN_IF_ERROR(ReadScalar(r, v.type, v, /*append=*/false, what));
    return v;
  }
  ASSIGN_OR_RETURN(uint32_t elem_id, r.Read<uint32_t>(what));
  if (!KnownValueType(elem_id)) return r.Error(absl::StrCat(what, ": unknown array element type ", elem_id));
  v.array_type = static_cast<GgufValueType>(elem_id);
  if (v.array_type == GgufValueType::kArray) return r.Error(absl::StrCat(what, ": nested arrays are not supported"));
  ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>(what));
  uint64_t min_bytes = MinValueBytes(v.array_type);
  if (n > r.remaining() / min_bytes) {
    return r.Error(absl::StrCat(what, ": array of ", n, " ", GgufValueTypeName(v.array_type),
                                " cannot fit in the ", r.remaining(), " bytes left"));
  }
  for (uint64_t k = 0; k < n; ++k) RETURN_IF_ERROR(ReadScalar(r, v.array_type, v, /*append=*/true, what));
  return v;
}

bool KnownGgmlType(uint32_t t) { return GgmlTraits(t).has_value(); }

// a * b with overflow detection (both non-negative).
bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown";
}

const char* GgmlTypeName(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return "F32";
    case GgmlType::kF16: return "F16";
    case GgmlType::kQ4_0: return "Q4_0";
    case GgmlType::kQ4_1: return "Q4_1";
    case GgmlType::kQ5_0: return "Q5_0";
    case GgmlType::kQ5_1: return "Q5_1";
    case GgmlType::kQ8_0: return "Q8_0";
    case GgmlType::kQ8_1: return "Q8_1";
    case GgmlType::kQ2_K: return "Q2_K";
    case GgmlType::kQ3_K: return "Q3_K";
    case GgmlType::kQ4_K: return "Q4_K";
    case GgmlType::kQ5_K: return "Q5_K";
    case GgmlType::kQ6_K: return "Q6_K";
    case GgmlType::kQ8_K: return "Q8_K";
    case GgmlType::kIQ4_NL: return "IQ4_NL";
    case GgmlType::kIQ4_XS: return "IQ4_XS";
    case GgmlType::kI8: return "I8";
    case GgmlType::kI16: return "I16";
    case GgmlType::kI32: return "I32";
    case GgmlType::kI64: return "I64";
    case GgmlType::kF64: return "F64";
    case GgmlType::kBF16: return "BF16";
  }
  return "unknown";
}

std::optional<GgmlTypeTraits> GgmlTraits(uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kF32: return GgmlTypeTraits{1, 4};
    case GgmlType::kF16: return GgmlTypeTraits{1, 2};
    case GgmlType::kBF16: return GgmlTypeTraits{1, 2};
    case GgmlType::kQ4_0: return GgmlTypeTraits{32, 18};
    case GgmlType::kQ4_1: return GgmlTypeTraits{32, 20};
    case GgmlType::kQ5_0: return GgmlTypeTraits{32, 22};
    case GgmlType::kQ5_1: return GgmlTypeTraits{32, 24};
    case GgmlType::kQ8_0: return GgmlTypeTraits{32, 34};
    case GgmlType::kQ8_1: return GgmlTypeTraits{32, 36};
    case GgmlType::kQ2_K: return GgmlTypeTraits{256, 84};
    case GgmlType::kQ3_K: return GgmlTypeTraits{256, 110};
    case GgmlType::kQ4_K: return GgmlTypeTraits{256, 144};
    case GgmlType::kQ5_K: return GgmlTypeTraits{256, 176};
    case GgmlType::kQ6_K: return GgmlTypeTraits{256, 210};
    case GgmlType::kQ8_K: return GgmlTypeTraits{256, 292};
    case GgmlType::kIQ4_NL: return GgmlTypeTraits{32, 18};
    case GgmlType::kIQ4_XS: return GgmlTypeTraits{256, 136};
    case GgmlType::kI8: return GgmlTypeTraits{1, 1};
    case GgmlType::kI16: return GgmlTypeTraits{1, 2};
    case GgmlType::kI32: return GgmlTypeTraits{1, 4};
    case GgmlType::kI64: return GgmlTypeTraits{1, 8};
    case GgmlType::kF64: return GgmlTypeTraits{1, 8};
  }
  return std::nullopt;
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kUint16:
    case GgufValueType::kInt16: case GgufValueType::kUint32: case GgufValueType::kInt32:
    case GgufValueType::kUint64: case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->image_ = mapped->bytes();
  file->file_ = std::move(mapped);
  file->where_ = path;
  RETURN_IF_ERROR(file->ParseImage());
  return file;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(absl::Span<const std::byte> image,
                                                          const std::string& where) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->image_ = image;
  file->where_ = where;
  RETURN_IF_ERROR(file->ParseImage());
  return file;
}

absl::Status GgufFile::ParseImage() {
  Reader r(image_, where_);
  ASSIGN_OR_RETURN(uint32_t magic, r.Read<uint32_t>("magic"));
  if (magic != 0x46554747u) {  // "GGUF" little-endian
    return absl::InvalidArgumentError(absl::StrCat(where_, ": not a GGUF file (bad magic)"));
  }
  ASSIGN_OR_RETURN(version_, r.Read<uint32_t>("version"));
  if (version_ != 2 && version_ != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(where_, ": GGUF version ", version_, " is not supported (need 2 or 3)"));
  }
  ASSIGN_OR_RETURN(uint64_t n_tensors, r.Read<uint64_t>("tensor count"));
  ASSIGN_OR_RETURN(uint64_t n_kv, r.Read<uint64_t>("metadata count"));
  // A key/value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor
  // info at least 8 + 4 + 8 + 4 + 8.
  if (n_kv > r.remaining() / 13) return r.Error(absl::StrCat("metadata count ", n_kv, " exceeds the file size"));
  if (n_tensors > r.remaining() / 32) {
    return r.Error(absl::StrCat("tensor count ", n_tensors, " exceeds the file size"));
  }

  for (uint64_t k = 0; k < n_kv; ++k) {
    ASSIGN_OR_RETURN(std::string key, r.ReadString(absl::StrCat("key of metadata entry ", k)));
    ASSIGN_OR_RETURN(GgufValue value, ReadValue(r, key));
    if (!kv_.emplace(key, std::move(value)).second) return r.Error(absl::StrCat("duplicate metadata key '", key, "'"));
  }

  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufValueType::kUint32) {
      return absl::InvalidArgumentError(absl::StrCat(where_, ": general.alignment must be uint32, got ",
                                                     GgufValueTypeName(a->type)));
    }
    if (a->i == 0 || (a->i & (a->i - 1)) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where_, ": general.alignment ", a->i, " is not a power of two"));
    }
    alignment_ = static_cast<uint32_t>(a->i);
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo info;
    ASSIGN_OR_RETURN(info.name, r.ReadString(absl::StrCat("name of tensor ", t)));
    std::string what = absl::StrCat("tensor '", info.name, "'");
    ASSIGN_OR_RETURN(uint32_t n_dims, r.Read<uint32_t>(what));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return r.Error(absl::StrCat(what, ": ", n_dims, " dimensions (need 1..", kMaxDims, ")"));
    }
    // The product of the non-zero dimensions must fit in int64: with a zero
    // among them the element count is 0 whatever the order, but shapes like
    // [2^40, 2^40, 0] would still overflow code that multiplies them.
    uint64_t extent = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      ASSIGN_OR_RETURN(int64_t ne, r.Read<int64_t>(what));
      if (ne < 0) return r.Error(absl::StrCat(what, ": negative dimension ", ne));
      if (ne != 0 && (MulOverflows(extent, static_cast<uint64_t>(ne), &extent) ||
                      extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
        return r.Error(absl::StrCat(what, ": element count overflows"));
      }
      info.ne.push_back(ne);
    }
    info.shape.assign(info.ne.rbegin(), info.ne.rend());
    ASSIGN_OR_RETURN(uint32_t type_id, r.Read<uint32_t>(what));
    std::optional<GgmlTypeTraits> traits = GgmlTraits(type_id);
    if (!KnownGgmlType(type_id)) return r.Error(absl::StrCat(what, ": unknown ggml type ", type_id));
    info.type = static_cast<GgmlType>(type_id);
    if (info.ne[0] % traits->block_size != 0) {
      return r.Error(absl::StrCat(what, ": row length ", info.ne[0], " is not a multiple of the ",
                                  GgmlTypeName(info.type), " block size ", traits->block_size));
    }
    ASSIGN_OR_RETURN(info.offset, r.Read<uint64_t>(what));
    if (info.offset % alignment_ != 0) {
      return r.Error(absl::StrCat(what, ": data offset ", info.offset, " is not a multiple of the alignment ",
                                  alignment_));
    }
    if (tensor_index_.count(info.name) != 0) return r.Error(absl::StrCat("duplicate tensor name '", info.name, "'"));
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t data_start = (static_cast<uint64_t>(r.pos()) + alignment_ - 1) / alignment_ * alignment_;
  if (data_start > image_.size() && n_tensors > 0) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": GGUF: data section starts at ", data_start,
                                                   " beyond the end of the file (", image_.size(), " bytes)"));
  }
  uint64_t data_size = data_start <= image_.size() ? image_.size() - data_start : 0;
  // Check sizes and bounds; then overlaps on the sorted extents.
  std::vector<std::pair<uint64_t, uint64_t>> extents;  // [begin, end), index
  for (GgufTensorInfo& info : tensors_) {
    GgmlTypeTraits traits = *GgmlTraits(static_cast<uint32_t>(info.type));
    uint64_t blocks = static_cast<uint64_t>(info.numel()) / static_cast<uint64_t>(traits.block_size);
    uint64_t nbytes;
    if (MulOverflows(blocks, static_cast<uint64_t>(traits.block_bytes), &nbytes) || info.offset > data_size ||
        nbytes > data_size - info.offset) {
      return absl::InvalidArgumentError(
          absl::StrCat(where_, ": GGUF: tensor '", info.name, "' (", GgmlTypeName(info.type), " ",
                       ShapeString(info.shape), ") at data offset ", info.offset,
                       " runs past the end of the data section (", data_size, " bytes)"));
    }
    info.data = image_.subspan(static_cast<size_t>(data_start + info.offset), static_cast<size_t>(nbytes));
    extents.emplace_back(info.offset, info.offset + nbytes);
  }
  std::vector<size_t> idx(extents.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return extents[a] < extents[b]; });
  for (size_t k = 1; k < idx.size(); ++k) {
    const auto& prev = extents[idx[k - 1]];
    const auto& cur = extents[idx[k]];
    if (cur.first < prev.second && cur.second > cur.first && prev.second > prev.first) {
      return absl::InvalidArgumentError(absl::StrCat(where_, ": GGUF: tensors '", tensors_[idx[k - 1]].name,
                                                     "' and '", tensors_[idx[k]].name, "' overlap"));
    }
  }
  return absl::OkStatus();
}

const GgufValue* GgufFile::Find(absl::string_view key) const {
  auto it = kv_.find(std::string(key));
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(absl::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<int64_t> GgufFile::GetInt(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(where_, ": metadata key '", key, "' is missing"));
  if (!v->is_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": metadata key '", key, "' must be an integer, got ",
                                                   GgufValueTypeName(v->type)));
  }
  if (v->type == GgufValueType::kUint64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": metadata key '", key, "' value ", v->u, " is too large"));
  }
  return v->i;
}

absl::StatusOr<int64_t> GgufFile::GetIntOr(absl::string_view key, int64_t default_value) const {
  if (Find(key) == nullptr) return default_value;
  return GetInt(key);
}

absl::StatusOr<double> GgufFile::GetFloatOr(absl::string_view key, double default_value) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return default_value;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  return absl::InvalidArgumentError(absl::StrCat(where_, ": metadata key '", key, "' must be a number, got ",
                                                 GgufValueTypeName(v->type)));
}

absl::StatusOr<bool> GgufFile::GetBoolOr(absl::string_view key, bool default_value) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return default_value;
  if (v->type != GgufValueType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": metadata key '", key, "' must be a bool, got ",
                                                   GgufValueTypeName(v->type)));
  }
  return v->b;
}

absl::StatusOr<std::string> GgufFile::GetString(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(where_, ": metadata key '", key, "' is missing"));
  if (v->type != GgufValueType::kString) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": metadata key '", key, "' must be a string, got ",
                                                   GgufValueTypeName(v->type)));
  }
  return v->s;
}

absl::StatusOr<std::string> GgufFile::GetStringOr(absl::string_view key, const std::string& default_value) const {
  if (Find(key) == nullptr) return default_value;
  return GetString(key);
}

namespace {
absl::StatusOr<const GgufValue*> FindArray(const GgufFile& f, absl::string_view key) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(f.where(), ": metadata key '", key, "' is missing"));
  if (!v->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(f.where(), ": metadata key '", key, "' must be an array, got ",
                                                   GgufValueTypeName(v->type)));
  }
  return v;
}
absl::Status WrongElem(const GgufFile& f, absl::string_view key, const GgufValue* v, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(f.where(), ": metadata key '", key, "' must be an array of ", want,
                                                 ", got an array of ", GgufValueTypeName(v->array_type)));
}
}  // namespace

absl::StatusOr<const std::vector<std::string>*> GgufFile::GetStringArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, FindArray(*this, key));
  if (v->array_type != GgufValueType::kString) return WrongElem(*this, key, v, "string");
  return &v->strings;
}

absl::StatusOr<const std::vector<double>*> GgufFile::GetFloatArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, FindArray(*this, key));
  if (v->array_type != GgufValueType::kFloat32 && v->array_type != GgufValueType::kFloat64) {
    return WrongElem(*this, key, v, "float");
  }
  return &v->floats;
}

absl::StatusOr<const std::vector<int64_t>*> GgufFile::GetIntArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, FindArray(*this, key));
  if (v->array_type == GgufValueType::kString || v->array_type == GgufValueType::kFloat32 ||
      v->array_type == GgufValueType::kFloat64) {
    return WrongElem(*this, key, v, "integer");
  }
  return &v->ints;
}

absl::StatusOr<Tensor> GgufFile::LoadTensor(absl::string_view name, DType storage) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat(where_, ": tensor '", name, "' is missing"));
  return LoadElements(*info, info->shape, 0, storage);
}

absl::StatusOr<Tensor> GgufFile::LoadTensorSlab(absl::string_view name, const std::vector<int64_t>& shape,
                                                int64_t index, DType storage) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat(where_, ": tensor '", name, "' is missing"));
  if (info->shape != shape || shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": tensor '", name, "' has shape ",
                                                   ShapeString(info->shape), ", expected ", ShapeString(shape)));
  }
  if (index < 0 || index >= shape[0]) {
    return absl::OutOfRangeError(absl::StrCat(where_, ": tensor '", name, "': slab ", index, " of ", shape[0]));
  }
  const std::vector<int64_t> slab(shape.begin() + 1, shape.end());
  const int64_t per_slab = info->numel() / shape[0];
  return LoadElements(*info, slab, index * per_slab, storage);
}

// Elements [first, first + numel(shape)) of `info` as a tensor of `shape`;
// `first` is a multiple of the type's block (a slab of whole rows).
absl::StatusOr<Tensor> GgufFile::LoadElements(const GgufTensorInfo& info, const std::vector<int64_t>& shape,
                                              int64_t first, DType storage) const {
  const std::string& name = info.name;
  RETURN_IF_ERROR(CheckQ8_0Shape(shape, storage, where_, name));
  Tensor out = Tensor::Empty(shape, storage);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const GgmlTypeTraits traits = *GgmlTraits(static_cast<uint32_t>(info.type));
  const std::byte* data = info.data.data() + first / traits.block_size * traits.block_bytes;
  switch (info.type) {
    case GgmlType::kF32:
      ConvertTensorData(data, DType::kF32, out.raw(), storage, n);
      return out;
    case GgmlType::kF16:
      ConvertTensorData(data, DType::kF16, out.raw(), storage, n);
      return out;
    case GgmlType::kBF16:
      ConvertTensorData(data, DType::kBF16, out.raw(), storage, n);
      return out;
    case GgmlType::kQ8_0:
      // Q8_0 kept as Q8_0: the file's blocks as they are, never expanded.
      if (storage != DType::kQ8_0) break;
      ConvertTensorData(data, DType::kQ8_0, out.raw(), storage, n);
      return out;
    default:
      break;
  }
  if (!CanDequantizeGgml(info.type)) {
    return absl::UnimplementedError(absl::StrCat(
        where_, ": tensor '", name, "' has ggml type ", GgmlTypeName(info.type),
        "; F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS can be "
        "loaded"));
  }
  if (storage == DType::kF32) {
    DequantizeGgml(info.type, data, out.f32(), n);
    return out;
  }
  // Other storage: through an f32 buffer a slice at a time, so a large
  // tensor does not need an f32 copy of itself on the way.
  const int64_t slice = (int64_t{1} << 20) / traits.block_size * traits.block_size;  // 4 MiB of f32
  std::vector<float> buffer(static_cast<size_t>(std::min(n, slice)));
  for (int64_t done = 0; done < n; done += slice) {
    const int64_t count = std::min(slice, n - done);
    DequantizeGgml(info.type, data + done / traits.block_size * traits.block_bytes, buffer.data(), count);
    ConvertTensorData(reinterpret_cast<const std::byte*>(buffer.data()), DType::kF32,
                      static_cast<char*>(out.raw()) + DTypeBytes(storage, done), storage, count);
  }
  return out;
}

absl::StatusOr<Tensor> GgufFile::LoadTensorWithShape(absl::string_view name, const std::vector<int64_t>& shape,
                                                     DType storage) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat(where_, ": tensor '", name, "' is missing"));
  if (info->shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": tensor '", name, "' has shape ",
                                                   ShapeString(info->shape), ", expected ", ShapeString(shape)));
  }
  return LoadTensor(name, storage);
}

}  // namespace attnserve
