// Builds safetensors images in memory for tests.
#ifndef ATTNSERVE_TESTS_ENGINE_FORMATS_SAFETENSORS_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_FORMATS_SAFETENSORS_TEST_UTIL_H_

#include <cstdint>
#include <fstream>
#include <string>

namespace attnserve::testing_util {

// 8-byte little-endian header length + header + data.
inline std::string SafetensorsImage(const std::string& header, const std::string& data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

inline void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_FORMATS_SAFETENSORS_TEST_UTIL_H_
