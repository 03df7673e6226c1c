#include "engine/ops/linear.h"

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/log/check.h"
#include "absl/strings/str_cat.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/dnnl/context.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;
using Dt = dnnl::memory::data_type;

// f32 weights: one oneDNN matmul primitive (run-time M), built at Create,
// with the weights reordered once into the layout it prefers.
struct DnnlMatmul {
  dnnl::matmul prim;
  memory weights;  // owned, the primitive's preferred layout
  memory bias;     // [1, N] f32, wraps Impl::bias
  memory::desc scratchpad_md;
};

struct Linear::Impl {
  int64_t k = 0;
  int64_t n = 0;
  Activation act = Activation::kNone;
  DType storage = DType::kF32;
  std::optional<PackedMatrix> packed;  // bf16 storage, or Kernel::kPacked
  std::optional<DnnlMatmul> dnnl;      // f32 storage, Kernel::kAuto
  std::vector<float> bias;             // [N] or empty
  int64_t held_bytes = 0;
};

namespace {

dnnl::primitive_attr MakeAttr(Activation act) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
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

// Run-time M; weights in "any" layout, filled by one reorder from W [N, K]
// (the logical [K, N] matrix in "ba").
DnnlMatmul MakeDnnl(const Tensor& w, Activation act, std::vector<float>& bias) {
  const auto& eng = DnnlContext::Get().engine();
  const int64_t n = w.dim(0), k = w.dim(1);
  memory::desc src_md({DNNL_RUNTIME_DIM_VAL, k}, Dt::f32, Tag::ab);
  memory::desc w_md({k, n}, Dt::f32, Tag::any);
  memory::desc dst_md({DNNL_RUNTIME_DIM_VAL, n}, Dt::f32, Tag::ab);
  dnnl::primitive_attr attr = MakeAttr(act);
  DnnlMatmul d;
  dnnl::matmul::primitive_desc pd;
  if (!bias.empty()) {
    memory::desc b_md({1, n}, Dt::f32, Tag::ab);
    pd = dnnl::matmul::primitive_desc(eng, src_md, w_md, b_md, dst_md, attr);
    d.bias = memory(b_md, eng, bias.data());
  } else {
    pd = dnnl::matmul::primitive_desc(eng, src_md, w_md, dst_md, attr);
  }
  const Dt src_dt = w.dtype() == DType::kF32 ? Dt::f32 : w.dtype() == DType::kBF16 ? Dt::bf16 : Dt::f16;
  memory user_w(memory::desc({k, n}, src_dt, Tag::ba), eng, const_cast<void*>(w.raw()));
  d.weights = memory(pd.weights_desc(), eng);
  dnnl::stream& stream = DnnlContext::Get().ThreadStream();
  dnnl::reorder(user_w, d.weights).execute(stream, user_w, d.weights);
  stream.wait();
  d.prim = dnnl::matmul(pd);
  d.scratchpad_md = pd.scratchpad_desc();
  return d;
}

}  // namespace

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;
Linear::~Linear() = default;

absl::StatusOr<Linear> Linear::Create(const Tensor& weight, const Tensor* bias, DType storage,
                                      Activation act, Kernel kernel) {
  if (weight.rank() != 2 || weight.dim(0) <= 0 || weight.dim(1) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear weight must be [N, K] with N, K > 0, got ", weight.DebugString()));
  }
  if (storage != DType::kF32 && storage != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear storage must be f32 or bf16, got ", DTypeName(storage)));
  }
  auto impl = std::make_unique<Impl>();
  impl->n = weight.dim(0);
  impl->k = weight.dim(1);
  impl->act = act;
  if (bias != nullptr) {
    if (bias->rank() != 1 || bias->dim(0) != impl->n) {
      return absl::InvalidArgumentError(
          absl::StrCat("Linear bias must be [", impl->n, "], got ", bias->DebugString()));
    }
    impl->bias.resize(impl->n);
    for (int64_t i = 0; i < impl->n; ++i) {
      switch (bias->dtype()) {
        case DType::kF32: impl->bias[i] = bias->f32()[i]; break;
        case DType::kBF16: impl->bias[i] = Bf16ToFloat(bias->u16()[i]); break;
        case DType::kF16: impl->bias[i] = F16ToFloat(bias->u16()[i]); break;
      }
    }
  }
  impl->storage = storage;
  if (storage == DType::kBF16 || kernel == Kernel::kPacked) {
    impl->packed.emplace(PackedMatrix::Pack(weight, storage));
    impl->held_bytes = impl->packed->bytes();
  } else {
    try {
      impl->dnnl.emplace(MakeDnnl(weight, impl->act, impl->bias));
      impl->held_bytes = static_cast<int64_t>(impl->dnnl->weights.get_desc().get_size());
    } catch (const dnnl::error& e) {
      return DnnlErrorToStatus(e, absl::StrCat("Linear::Create [", impl->n, ", ", impl->k, "]"));
    }
  }
  impl->held_bytes += static_cast<int64_t>(impl->bias.size() * sizeof(float));
  return Linear(std::move(impl));
}

absl::Status Linear::Forward(const float* x, int64_t m, float* y) const {
  if (m < 0) return absl::InvalidArgumentError(absl::StrCat("Linear::Forward: m = ", m));
  if (m == 0) return absl::OkStatus();
  const Impl& im = *impl_;
  if (im.packed.has_value()) {
    PackedGemm(x, m, im.k, *im.packed, im.bias.empty() ? nullptr : im.bias.data(), im.act, y, im.n);
    return absl::OkStatus();
  }
  const DnnlContext& ctx = DnnlContext::Get();
  try {
    memory src(memory::desc({m, im.k}, Dt::f32, Tag::ab), ctx.engine(), const_cast<float*>(x));
    memory dst(memory::desc({m, im.n}, Dt::f32, Tag::ab), ctx.engine(), y);
    memory scratch(im.dnnl->scratchpad_md, ctx.engine(),
                   ctx.ThreadScratch(im.dnnl->scratchpad_md.get_size()));
    dnnl::stream& stream = ctx.ThreadStream();
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_WEIGHTS, im.dnnl->weights},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (!im.bias.empty()) args.emplace(DNNL_ARG_BIAS, im.dnnl->bias);
    im.dnnl->prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, "Linear::Forward");
  }
  return absl::OkStatus();
}

void Linear::ReadRow(int64_t r, float* out) const {
  CHECK(impl_->packed.has_value()) << "Linear::ReadRow needs the packed kernel";
  impl_->packed->ReadRow(r, out);
}

int64_t Linear::in_features() const { return impl_->k; }
int64_t Linear::out_features() const { return impl_->n; }
int64_t Linear::weight_bytes() const { return impl_->held_bytes; }
DType Linear::storage() const { return impl_->storage; }

}  // namespace attnserve
