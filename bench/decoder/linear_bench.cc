// linear_bench [--rows 1,4,16,512] [--shapes o,minilm_up]: the candidate kernels of ops/Linear at
// the decoder's shapes (SmolLM-135M: o 576x576, qkv 960x576, up 1536x576,
// gate_up 3072x576, down 576x1536, lm head 49152x576) and MiniLM's (384x384,
// 1536x384, 384x1536), per M; prints one JSON line per (shape, M) with
// GFLOP/s of:
//   linear_f32      Linear::Forward, f32, the kernel it picks ("f32_kernel")
//   packed_f32      the packed AVX2 kernel on the f32 panels (Kernel::kPacked)
//   packed_bf16     Linear::Forward with bf16 storage (packed kernel)
//   dnnl_fixed      a oneDNN matmul with this fixed M on BA16a32b weights
//                   (the layout Linear keeps), and its implementation name
//   dnnl_fixed_any  a oneDNN matmul with this fixed M, weights "any"
//   dnnl_runtime    a oneDNN matmul with a run-time M, weights "any" (the
//                   old f32 path)
// and the weight-read GB/s of linear_f32 and packed_bf16. Minimum of the
// timed runs (the closest to the kernel's own speed on a shared machine).
// For choosing the per-M thresholds in engine/ops/linear_kernels.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/dnnl/context.h"
#include "engine/ops/linear.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double TimeIt(F&& f, double min_seconds) {
  f();
  std::vector<double> v;
  const auto start = Clock::now();
  while (v.size() < 5 || std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    f();
    v.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (v.size() >= 200) break;
  }
  // The minimum: on a shared machine it is the closest to the kernel's own speed.
  return *std::min_element(v.begin(), v.end());
}

struct DnnlResult {
  double seconds;
  std::string impl;
};

// One oneDNN matmul: M fixed (m) or run-time (m_desc = DNNL_RUNTIME_DIM_VAL),
// weights in `wtag` filled by one reorder from W [N, K].
DnnlResult TimeDnnl(const Tensor& w, int64_t m, bool runtime_m, dnnl::memory::format_tag wtag,
                    const std::vector<float>& x, std::vector<float>& y) {
  using dnnl::memory;
  using Tag = memory::format_tag;
  using Dt = memory::data_type;
  const auto& ctx = DnnlContext::Get();
  const int64_t n = w.dim(0), k = w.dim(1);
  const int64_t md = runtime_m ? DNNL_RUNTIME_DIM_VAL : m;
  memory::desc src_md({md, k}, Dt::f32, Tag::ab);
  memory::desc w_md({k, n}, Dt::f32, wtag);
  memory::desc dst_md({md, n}, Dt::f32, Tag::ab);
  dnnl::matmul::primitive_desc pd(ctx.engine(), src_md, w_md, dst_md);
  memory user_w(memory::desc({k, n}, Dt::f32, Tag::ba), ctx.engine(), const_cast<void*>(w.raw()));
  memory wm(pd.weights_desc(), ctx.engine());
  dnnl::stream& s = ctx.ThreadStream();
  dnnl::reorder(user_w, wm).execute(s, user_w, wm);
  s.wait();
  dnnl::matmul prim(pd);
  memory src(memory::desc({m, k}, Dt::f32, Tag::ab), ctx.engine(), const_cast<float*>(x.data()));
  memory dst(memory::desc({m, n}, Dt::f32, Tag::ab), ctx.engine(), y.data());
  const double t = TimeIt(
      [&] {
        prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst}});
        s.wait();
      },
      0.2);
  return {t, pd.impl_info_str()};
}

int Main(int argc, char** argv) {
  std::vector<int64_t> rows = {1, 2, 4, 8, 16, 32, 64, 128, 512};
  std::vector<std::string> only;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    size_t p = 0;
    while (p < s.size()) {
      size_t q = s.find(',', p);
      if (q == std::string::npos) q = s.size();
      out.push_back(s.substr(p, q - p));
      p = q + 1;
    }
    return out;
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rows") {
      rows.clear();
      for (const std::string& r : split(argv[i + 1])) rows.push_back(std::stoll(r));
    } else if (flag == "--shapes") {
      only = split(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  struct Shape { const char* name; int64_t n, k; };
  const Shape shapes[] = {{"o", 576, 576},          {"qkv", 960, 576},
                          {"up", 1536, 576},        {"gate_up", 3072, 576},
                          {"down", 576, 1536},      {"lm_head", 49152, 576},
                          {"minilm_qkv1", 384, 384}, {"minilm_up", 1536, 384},
                          {"minilm_down", 384, 1536}};
  using Tag = dnnl::memory::format_tag;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Shape& sh : shapes) {
    if (!only.empty() && std::find(only.begin(), only.end(), sh.name) == only.end()) continue;
    Tensor w = Tensor::Empty({sh.n, sh.k});
    for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] = u(rng);
    auto f32 = Linear::Create(w, nullptr, DType::kF32);
    auto packed = Linear::Create(w, nullptr, DType::kF32, Activation::kNone, Linear::Kernel::kPacked);
    auto bf16 = Linear::Create(w, nullptr, DType::kBF16);
    if (!f32.ok() || !packed.ok() || !bf16.ok()) return 1;
    for (int64_t m : rows) {
      if (sh.n == 49152 && m > 16) continue;
      std::vector<float> x(m * sh.k), y(m * sh.n);
      for (float& v : x) v = u(rng);
      const double t_f32 = TimeIt([&] { (void)f32->Forward(x.data(), m, y.data()); }, 0.2);
      const double t_packed = TimeIt([&] { (void)packed->Forward(x.data(), m, y.data()); }, 0.2);
      const double t_bf16 = TimeIt([&] { (void)bf16->Forward(x.data(), m, y.data()); }, 0.2);
      const DnnlResult fixed = TimeDnnl(w, m, false, Tag::BA16a32b, x, y);
      const DnnlResult fixed_any = TimeDnnl(w, m, false, Tag::any, x, y);
      const DnnlResult runtime = TimeDnnl(w, m, true, Tag::any, x, y);
      const double flop = 2.0 * m * sh.n * sh.k;
      const double gf = flop / 1e9;
      std::printf("{\"shape\":\"%s\",\"n\":%lld,\"k\":%lld,\"m\":%lld,\"f32_kernel\":\"%s\","
                  "\"linear_f32\":%.1f,\"packed_f32\":%.1f,\"packed_bf16\":%.1f,"
                  "\"dnnl_fixed\":%.1f,\"dnnl_fixed_impl\":\"%s\",\"dnnl_fixed_any\":%.1f,"
                  "\"dnnl_fixed_any_impl\":\"%s\",\"dnnl_runtime\":%.1f,\"dnnl_runtime_impl\":\"%s\","
                  "\"linear_f32_weight_gbps\":%.1f,\"packed_bf16_weight_gbps\":%.1f}\n",
                  sh.name, static_cast<long long>(sh.n), static_cast<long long>(sh.k),
                  static_cast<long long>(m), f32->KernelFor(m).c_str(), gf / t_f32, gf / t_packed,
                  gf / t_bf16, gf / fixed.seconds, fixed.impl.c_str(), gf / fixed_any.seconds,
                  fixed_any.impl.c_str(), gf / runtime.seconds, runtime.impl.c_str(),
                  4.0 * sh.n * sh.k / t_f32 / 1e9, 2.0 * sh.n * sh.k / t_bf16 / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) { return attnserve::Main(argc, argv); }
