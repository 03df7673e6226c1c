// Test-only reader for NumPy .npy files (version 1/2, C order, little-endian
// f4 / u2 / u1 / b1 / i4 / i8). Header-only; returns Status on any mismatch.
#ifndef ATTNSERVE_TESTS_TESTING_NPY_H_
#define ATTNSERVE_TESTS_TESTING_NPY_H_

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace attnserve::testing_util {

struct NpyArray {
  std::string descr;  // "<f4", "<u2", "|u1", "|b1", "<i4", "<i8"
  std::vector<int64_t> shape;
  std::vector<char> data;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  template <typename T>
  std::vector<T> As() const {
    std::vector<T> out(data.size() / sizeof(T));
    std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
    return out;
  }
};

inline absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an .npy file"));
  }
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t h;
    in.read(reinterpret_cast<char*>(&h), 2);
    header_len = h;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": truncated header"));
  NpyArray arr;
  auto field = [&](const std::string& key) -> std::string {
    size_t p = header.find("'" + key + "'");
    if (p == std::string::npos) return "";
    p = header.find(':', p);
    return header.substr(p + 1);
  };
  std::string d = field("descr");
  size_t q1 = d.find('\''), q2 = d.find('\'', q1 + 1);
  arr.descr = d.substr(q1 + 1, q2 - q1 - 1);
  if (field("fortran_order").find("True") < field("fortran_order").find(',')) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": Fortran order not supported"));
  }
  std::string s = field("shape");
  s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_of("0123456789") != std::string::npos) arr.shape.push_back(std::stoll(tok));
  }
  int64_t elem = 0;
  if (arr.descr == "<f4" || arr.descr == "<i4") elem = 4;
  else if (arr.descr == "<u2" || arr.descr == "<i2") elem = 2;
  else if (arr.descr == "|u1" || arr.descr == "|b1") elem = 1;
  else if (arr.descr == "<i8" || arr.descr == "<f8") elem = 8;
  else return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported dtype ", arr.descr));
  arr.data.resize(arr.numel() * elem);
  in.read(arr.data.data(), static_cast<std::streamsize>(arr.data.size()));
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": truncated data"));
  return arr;
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_TESTING_NPY_H_
