#include "bench/attention/onednn_matmul_sdpa.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/attention/avx2_math.h"
#include "engine/dnnl/context.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve::bench {

using dnnl::memory;

struct MatmulSdpa::Impl {
  int batch, heads, kv_heads, nq, nk, d;
  memory::desc q_md, kt_md, s_md, v_md, o_md;
  dnnl::matmul qk, pv;
  size_t scratch_bytes = 0;
};

MatmulSdpa::~MatmulSdpa() = default;

std::unique_ptr<MatmulSdpa> MatmulSdpa::Create(int batch, int heads, int kv_heads, int q_len,
                                               int kv_len, int head_dim, std::string* why) {
  try {
    auto impl = std::make_unique<Impl>();
    *impl = Impl{batch, heads, kv_heads, q_len, kv_len, head_dim, {}, {}, {}, {}, {}, {}, {}, 0};
    const auto f32 = memory::data_type::f32;
    const memory::dim nq = q_len, nk = kv_len, d = head_dim;
    impl->q_md = memory::desc({nq, d}, f32, memory::dims{d, 1});
    impl->kt_md = memory::desc({d, nk}, f32, memory::dims{1, d});  // K [Nk, d] read as Kᵀ
    impl->s_md = memory::desc({nq, nk}, f32, memory::dims{nk, 1});
    impl->v_md = memory::desc({nk, d}, f32, memory::dims{d, 1});
    impl->o_md = memory::desc({nq, d}, f32, memory::dims{d, 1});
    const auto& eng = DnnlContext::Get().engine();
    dnnl::primitive_attr qk_attr;
    dnnl::post_ops ops;
    ops.append_eltwise(dnnl::algorithm::eltwise_linear, 1.0f / std::sqrt(static_cast<float>(d)),
                       0.0f);
    qk_attr.set_post_ops(ops);
    qk_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::primitive_attr pv_attr;
    pv_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc qk_pd(eng, impl->q_md, impl->kt_md, impl->s_md, qk_attr);
    dnnl::matmul::primitive_desc pv_pd(eng, impl->s_md, impl->v_md, impl->o_md, pv_attr);
    impl->scratch_bytes = std::max({qk_pd.scratchpad_desc().get_size(),
                                    pv_pd.scratchpad_desc().get_size(), size_t{64}});
    impl->qk = dnnl::matmul(qk_pd);
    impl->pv = dnnl::matmul(pv_pd);
    auto r = std::unique_ptr<MatmulSdpa>(new MatmulSdpa());
    r->impl_ = std::move(impl);
    return r;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return nullptr;
  }
}

namespace {

// Row softmax in place over n scores (AVX2 exp, the same one our kernel uses).
__attribute__((target("avx2,fma"))) void SoftmaxRow(float* s, int n) {
  __m256 mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int j = 0;
  for (; j + 8 <= n; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
  alignas(32) float l[8];
  _mm256_store_ps(l, mx);
  float m = l[0];
  for (int t = 1; t < 8; ++t) m = std::max(m, l[t]);
  for (; j < n; ++j) m = std::max(m, s[j]);
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 e = attention_internal::ExpNonPositive8(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  _mm256_store_ps(l, acc);
  float sum = l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - m);
    sum += s[j];
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(inv, _mm256_loadu_ps(s + j)));
  for (; j < n; ++j) s[j] /= sum;
}

}  // namespace

void MatmulSdpa::Run(const float* q, const float* k, const float* v, float* out) {
  const Impl& m = *impl_;
  const auto& eng = DnnlContext::Get().engine();
  const int64_t jobs = int64_t{m.batch} * m.heads;
  const int group = m.heads / m.kv_heads;
  const int64_t qo_head = int64_t{m.nq} * m.d, kv_head = int64_t{m.nk} * m.d;
#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(m.nq) * m.nk);
    dnnl::stream& st = DnnlContext::Get().ThreadStream();
    void* scratch = DnnlContext::Get().ThreadScratch(m.scratch_bytes);
    memory::desc sp_md({static_cast<memory::dim>(m.scratch_bytes)}, memory::data_type::u8,
                       memory::format_tag::a);
    memory sp(sp_md, eng, scratch);
    memory mq(m.q_md, eng, nullptr), mk(m.kt_md, eng, nullptr), ms(m.s_md, eng, s.data());
    memory mv(m.v_md, eng, nullptr), mo(m.o_md, eng, nullptr);
#pragma omp for schedule(dynamic)
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t b = job / m.heads, h = job % m.heads, hk = b * m.kv_heads + h / group;
      mq.set_data_handle(const_cast<float*>(q + job * qo_head));
      mk.set_data_handle(const_cast<float*>(k + hk * kv_head));
      mv.set_data_handle(const_cast<float*>(v + hk * kv_head));
      mo.set_data_handle(out + job * qo_head);
      m.qk.execute(st, {{DNNL_ARG_SRC, mq}, {DNNL_ARG_WEIGHTS, mk}, {DNNL_ARG_DST, ms},
                        {DNNL_ARG_SCRATCHPAD, sp}});
      st.wait();
      for (int i = 0; i < m.nq; ++i) SoftmaxRow(s.data() + int64_t{i} * m.nk, m.nk);
      m.pv.execute(st, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mv}, {DNNL_ARG_DST, mo},
                        {DNNL_ARG_SCRATCHPAD, sp}});
      st.wait();
    }
  }
}

}  // namespace attnserve::bench
