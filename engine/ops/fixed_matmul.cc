#include "engine/ops/fixed_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/dnnl/context.h"
#include "engine/ops/bf16_rows.h"

namespace attnserve {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;
using Dt = dnnl::memory::data_type;

struct FixedMatmuls::Bucket {
  dnnl::matmul prim;
  memory::desc scratchpad_md;
  std::string impl;
};

namespace {

dnnl::primitive_attr MakeAttr(Activation act, MatmulPrecision precision) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (precision == MatmulPrecision::kBf16) attr.set_fpmath_mode(dnnl::fpmath_mode::bf16);
  dnnl::post_ops ops;
  switch (act) {
    case Activation::kNone: break;
    case Activation::kGeluErf: ops.append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case Activation::kGeluTanh: ops.append_eltwise(dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
    case Activation::kSilu: ops.append_eltwise(dnnl::algorithm::eltwise_swish, 1.f, 0.f); break;
    case Activation::kRelu: ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
  }
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace

FixedMatmuls::FixedMatmuls(const PackedMatrix& w, const float* bias, Activation act,
                           MatmulPrecision precision)
    : w_(w), bias_(bias), act_(act), precision_(precision) {}

absl::StatusOr<std::unique_ptr<FixedMatmuls>> FixedMatmuls::Create(const PackedMatrix& w,
                                                                   const float* bias,
                                                                   Activation act,
                                                                   MatmulPrecision precision) {
  const bool bf16 = w.storage() == DType::kBF16;
  if (w.panel_width() != 32 || (bf16 && precision != MatmulPrecision::kBf16)) {
    return absl::InvalidArgumentError(
        "FixedMatmuls needs 32-column panels, f32, or bf16 with MatmulPrecision::kBf16");
  }
  std::unique_ptr<FixedMatmuls> fm(new FixedMatmuls(w, bias, act, precision));
  const auto& eng = DnnlContext::Get().engine();
  try {
    // The packed panels, read in place: f32 panels are oneDNN's BA16a32b,
    // bf16 ones its BA16a32b2a (packed_gemm.h).
    fm->weights_ = bf16 ? memory(memory::desc({w.k(), w.n()}, Dt::bf16, Tag::BA16a32b2a), eng,
                                 const_cast<void*>(w.data()))
                        : memory(memory::desc({w.k(), w.n()}, Dt::f32, Tag::BA16a32b), eng,
                                 const_cast<void*>(w.data()));
    if (static_cast<int64_t>(fm->weights_.get_desc().get_size()) > w.bytes()) {
      return absl::InternalError("oneDNN's blocked layout needs more bytes than the packed panels hold");
    }
    if (bias != nullptr) {
      fm->bias_mem_ = memory(memory::desc({1, w.n()}, Dt::f32, Tag::ab), eng, const_cast<float*>(bias));
    }
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, "FixedMatmuls::Create");
  }
  // Probe the largest bucket: a reference kernel here means this CPU has no
  // fast path for these weights, and the packed kernel is better at every M.
  ASSIGN_OR_RETURN(std::string impl, fm->ImplName(kMaxRows));
  if (absl::StartsWith(impl, "ref")) {
    return absl::UnimplementedError(absl::StrCat("oneDNN runs BA16a32b weights with ", impl));
  }
  // oneDNN 3.7.2's brg_matmul:avx2 returns wrong results with user-blocked
  // BA16a32b (or oneDNN's own reorder into it) once K > 1024 (max error ~40
  // on [16..128, 1536] x [1536, 384] products; exact to 1e-5 up to K = 1024,
  // checked against gemm:jit on plain weights): on an AVX2 kernel such
  // layers stay on the packed kernel. The AVX-512 kernels get them, checked
  // below at the sizes the AVX2 fault showed at and at the largest bucket.
  const bool long_k = w.k() > kMaxK;
  if (long_k && absl::StrContains(impl, "avx2")) {
    return absl::UnimplementedError(absl::StrCat("K = ", w.k(), " > ", kMaxK, " on ", impl));
  }
  // Check against the packed kernel, so a oneDNN build that misreads these
  // weights (as above) can never serve wrong results: it falls back to the
  // packed kernel instead.
  RETURN_IF_ERROR(fm->SelfCheck(kRowStep));
  if (long_k) {
    RETURN_IF_ERROR(fm->SelfCheck(128));
    RETURN_IF_ERROR(fm->SelfCheck(kMaxRows));
  }
  return fm;
}

absl::Status FixedMatmuls::SelfCheck(int64_t m) const {
  const int64_t n = w_.n(), k = w_.k();
  std::vector<float> x(m * k), want(m * n), got(m * n);
  uint32_t state = 12345;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  PackedGemm(x.data(), m, k, w_, bias_, act_, want.data(), n);
  RETURN_IF_ERROR(Run(x.data(), m, got.data()));
  // f32: agreement to rounding. bf16 products: x and W each rounded to 8
  // significant bits, so each product is off by at most 2^-8 of |x·w| and
  // the sum by 2^-8 · Σ|x·w| ≤ 2^-8 · max|x| · Σ|w| (a cheap bound) — still
  // below the O(output) errors of a misread layout this exists to catch.
  std::vector<float> bound(m * n, 0.0f);
  if (precision_ == MatmulPrecision::kBf16) {
    std::vector<float> w_row(k), w_abs_sum(n, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      w_.ReadRow(j, w_row.data());
      for (float v : w_row) w_abs_sum[j] += std::fabs(v);
    }
    for (int64_t i = 0; i < m; ++i) {
      float x_max = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) x_max = std::max(x_max, std::fabs(x[i * k + kk]));
      for (int64_t j = 0; j < n; ++j) bound[i * n + j] = x_max * w_abs_sum[j] / 256.0f;
    }
  }
  for (int64_t i = 0; i < m * n; ++i) {
    const float tolerance = 1e-3f * (1.0f + std::fabs(want[i])) + bound[i];
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {
      return absl::UnimplementedError(absl::StrCat(
          "oneDNN fixed-M matmul disagrees with the packed kernel at ", i, ": ", got[i], " vs ", want[i]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const FixedMatmuls::Bucket>> FixedMatmuls::Make(int64_t m) const {
  const auto& eng = DnnlContext::Get().engine();
  const int64_t n = w_.n(), k = w_.k();
  try {
    memory::desc src_md({m, k}, SourceType(), Tag::ab);
    memory::desc dst_md({m, n}, Dt::f32, Tag::ab);
    const dnnl::primitive_attr attr = MakeAttr(act_, precision_);
    dnnl::matmul::primitive_desc pd =
        bias_ != nullptr
            ? dnnl::matmul::primitive_desc(eng, src_md, weights_.get_desc(),
                                           bias_mem_.get_desc(), dst_md, attr)
            : dnnl::matmul::primitive_desc(eng, src_md, weights_.get_desc(), dst_md, attr);
    auto b = std::make_shared<Bucket>();
    b->prim = dnnl::matmul(pd);
    b->scratchpad_md = pd.scratchpad_desc();
    b->impl = pd.impl_info_str();
    return std::shared_ptr<const Bucket>(std::move(b));
  } catch (const dnnl::error& e) {
    // No kernel for these types on this CPU (bf16 operands on an AVX2-only
    // CPU: oneDNN 3.7 has bf16 matmuls from AVX-512 on): the packed kernel
    // serves every row instead (Linear falls back on UNIMPLEMENTED).
    if (e.status == dnnl_unimplemented) {
      return absl::UnimplementedError(absl::StrCat("oneDNN has no matmul for M = ", m, " [", n, ", ", k, "] with ",
                                                   SourceType() == Dt::bf16 ? "bf16" : "f32",
                                                   " operands on this CPU"));
    }
    return DnnlErrorToStatus(e, absl::StrCat("FixedMatmuls: creating M = ", m, " [", n, ", ", k, "]"));
  }
}

absl::StatusOr<std::shared_ptr<const FixedMatmuls::Bucket>> FixedMatmuls::Get(int64_t m) const {
  if (m <= 0 || m % kRowStep != 0 || m > kMaxRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FixedMatmuls: m = ", m, " must be a positive multiple of ", kRowStep, " up to ", kMaxRows));
  }
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const Bucket>& slot = buckets_[m / kRowStep - 1];
  if (slot == nullptr) {
    // Once per bucket for the life of the Linear; holding the lock keeps a
    // concurrent first call from building the same primitive twice.
    ASSIGN_OR_RETURN(slot, Make(m));
    ++created_;
  }
  return slot;
}

absl::Status FixedMatmuls::Run(const float* x, int64_t m, float* y) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const Bucket> b, Get(m));
  const DnnlContext& ctx = DnnlContext::Get();
  try {
    // bf16 weights take bf16 rows: rounded into the front of this thread's
    // scratch buffer, oneDNN's scratchpad after them.
    const size_t src_bytes =
        SourceType() == Dt::bf16 ? (static_cast<size_t>(m * w_.k()) * sizeof(uint16_t) + 63) / 64 * 64 : 0;
    auto* buffer = static_cast<std::byte*>(ctx.ThreadScratch(src_bytes + b->scratchpad_md.get_size()));
    void* src_data = const_cast<float*>(x);
    if (src_bytes > 0) {
      RoundRowsToBf16(x, reinterpret_cast<uint16_t*>(buffer), m * w_.k());
      src_data = buffer;
    }
    memory src(memory::desc({m, w_.k()}, SourceType(), Tag::ab), ctx.engine(), src_data);
    memory dst(memory::desc({m, w_.n()}, Dt::f32, Tag::ab), ctx.engine(), y);
    memory scratch(b->scratchpad_md, ctx.engine(), buffer + src_bytes);
    dnnl::stream& stream = ctx.ThreadStream();
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_WEIGHTS, weights_},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (bias_ != nullptr) args.emplace(DNNL_ARG_BIAS, bias_mem_);
    b->prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, "FixedMatmuls::Run");
  }
  return absl::OkStatus();
}

dnnl::memory::data_type FixedMatmuls::SourceType() const {
  return w_.storage() == DType::kBF16 ? Dt::bf16 : Dt::f32;
}

absl::Status FixedMatmuls::CreateAllBuckets() const {
  for (int64_t m = kRowStep; m <= kMaxRows; m += kRowStep) {
    RETURN_IF_ERROR(Get(m).status());
  }
  return absl::OkStatus();
}

int64_t FixedMatmuls::created() const {
  absl::MutexLock lock(&mu_);
  return created_;
}

absl::StatusOr<std::string> FixedMatmuls::ImplName(int64_t m) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const Bucket> b, Get(m));
  return b->impl;
}

}  // namespace attnserve
