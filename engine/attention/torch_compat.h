// The one place where PyTorch's boolean-mask conventions are converted to
// ours (attention_types.h: non-zero = may attend).
//
//   nn.MultiheadAttention key_padding_mask / attn_mask (bool): True = BLOCKED
//     -> invert.
//   F.scaled_dot_product_attention attn_mask (bool): True = ALLOWED
//     -> same convention, copied.
// Float masks are additive in both APIs and need no conversion.
#ifndef ATTNSERVE_ENGINE_ATTENTION_TORCH_COMPAT_H_
#define ATTNSERVE_ENGINE_ATTENTION_TORCH_COMPAT_H_

#include <cstdint>
#include <vector>

namespace attnserve {

// nn.MultiheadAttention masks (True = blocked) -> allow masks.
std::vector<uint8_t> AllowFromTorchMhaMask(const uint8_t* torch_blocked, int64_t n);
// F.scaled_dot_product_attention bool attn_mask (True = allowed) -> allow mask.
std::vector<uint8_t> AllowFromTorchSdpaMask(const uint8_t* torch_allowed, int64_t n);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_ATTENTION_TORCH_COMPAT_H_
