// linear_bench [--rows 1,4,16,512]: Linear::Forward at the decoder's shapes
// (SmolLM-135M: qkv 960x576, o 576x576, gate_up 3072x576, down 576x1536,
// lm head 49152x576) against a plain oneDNN matmul with its preferred weight
// layout ("any"), f32 and bf16 weights; prints JSON lines with GFLOP/s and
// the weight-read GB/s. For tuning the packed kernel's M threshold.
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

double DnnlAny(const Tensor& w, int64_t m, const std::vector<float>& x, std::vector<float>& y) {
  using dnnl::memory;
  using Tag = memory::format_tag;
  using Dt = memory::data_type;
  const auto& ctx = DnnlContext::Get();
  const int64_t n = w.dim(0), k = w.dim(1);
  memory::desc src_md({DNNL_RUNTIME_DIM_VAL, k}, Dt::f32, Tag::ab);
  memory::desc w_md({k, n}, Dt::f32, Tag::any);
  memory::desc dst_md({DNNL_RUNTIME_DIM_VAL, n}, Dt::f32, Tag::ab);
  dnnl::matmul::primitive_desc pd(ctx.engine(), src_md, w_md, dst_md);
  memory user_w(memory::desc({k, n}, Dt::f32, Tag::ba), ctx.engine(), const_cast<void*>(w.raw()));
  memory wm(pd.weights_desc(), ctx.engine());
  dnnl::stream& s = ctx.ThreadStream();
  dnnl::reorder(user_w, wm).execute(s, user_w, wm);
  s.wait();
  dnnl::matmul prim(pd);
  return TimeIt(
      [&] {
        memory src(memory::desc({m, k}, Dt::f32, Tag::ab), ctx.engine(), const_cast<float*>(x.data()));
        memory dst(memory::desc({m, n}, Dt::f32, Tag::ab), ctx.engine(), y.data());
        prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst}});
        s.wait();
      },
      0.3);
}

int Main(int argc, char** argv) {
  std::vector<int64_t> rows = {1, 4, 8, 16, 32, 64, 512};
  if (argc > 2 && std::string(argv[1]) == "--rows") {
    rows.clear();
    std::string s = argv[2];
    size_t p = 0;
    while (p < s.size()) {
      size_t q = s.find(',', p);
      if (q == std::string::npos) q = s.size();
      rows.push_back(std::stoll(s.substr(p, q - p)));
      p = q + 1;
    }
  }
  struct Shape { const char* name; int64_t n, k; };
  const Shape shapes[] = {{"qkv", 960, 576}, {"o", 576, 576}, {"gate_up", 3072, 576},
                          {"down", 576, 1536}, {"lm_head", 49152, 576}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Shape& sh : shapes) {
    Tensor w = Tensor::Empty({sh.n, sh.k});
    for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] = u(rng);
    auto f32 = Linear::Create(w, nullptr, DType::kF32);
    auto bf16 = Linear::Create(w, nullptr, DType::kBF16);
    if (!f32.ok() || !bf16.ok()) return 1;
    for (int64_t m : rows) {
      if (sh.n == 49152 && m > 16) continue;
      std::vector<float> x(m * sh.k), y(m * sh.n);
      for (float& v : x) v = u(rng);
      const double t_f32 = TimeIt([&] { (void)f32->Forward(x.data(), m, y.data()); }, 0.3);
      const double t_bf16 = TimeIt([&] { (void)bf16->Forward(x.data(), m, y.data()); }, 0.3);
      const double t_any = DnnlAny(w, m, x, y);
      const double flop = 2.0 * m * sh.n * sh.k;
      std::printf("{\"shape\":\"%s\",\"m\":%lld,\"f32_gflops\":%.1f,\"bf16_gflops\":%.1f,"
                  "\"dnnl_any_gflops\":%.1f,\"f32_weight_gbps\":%.1f,\"bf16_weight_gbps\":%.1f,"
                  "\"dnnl_any_weight_gbps\":%.1f}\n",
                  sh.name, static_cast<long long>(m), flop / t_f32 / 1e9, flop / t_bf16 / 1e9,
                  flop / t_any / 1e9, 4.0 * sh.n * sh.k / t_f32 / 1e9, 2.0 * sh.n * sh.k / t_bf16 / 1e9,
                  4.0 * sh.n * sh.k / t_any / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace attnserve

int main(int argc, char** argv) { return attnserve::Main(argc, argv); }
