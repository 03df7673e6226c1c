// MatmulPrecision: what a Linear's large matrix products may round to.
//
// kF32 (the default everywhere): f32 activations times f32 (or widened bf16)
// weights with f32 arithmetic, as PyTorch computes by default.
// kBf16: the oneDNN products (M >= 16 rows, f32-stored weights) may round
// activations and weights to bf16 and accumulate in f32 — oneDNN's
// fpmath_mode::bf16, PyTorch's torch.backends.mkldnn.matmul.fp32_precision =
// "bf16". On a CPU with AMX (or AVX512-BF16) that runs the projections on
// its bf16 units, ~4-5x the f32 GFLOP/s (docs/benchmarks.md); on a CPU
// without them oneDNN keeps f32 and nothing changes. Small-M products (the
// packed kernel: decode, tails) and attention stay f32 either way, and the
// weights stay stored as asked (f32 or bf16), so this "allows" bf16 rather
// than forcing it.
#ifndef ATTNSERVE_ENGINE_OPS_MATMUL_PRECISION_H_
#define ATTNSERVE_ENGINE_OPS_MATMUL_PRECISION_H_

#include <optional>
#include <string_view>

namespace attnserve {

enum class MatmulPrecision { kF32, kBf16 };

inline const char* MatmulPrecisionName(MatmulPrecision p) {
  return p == MatmulPrecision::kBf16 ? "bf16" : "f32";
}

// "f32" or "bf16"; anything else: nullopt.
inline std::optional<MatmulPrecision> ParseMatmulPrecision(std::string_view s) {
  if (s == "f32") return MatmulPrecision::kF32;
  if (s == "bf16") return MatmulPrecision::kBf16;
  return std::nullopt;
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_MATMUL_PRECISION_H_
