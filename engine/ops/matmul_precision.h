// MatmulPrecision: what a Linear's large matrix products may round to.
//
// kF32 (the default everywhere): f32 activations times f32 (or widened bf16)
// weights with f32 arithmetic, as PyTorch computes by default.
// kBf16: the oneDNN products (M >= 16 rows) may round activations and
// weights to bf16 and accumulate in f32 — PyTorch's
// torch.backends.mkldnn.matmul.fp32_precision = "bf16". With f32-stored
// weights that is oneDNN's fpmath_mode::bf16; with bf16-stored weights
// Linear rounds the rows and oneDNN reads the packed bf16 panels in place.
// On a CPU with AMX (or AVX512-BF16) that runs the projections on its bf16
// units, ~4-10x the f32 GFLOP/s (docs/benchmarks.md); on a CPU without them
// oneDNN keeps f32 (f32 weights) or the packed kernel keeps every row (bf16
// weights), and nothing changes. Small-M products (the packed kernel:
// decode under 16 rows, tails) and attention stay f32 either way, and the
// weights stay stored as asked, so this "allows" bf16 rather than forcing it.
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
