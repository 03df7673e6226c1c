#include "engine/ops/linear.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/half.h"
#include "engine/core/status_macros.h"
#include "engine/ops/fixed_matmul.h"
#include "engine/ops/linear_kernels.h"

namespace attnserve {
namespace {

std::atomic<int64_t> dnnl_min_macs{kDnnlMinMacs};

}  // namespace

struct Linear::Impl {
  int64_t k = 0;
  int64_t n = 0;
  Activation act = Activation::kNone;
  DType storage = DType::kF32;
  PackedMatrix packed;                  // the one copy of the weights
  std::vector<float> bias;              // [N] or empty
  std::unique_ptr<FixedMatmuls> dnnl;   // f32 + Kernel::kAuto (null if unusable)
  int64_t dnnl_min_rows = 0;            // M at which rows go to oneDNN
  int64_t held_bytes = 0;

  const float* bias_or_null() const { return bias.empty() ? nullptr : bias.data(); }
};

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;
Linear::~Linear() = default;

absl::StatusOr<Linear> Linear::Create(const Tensor& weight, const Tensor* bias, DType storage,
                                      Activation act, Kernel kernel,
                                      MatmulPrecision precision) {
  if (weight.rank() != 2 || weight.dim(0) <= 0 || weight.dim(1) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear weight must be [N, K] with N, K > 0, got ", weight.DebugString()));
  }
  if (storage != DType::kF32 && storage != DType::kBF16 && storage != DType::kQ8_0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Linear storage must be f32, bf16 or q8_0, got ", DTypeName(storage)));
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
        case DType::kQ8_0: return absl::InvalidArgumentError("Linear bias cannot be q8_0");
      }
    }
  }
  impl->storage = storage;
  impl->packed = PackedMatrix::Pack(weight, storage);
  impl->held_bytes = impl->packed.bytes() + static_cast<int64_t>(impl->bias.size() * sizeof(float));
  impl->dnnl_min_rows = DnnlMinRows(storage, precision);
  // q8_0 panels are read by the packed kernel alone (oneDNN has no such
  // weights on these CPUs).
  if (kernel == Kernel::kAuto && storage != DType::kQ8_0 &&
      (storage == DType::kF32 || precision == MatmulPrecision::kBf16)) {
    // The primitives read impl->packed and impl->bias in place; both live in
    // the heap-allocated Impl, so moving the Linear keeps them valid.
    auto fm = FixedMatmuls::Create(impl->packed, impl->bias_or_null(), act, precision);
    if (fm.ok()) {
      impl->dnnl = *std::move(fm);
    } else if (!absl::IsUnimplemented(fm.status())) {
      return fm.status();
    }
  }
  return Linear(std::move(impl));
}

// Rows [0, m) split as: blocks of FixedMatmuls::kMaxRows, then one block of
// the remaining rows rounded down to kRowStep (both oneDNN, fixed M), then a
// tail of < kRowStep rows on the packed kernel; below dnnl_min_rows rows or
// kDnnlMinMacs multiply-adds everything is packed. All of them read the same
// packed weights.
absl::Status Linear::Forward(const float* x, int64_t m, float* y) const {
  if (m < 0) return absl::InvalidArgumentError(absl::StrCat("Linear::Forward: m = ", m));
  const Impl& im = *impl_;
  int64_t done = 0;
  if (UsesDnnl(m)) {
    while (m - done >= FixedMatmuls::kRowStep) {
      const int64_t rows = std::min(FixedMatmuls::kMaxRows,
                                    (m - done) / FixedMatmuls::kRowStep * FixedMatmuls::kRowStep);
      RETURN_IF_ERROR(im.dnnl->Run(x + done * im.k, rows, y + done * im.n));
      done += rows;
    }
  }
  if (done < m) {
    PackedGemm(x + done * im.k, m - done, im.k, im.packed, im.bias_or_null(), im.act,
               y + done * im.n, im.n);
  }
  return absl::OkStatus();
}

bool Linear::UsesDnnl(int64_t m) const {
  const Impl& im = *impl_;
  return im.dnnl != nullptr && m >= im.dnnl_min_rows && m >= FixedMatmuls::kRowStep &&
         m * im.n * im.k >= dnnl_min_macs.load(std::memory_order_relaxed);
}

void Linear::SetDnnlMinMacsForTesting(int64_t macs) { dnnl_min_macs.store(macs); }
void Linear::ResetDnnlMinMacsForTesting() { dnnl_min_macs.store(kDnnlMinMacs); }

void Linear::ReadRow(int64_t r, float* out) const { impl_->packed.ReadRow(r, out); }

int64_t Linear::in_features() const { return impl_->k; }
int64_t Linear::out_features() const { return impl_->n; }
int64_t Linear::weight_bytes() const { return impl_->held_bytes; }
DType Linear::storage() const { return impl_->storage; }

int64_t Linear::primitives_created() const {
  return impl_->dnnl == nullptr ? 0 : impl_->dnnl->created();
}

absl::Status Linear::CreateAllPrimitives() const {
  return impl_->dnnl == nullptr ? absl::OkStatus() : impl_->dnnl->CreateAllBuckets();
}

std::string Linear::KernelFor(int64_t m) const {
  const Impl& im = *impl_;
  if (!UsesDnnl(m)) {
    // (f32 layers with K > FixedMatmuls::kMaxK on an AVX2 CPU land here at
    // every M.)
    return absl::StrCat("packed_", PackedGemmKernel(im.storage), "_", DTypeName(im.storage));
  }
  const int64_t rows = std::min(FixedMatmuls::kMaxRows, m / FixedMatmuls::kRowStep * FixedMatmuls::kRowStep);
  auto name = im.dnnl->ImplName(rows);
  return absl::StrCat("onednn_fixed_m", rows, ":", name.ok() ? *name : name.status().ToString(),
                      m % FixedMatmuls::kRowStep != 0 ? "+packed_tail" : "");
}

}  // namespace attnserve
