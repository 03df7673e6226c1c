// GgufWriter for tests: builds GGUF images in memory (valid ones, and the
// raw pieces malformed-file tests corrupt). Header-only, test code only.
#ifndef ATTNSERVE_TESTS_FUZZ_GGUF_TEST_WRITER_H_
#define ATTNSERVE_TESTS_FUZZ_GGUF_TEST_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace attnserve::testing {

class GgufTestWriter {
 public:
  // Raw little-endian appenders (for hand-made, possibly broken, records).
  static void PutU32(std::vector<std::byte>& b, uint32_t v) { Put(b, &v, 4); }
  static void PutU64(std::vector<std::byte>& b, uint64_t v) { Put(b, &v, 8); }
  static void PutStr(std::vector<std::byte>& b, const std::string& s) {
    PutU64(b, s.size());
    Put(b, s.data(), s.size());
  }
  static void Put(std::vector<std::byte>& b, const void* p, size_t n) {
    const auto* c = static_cast<const std::byte*>(p);
    b.insert(b.end(), c, c + n);
  }

  // Metadata entries: the key, then type id and payload.
  void KvU32(const std::string& key, uint32_t v) { Key(key, 4); PutU32(kv_, v); }
  void KvI32(const std::string& key, int32_t v) { Key(key, 5); Put(kv_, &v, 4); }
  void KvF32(const std::string& key, float v) { Key(key, 6); Put(kv_, &v, 4); }
  void KvBool(const std::string& key, bool v) { Key(key, 7); uint8_t x = v; Put(kv_, &x, 1); }
  void KvStr(const std::string& key, const std::string& v) { Key(key, 8); PutStr(kv_, v); }
  void KvU64(const std::string& key, uint64_t v) { Key(key, 10); PutU64(kv_, v); }
  void KvI64(const std::string& key, int64_t v) { Key(key, 11); Put(kv_, &v, 8); }
  void KvF64(const std::string& key, double v) { Key(key, 12); Put(kv_, &v, 8); }
  void KvU8(const std::string& key, uint8_t v) { Key(key, 0); Put(kv_, &v, 1); }
  void KvI8(const std::string& key, int8_t v) { Key(key, 1); Put(kv_, &v, 1); }
  void KvU16(const std::string& key, uint16_t v) { Key(key, 2); Put(kv_, &v, 2); }
  void KvI16(const std::string& key, int16_t v) { Key(key, 3); Put(kv_, &v, 2); }
  void KvStrArray(const std::string& key, const std::vector<std::string>& v) {
    Key(key, 9); PutU32(kv_, 8); PutU64(kv_, v.size());
    for (const auto& s : v) PutStr(kv_, s);
  }
  void KvF32Array(const std::string& key, const std::vector<float>& v) {
    Key(key, 9); PutU32(kv_, 6); PutU64(kv_, v.size());
    for (float f : v) Put(kv_, &f, 4);
  }
  void KvI32Array(const std::string& key, const std::vector<int32_t>& v) {
    Key(key, 9); PutU32(kv_, 5); PutU64(kv_, v.size());
    for (int32_t x : v) Put(kv_, &x, 4);
  }
  // Any bytes as a metadata entry (key already written by the caller's bytes).
  void KvRaw(const std::vector<std::byte>& raw) { kv_.insert(kv_.end(), raw.begin(), raw.end()); ++n_kv_; }

  // A tensor with ne (fastest first), ggml type id and its data bytes.
  // Placed at the next aligned offset unless `offset` is given.
  void Tensor(const std::string& name, const std::vector<int64_t>& ne, uint32_t type,
              const std::vector<std::byte>& data, int64_t offset = -1) {
    uint64_t off = offset >= 0 ? static_cast<uint64_t>(offset) : Align(data_.size());
    PutStr(infos_, name);
    PutU32(infos_, static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) Put(infos_, &d, 8);
    PutU32(infos_, type);
    PutU64(infos_, off);
    if (data_.size() < off + data.size()) data_.resize(off + data.size());
    if (!data.empty()) std::memcpy(data_.data() + off, data.data(), data.size());
    ++n_tensors_;
  }
  void TensorF32(const std::string& name, const std::vector<int64_t>& ne, const std::vector<float>& v) {
    std::vector<std::byte> d(v.size() * 4);
    std::memcpy(d.data(), v.data(), d.size());
    Tensor(name, ne, 0, d);
  }

  void set_alignment(uint64_t a) { alignment_ = a; }
  void set_version(uint32_t v) { version_ = v; }

  std::vector<std::byte> Build() const {
    std::vector<std::byte> b;
    PutU32(b, 0x46554747u);
    PutU32(b, version_);
    PutU64(b, n_tensors_);
    PutU64(b, n_kv_);
    b.insert(b.end(), kv_.begin(), kv_.end());
    b.insert(b.end(), infos_.begin(), infos_.end());
    b.resize(Align(b.size()));
    b.insert(b.end(), data_.begin(), data_.end());
    return b;
  }

 private:
  void Key(const std::string& key, uint32_t type) {
    PutStr(kv_, key);
    PutU32(kv_, type);
    ++n_kv_;
  }
  uint64_t Align(uint64_t x) const { return (x + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  uint64_t n_kv_ = 0;
  uint64_t n_tensors_ = 0;
  std::vector<std::byte> kv_;
  std::vector<std::byte> infos_;
  std::vector<std::byte> data_;
};

}  // namespace attnserve::testing

#endif  // ATTNSERVE_TESTS_FUZZ_GGUF_TEST_WRITER_H_
