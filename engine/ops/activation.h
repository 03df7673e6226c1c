// Element-wise activations applied after a Linear (fused into its output
// store) and Llama's SwiGLU product.
//
// Why vectorised here: the packed GEMM stores its tiles through these, and
// with the scalar libm calls (erf, tanh, exp) the activation was ~15 % of a
// one-sentence MiniLM forward and SwiGLU's exp a visible share of a decoder
// step (perf, 2026-12-03). The AVX2 versions build on one exp (x <= 0,
// engine/core/avx2_exp.h):
//   SiLU(v)      = v · σ(v)
//   GELU-tanh(v) = v · σ(2·√(2/π)·(v + 0.044715 v³))   (0.5·(1 + tanh y) = σ(2y))
//   GELU-erf(v)  = v · Φ(v), Φ from erfc by Abramowitz & Stegun 7.1.26
//                  (|error| ≤ 1.5e-7, the approximation oneDNN's gelu_erf uses)
//   σ(x)         = x ≥ 0 ? 1 / (1 + e) : e / (1 + e), e = exp(-|x|) ≤ 1
// so nothing overflows and the tails keep their relative precision. NaN in
// gives NaN out, as the scalar forms do. Accuracy against double references
// is tested (tests/engine/ops/activation_test.cc).
#ifndef ATTNSERVE_ENGINE_OPS_ACTIVATION_H_
#define ATTNSERVE_ENGINE_OPS_ACTIVATION_H_

#include <cstdint>

namespace attnserve {

enum class Activation { kNone, kGeluErf, kGeluTanh, kSilu, kRelu };

// x[i] = act(x[i]) for i in [0, n): AVX2 lanes when the CPU has AVX2 + FMA,
// else ApplyActivationScalar.
void ApplyActivation(Activation act, float* x, int64_t n);

// The same with the C library's erf / tanh / exp, one value at a time.
void ApplyActivationScalar(Activation act, float* x, int64_t n);
float ActivationScalar(Activation act, float v);

// out[i] = SiLU(gate[i]) · up[i] for i in [0, n) (SwiGLU); out may alias
// gate or up. AVX2 when available.
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
// out[i] = gelu_tanh(gate[i]) · up[i] (GeGLU, Gemma); same contract.
void GeluTanhMul(const float* gate, const float* up, int64_t n, float* out);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_OPS_ACTIVATION_H_
