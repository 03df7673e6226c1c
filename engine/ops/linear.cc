#include "engine/ops/linear.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/dnnl/context.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;
using Dt = dnnl::memory::data_type;

struct Linear::Impl {
  int64_t k = 0;
  int64_t n = 0;
  DType storage = DType::kF32;
  bool has_bias = false;
  dnnl::matmul prim;
  memory weights;  // reordered once into the primitive's preferred layout
  memory bias;     // [1, N] f32
  memory::desc scratchpad_md;
  int64_t held_bytes = 0;
};

namespace {

Dt ToDnnl(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Dt::f32;
    case DType::kBF16: return Dt::bf16;
    case DType::kF16: return Dt::f16;
  }
  return Dt::undef;
}

dnnl::primitive_attr MakeAttr(Activation act, bool bf16_weights) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (bf16_weights) attr.set_fpmath_mode(dnnl::fpmath_mode::bf16, true);
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

// Builds the primitive descriptor: run-time M, weights in "any" layout.
dnnl::matmul::primitive_desc MakePd(int64_t k, int64_t n, Dt weight_dt, bool has_bias,
                                    Activation act) {
  const auto& eng = DnnlContext::Get().engine();
  memory::desc src_md({DNNL_RUNTIME_DIM_VAL, k}, Dt::f32, Tag::ab);
  memory::desc w_md({k, n}, weight_dt, Tag::any);
  memory::desc dst_md({DNNL_RUNTIME_DIM_VAL, n}, Dt::f32, Tag::ab);
  dnnl::primitive_attr attr = MakeAttr(act, weight_dt != Dt::f32);
  if (has_bias) {
    memory::desc b_md({1, n}, Dt::f32, Tag::ab);
    return dnnl::matmul::primitive_desc(eng, src_md, w_md, b_md, dst_md, attr);
  }
  return dnnl::matmul::primitive_desc(eng, src_md, w_md, dst_md, attr);
}

}  // namespace

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;
Linear::~Linear() = default;

absl::StatusOr<Linear> Linear::Create(const Tensor& weight, const Tensor* bias, DType storage,
                                      Activation act) {
  if (weight.rank() != 2 || weight.dim(0) <= 0 || weight.dim(1) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear weight must be [N, K] with N, K > 0, got ", weight.DebugString()));
  }
  if (weight.dtype() == DType::kF16 || storage == DType::kF16) {
    return absl::InvalidArgumentError("Linear supports f32 and bf16 weights, not f16");
  }
  auto impl = std::make_unique<Impl>();
  impl->n = weight.dim(0);
  impl->k = weight.dim(1);
  if (bias != nullptr) {
    if (bias->rank() != 1 || bias->dim(0) != impl->n || bias->dtype() == DType::kF16) {
      return absl::InvalidArgumentError(absl::StrCat("Linear bias must be [", impl->n,
                                                     "] f32 or bf16, got ", bias->DebugString()));
    }
    impl->has_bias = true;
  }
  const auto& eng = DnnlContext::Get().engine();
  try {
    dnnl::matmul::primitive_desc pd;
    impl->storage = storage;
    if (storage == DType::kBF16) {
      try {
        pd = MakePd(impl->k, impl->n, Dt::bf16, impl->has_bias, act);
      } catch (const dnnl::error&) {
        // No f32 x bf16 matmul on this CPU: keep f32 (documented fallback).
        impl->storage = DType::kF32;
      }
    }
    if (impl->storage == DType::kF32) pd = MakePd(impl->k, impl->n, Dt::f32, impl->has_bias, act);

    dnnl::stream& stream = DnnlContext::Get().ThreadStream();
    // The user's weights [N, K] row-major are the logical [K, N] matrix in "ba".
    memory::desc user_w_md({impl->k, impl->n}, ToDnnl(weight.dtype()), Tag::ba);
    memory user_w(user_w_md, eng, const_cast<void*>(weight.raw()));
    impl->weights = memory(pd.weights_desc(), eng);
    dnnl::reorder(user_w, impl->weights).execute(stream, user_w, impl->weights);
    impl->held_bytes = static_cast<int64_t>(pd.weights_desc().get_size());
    if (impl->has_bias) {
      memory::desc user_b_md({1, impl->n}, ToDnnl(bias->dtype()), Tag::ab);
      memory user_b(user_b_md, eng, const_cast<void*>(bias->raw()));
      impl->bias = memory(memory::desc({1, impl->n}, Dt::f32, Tag::ab), eng);
      dnnl::reorder(user_b, impl->bias).execute(stream, user_b, impl->bias);
      impl->held_bytes += impl->n * 4;
    }
    stream.wait();
    impl->prim = dnnl::matmul(pd);
    impl->scratchpad_md = pd.scratchpad_desc();
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, absl::StrCat("Linear::Create [", impl->n, ", ", impl->k, "]"));
  }
  return Linear(std::move(impl));
}

absl::Status Linear::Forward(const float* x, int64_t m, float* y) const {
  if (m < 0) return absl::InvalidArgumentError(absl::StrCat("Linear::Forward: m = ", m));
  if (m == 0) return absl::OkStatus();
  const DnnlContext& ctx = DnnlContext::Get();
  try {
    memory src(memory::desc({m, impl_->k}, Dt::f32, Tag::ab), ctx.engine(), const_cast<float*>(x));
    memory dst(memory::desc({m, impl_->n}, Dt::f32, Tag::ab), ctx.engine(), y);
    memory scratch(impl_->scratchpad_md, ctx.engine(),
                   ctx.ThreadScratch(impl_->scratchpad_md.get_size()));
    dnnl::stream& stream = ctx.ThreadStream();
    if (impl_->has_bias) {
      impl_->prim.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_WEIGHTS, impl_->weights},
                                   {DNNL_ARG_BIAS, impl_->bias},
                                   {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_SCRATCHPAD, scratch}});
    } else {
      impl_->prim.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_WEIGHTS, impl_->weights},
                                   {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_SCRATCHPAD, scratch}});
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, "Linear::Forward");
  }
  return absl::OkStatus();
}

int64_t Linear::in_features() const { return impl_->k; }
int64_t Linear::out_features() const { return impl_->n; }
int64_t Linear::weight_bytes() const { return impl_->held_bytes; }
DType Linear::storage() const { return impl_->storage; }

}  // namespace attnserve
