// Dequantisation of llama.cpp's block formats (ggml-quants.c's
// dequantize_row_*), so that GGUF files quantised by llama-quantize
// (Q4_K_M, Q5_K_S, Q6_K, Q4_0, IQ4_XS, ...) load: the engine computes in f32
// (or bf16 storage), so a quantised tensor is expanded once at load, not
// read block by block in the products. Weight memory is that of the
// expanded tensor (what attnserve_weight_bytes reports), not the file's;
// with q8_0 storage a Q8_0 tensor is not expanded at all (its blocks are
// kept) and other types are expanded a slice at a time and quantised to
// Q8_0 (engine/formats/gguf_file.cc).
//
// The bit layouts are those of ggml-common.h's block_* structs, checked
// value for value against gguf-py's numpy dequantisers
// (tests/engine/formats/ggml_dequantize_test.cc).
#ifndef ATTNSERVE_ENGINE_FORMATS_GGML_DEQUANTIZE_H_
#define ATTNSERVE_ENGINE_FORMATS_GGML_DEQUANTIZE_H_

#include <cstddef>
#include <cstdint>

#include "engine/formats/gguf_file.h"

namespace attnserve {

// Whether DequantizeGgml expands `type` (a block-quantised type; F32, F16
// and BF16 are converted, not dequantised, and answer false).
bool CanDequantizeGgml(GgmlType type);

// Expands n elements of `type` blocks at `src` into f32 at `dst`. n must be
// a multiple of the type's block size (the GGUF reader checks each tensor's
// rows are) and CanDequantizeGgml(type) true.
void DequantizeGgml(GgmlType type, const std::byte* src, float* dst, int64_t n);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_GGML_DEQUANTIZE_H_
