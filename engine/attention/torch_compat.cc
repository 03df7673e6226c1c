#include "engine/attention/torch_compat.h"

namespace attnserve {

std::vector<uint8_t> AllowFromTorchMhaMask(const uint8_t* torch_blocked, int64_t n) {
  std::vector<uint8_t> allow(n);
  for (int64_t i = 0; i < n; ++i) allow[i] = torch_blocked[i] ? 0 : 1;
  return allow;
}

std::vector<uint8_t> AllowFromTorchSdpaMask(const uint8_t* torch_allowed, int64_t n) {
  std::vector<uint8_t> allow(n);
  for (int64_t i = 0; i < n; ++i) allow[i] = torch_allowed[i] ? 1 : 0;
  return allow;
}

}  // namespace attnserve
