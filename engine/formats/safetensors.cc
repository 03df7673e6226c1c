#include "engine/formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/half.h"
#include "engine/core/q8_0.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"

namespace attnserve {
namespace {

// A header larger than this is refused before parsing (the format's own
// reference implementation uses the same 100 MB cap).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeInfo {
  const char* name;
  int bytes;
  std::optional<DType> dtype;
};
constexpr DTypeInfo kDTypes[] = {
    {"F32", 4, DType::kF32}, {"F16", 2, DType::kF16},     {"BF16", 2, DType::kBF16},
    {"F64", 8, std::nullopt}, {"I64", 8, std::nullopt},   {"I32", 4, std::nullopt},
    {"I16", 2, std::nullopt}, {"I8", 1, std::nullopt},    {"U64", 8, std::nullopt},
    {"U32", 4, std::nullopt}, {"U16", 2, std::nullopt},   {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DTypeInfo* FindDType(const std::string& name) {
  for (const DTypeInfo& d : kDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

absl::Status Bad(const std::string& where, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": invalid safetensors: ", reason));
}

// Reads a non-negative integer that fits in int64.
bool AsNonNegative(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    *out = i;
    return true;
  }
  return false;
}

absl::StatusOr<SafetensorsTensor> ParseEntry(const std::string& name, const nlohmann::json& entry,
                                             absl::Span<const std::byte> data, const std::string& where) {
  const std::string what = absl::StrCat("tensor \"", name, "\"");
  if (!entry.is_object()) return Bad(where, absl::StrCat(what, " is not an object"));
  auto dtype_it = entry.find("dtype");
  auto shape_it = entry.find("shape");
  auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return Bad(where, absl::StrCat(what, ": missing or non-string \"dtype\""));
  }
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return Bad(where, absl::StrCat(what, ": missing or non-array \"shape\""));
  }
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return Bad(where, absl::StrCat(what, ": \"data_offsets\" must be [begin, end]"));
  }
  SafetensorsTensor t;
  t.name = name;
  t.file = where;
  t.dtype_name = dtype_it->get<std::string>();
  const DTypeInfo* info = FindDType(t.dtype_name);
  if (info == nullptr) return Bad(where, absl::StrCat(what, ": unknown dtype \"", t.dtype_name, "\""));
  t.dtype = info->dtype;
  if (shape_it->size() > 8) return Bad(where, absl::StrCat(what, ": rank ", shape_it->size(), " > 8"));
  // numel x element size computed with overflow checks: a header may claim
  // absurd dimensions.
  // The product of the non-zero dimensions must fit too: an empty tensor of
  // shape [0, 2^40, 2^40] would overflow whoever multiplies in another order.
  uint64_t bytes = static_cast<uint64_t>(info->bytes);
  uint64_t extent = 1;
  bool overflow = false;
  for (const nlohmann::json& d : *shape_it) {
    int64_t dim;
    if (!AsNonNegative(d, &dim)) return Bad(where, absl::StrCat(what, ": shape entries must be integers >= 0"));
    t.shape.push_back(dim);
    if (dim == 0) {
      bytes = 0;
      continue;
    }
    if (__builtin_mul_overflow(extent, static_cast<uint64_t>(dim), &extent) ||
        extent > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(info->bytes)) {
      overflow = true;
    }
    bytes *= static_cast<uint64_t>(dim);
  }
  int64_t begin, end;
  if (!AsNonNegative((*offsets_it)[0], &begin) || !AsNonNegative((*offsets_it)[1], &end)) {
    return Bad(where, absl::StrCat(what, ": data_offsets must be integers >= 0"));
  }
  if (begin > end) return Bad(where, absl::StrCat(what, ": data_offsets begin ", begin, " > end ", end));
  if (static_cast<uint64_t>(end) > data.size()) {
    return Bad(where, absl::StrCat(what, ": data_offsets end ", end, " is past the end of the data (",
                                   data.size(), " bytes); file truncated?"));
  }
  if (overflow || bytes != static_cast<uint64_t>(end - begin)) {
    return Bad(where, absl::StrCat(what, ": shape ", ShapeString(t.shape), " x ", t.dtype_name, " needs ",
                                   overflow ? std::string("overflowing") : absl::StrCat(bytes),
                                   " bytes but data_offsets span ", end - begin));
  }
  t.data = data.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  return t;
}

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<SafetensorsTensor> RowBlock(SafetensorsTensor t, int part, int parts) {
  if (t.shape.empty() || parts < 1 || t.shape[0] % parts != 0 || part < 0 || part >= parts) {
    return absl::InvalidArgumentError(absl::StrCat(t.file, ": tensor \"", t.name, "\" has shape ",
                                                   ShapeString(t.shape), "; its rows do not split in ", parts));
  }
  t.shape[0] /= parts;
  const size_t block = t.data.size() / static_cast<size_t>(parts);
  t.data = t.data.subspan(block * static_cast<size_t>(part), block);
  return t;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  size_t size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return absl::InternalError(absl::StrCat(path, ": mmap failed: ", std::strerror(err)));
    }
    data = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

absl::StatusOr<std::vector<SafetensorsTensor>> ParseSafetensors(absl::Span<const std::byte> image,
                                                                const std::string& where) {
  if (image.size() < 8) return Bad(where, absl::StrCat("file is ", image.size(), " bytes, shorter than the 8-byte header length"));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(image[i]);
  if (header_len > kMaxHeaderBytes) return Bad(where, absl::StrCat("header length ", header_len, " exceeds the 100 MB limit"));
  if (header_len > image.size() - 8) {
    return Bad(where, absl::StrCat("header length ", header_len, " is past the end of the file (",
                                   image.size(), " bytes); file truncated?"));
  }
  absl::string_view header_text(reinterpret_cast<const char*>(image.data() + 8), header_len);
  nlohmann::json header = nlohmann::json::parse(header_text.begin(), header_text.end(), nullptr, false);
  if (header.is_discarded()) return Bad(where, "header is not valid JSON");
  if (!header.is_object()) return Bad(where, "header is not a JSON object");
  absl::Span<const std::byte> data = image.subspan(8 + header_len);

  std::vector<SafetensorsTensor> tensors;
  tensors.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) return Bad(where, "__metadata__ is not an object");
      continue;
    }
    ASSIGN_OR_RETURN(SafetensorsTensor t, ParseEntry(it.key(), it.value(), data, where));
    tensors.push_back(std::move(t));
  }
  // Overlap check: sorted by start, each tensor must end before the next
  // begins. Zero-sized tensors occupy nothing and are skipped.
  std::vector<const SafetensorsTensor*> order;
  for (const SafetensorsTensor& t : tensors) {
    if (!t.data.empty()) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->data.data() < b->data.data(); });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1]->data.data() + order[i - 1]->data.size() > order[i]->data.data()) {
      return Bad(where, absl::StrCat("tensors \"", order[i - 1]->name, "\" and \"", order[i]->name, "\" overlap"));
    }
  }
  return tensors;
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> SafetensorsArchive::OpenFile(const std::string& path) {
  std::unique_ptr<SafetensorsArchive> archive(new SafetensorsArchive());
  archive->source_ = path;
  RETURN_IF_ERROR(archive->AddFile(path));
  return archive;
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> SafetensorsArchive::FromTensors(
    std::string source, std::vector<SafetensorsTensor> tensors, std::shared_ptr<const void> owner) {
  std::unique_ptr<SafetensorsArchive> archive(new SafetensorsArchive());
  archive->source_ = std::move(source);
  archive->owner_ = std::move(owner);
  for (SafetensorsTensor& t : tensors) {
    std::string name = t.name;
    if (!archive->tensors_.emplace(name, std::move(t)).second) {
      return absl::InvalidArgumentError(absl::StrCat(archive->source_, ": tensor \"", name, "\" given twice"));
    }
  }
  return archive;
}

absl::Status SafetensorsArchive::AddFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  ASSIGN_OR_RETURN(std::vector<SafetensorsTensor> tensors, ParseSafetensors(file->bytes(), path));
  for (SafetensorsTensor& t : tensors) {
    std::string name = t.name;
    auto [it, inserted] = tensors_.emplace(name, std::move(t));
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor \"", name, "\" also appears in ", it->second.file));
    }
  }
  files_.push_back(std::move(file));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> SafetensorsArchive::OpenDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  const std::string index = (fs::path(dir) / "model.safetensors.index.json").string();
  std::error_code ec;
  if (fs::exists(single, ec)) return OpenFile(single);
  if (!fs::exists(index, ec)) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": no model.safetensors or model.safetensors.index.json (only safetensors weights are read)"));
  }
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(index));
  auto map_it = j.is_object() ? j.find("weight_map") : j.end();
  if (map_it == j.end() || !map_it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index, ": missing object \"weight_map\""));
  }
  std::map<std::string, std::vector<std::string>> shard_tensors;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    if (!it.value().is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(index, ": weight_map[\"", it.key(), "\"] is not a string"));
    }
    std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "..") {
      return absl::InvalidArgumentError(absl::StrCat(index, ": shard name \"", shard, "\" is not a plain file name"));
    }
    shard_tensors[shard].push_back(it.key());
  }
  std::unique_ptr<SafetensorsArchive> archive(new SafetensorsArchive());
  archive->source_ = dir;
  for (const auto& [shard, names] : shard_tensors) {
    const std::string path = (fs::path(dir) / shard).string();
    RETURN_IF_ERROR(archive->AddFile(path));
    for (const std::string& name : names) {
      const SafetensorsTensor* t = archive->Find(name);
      if (t == nullptr || t->file != path) {
        return absl::InvalidArgumentError(
            absl::StrCat(index, ": tensor \"", name, "\" is listed in shard ", shard, " but is not in it"));
      }
    }
  }
  return archive;
}

const SafetensorsTensor* SafetensorsArchive::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::StatusOr<const SafetensorsTensor*> SafetensorsArchive::Get(const std::string& name) const {
  const SafetensorsTensor* t = Find(name);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat(source_, ": missing tensor \"", name, "\""));
  return t;
}

absl::StatusOr<const SafetensorsTensor*> SafetensorsArchive::GetWithShape(const std::string& name,
                                                                          const std::vector<int64_t>& shape) const {
  ASSIGN_OR_RETURN(const SafetensorsTensor* t, Get(name));
  if (t->shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(t->file, ": tensor \"", name, "\" has shape ",
                                                   ShapeString(t->shape), " but the config implies ",
                                                   ShapeString(shape)));
  }
  return t;
}

absl::StatusOr<Tensor> SafetensorsArchive::Load(const std::string& name, DType storage) const {
  ASSIGN_OR_RETURN(const SafetensorsTensor* t, Get(name));
  if (!t->dtype.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(t->file, ": tensor \"", name, "\" has dtype ", t->dtype_name,
                                                   "; only F32, F16 and BF16 weights are supported"));
  }
  RETURN_IF_ERROR(CheckQ8_0Shape(t->shape, storage, t->file, name));
  Tensor out = Tensor::Empty(t->shape, storage);
  ConvertTensorData(t->data.data(), *t->dtype, out.raw(), storage, t->numel());
  return out;
}

absl::StatusOr<Tensor> SafetensorsArchive::LoadWithShape(const std::string& name, const std::vector<int64_t>& shape,
                                                         DType storage) const {
  RETURN_IF_ERROR(GetWithShape(name, shape).status());
  return Load(name, storage);
}

std::vector<std::string> SafetensorsArchive::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) names.push_back(name);
  return names;
}

absl::Status CheckQ8_0Shape(const std::vector<int64_t>& shape, DType storage, absl::string_view file,
                            absl::string_view tensor) {
  if (storage != DType::kQ8_0 || IsQ8_0RowShape(shape)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(file, ": tensor \"", tensor, "\" has shape ", ShapeString(shape),
                                                 "; q8_0 needs rows of a multiple of 32 values"));
}

void ConvertTensorData(const std::byte* src, DType from, void* dst, DType to, int64_t n) {
  if (n <= 0) return;  // an empty tensor's buffers may be null (memcpy's are declared nonnull)
  if (from == to) {
    std::memcpy(dst, src, DTypeBytes(from, n));
    return;
  }
  if (from == DType::kQ8_0 || to == DType::kQ8_0) {
    // A block (32 values) at a time, through f32.
    float block[kQ8_0BlockValues];
    for (int64_t i = 0; i < n; i += kQ8_0BlockValues) {
      if (from == DType::kQ8_0) {
        DequantizeRowQ8_0(src + i / kQ8_0BlockValues * kQ8_0BlockBytes, kQ8_0BlockValues, block);
        ConvertTensorData(reinterpret_cast<const std::byte*>(block), DType::kF32,
                          static_cast<char*>(dst) + DTypeBytes(to, i), to, kQ8_0BlockValues);
      } else {
        ConvertTensorData(src + DTypeBytes(from, i), from, block, DType::kF32, kQ8_0BlockValues);
        QuantizeRowQ8_0(block, kQ8_0BlockValues,
                        static_cast<std::byte*>(dst) + i / kQ8_0BlockValues * kQ8_0BlockBytes);
      }
    }
    return;
  }
  // Via f32, element by element; the data may be unaligned inside the mapping
  // so every read goes through memcpy.
  for (int64_t i = 0; i < n; ++i) {
    float f;
    if (from == DType::kF32) {
      std::memcpy(&f, src + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      f = from == DType::kBF16 ? Bf16ToFloat(h) : F16ToFloat(h);
    }
    switch (to) {
      case DType::kF32: static_cast<float*>(dst)[i] = f; break;
      case DType::kBF16: static_cast<uint16_t*>(dst)[i] = FloatToBf16(f); break;
      case DType::kF16: static_cast<uint16_t*>(dst)[i] = FloatToF16(f); break;
      case DType::kQ8_0: break;  // above
    }
  }
}

}  // namespace attnserve
