#include "bench/attention/onednn_graph_sdpa.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/dnnl/context.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace attnserve::bench {

using dnnl::graph::logical_tensor;
using dnnl::graph::op;
using Dims = logical_tensor::dims;
using Dt = logical_tensor::data_type;
using Lt = logical_tensor::layout_type;

struct GraphSdpa::Impl {
  dnnl::graph::compiled_partition cp;
  logical_tensor q, k, scale, mask, v, out;
  std::vector<float> scale_data, mask_data;
};

GraphSdpa::~GraphSdpa() = default;

std::unique_ptr<GraphSdpa> GraphSdpa::Create(int B, int hq, int hkv, int nq, int nk, int d,
                                             bool causal, std::string* why) {
  try {
    const int64_t rep = hq / hkv;
    const bool gqa = hq != hkv;
    auto impl = std::make_unique<Impl>();
    size_t id = 0;
    Dims q_sz = {B, hq, nq, d}, kv_sz = {B, hkv, nk, d};
    Dims q5 = {B, hkv, rep, nq, d}, kv5 = {B, hkv, 1, nk, d};
    Dims score_sz = gqa ? Dims{B, hkv, rep, nq, nk} : Dims{B, hq, nq, nk};
    Dims mask_sz = causal ? Dims{1, 1, nq, nk} : Dims{B, 1, 1, nk};
    Dims mask5 = causal ? Dims{1, 1, 1, nq, nk} : Dims{B, 1, 1, 1, nk};
    impl->q = logical_tensor(id++, Dt::f32, q_sz, Lt::strided);
    impl->k = logical_tensor(id++, Dt::f32, kv_sz, Lt::strided);
    impl->v = logical_tensor(id++, Dt::f32, kv_sz, Lt::strided);
    impl->scale = logical_tensor(id++, Dt::f32, Dims{1}, Lt::strided);
    impl->mask = logical_tensor(id++, Dt::f32, mask_sz, Lt::strided);
    impl->out = logical_tensor(id++, Dt::f32, q_sz, Lt::strided);
    dnnl::graph::graph g(dnnl::engine::kind::cpu);
    auto reshape = [&](const logical_tensor& in, Dims shape) {
      logical_tensor o(id++, Dt::f32, shape, Lt::strided);
      op r(id++, op::kind::StaticReshape, "reshape");
      r.set_attr(op::attr::shape, shape);
      r.set_attr(op::attr::special_zero, false);
      r.add_inputs({in});
      r.add_outputs({o});
      g.add_op(r);
      return o;
    };
    logical_tensor qq = gqa ? reshape(impl->q, q5) : impl->q;
    logical_tensor kk = gqa ? reshape(impl->k, kv5) : impl->k;
    logical_tensor vv = gqa ? reshape(impl->v, kv5) : impl->v;
    logical_tensor mm = gqa ? reshape(impl->mask, mask5) : impl->mask;
    logical_tensor score(id++, Dt::f32, score_sz, Lt::strided);
    op bmm1(id++, op::kind::MatMul, "bmm1");
    bmm1.set_attr<bool>(op::attr::transpose_b, true);
    bmm1.add_inputs({qq, kk});
    bmm1.add_outputs({score});
    logical_tensor scaled(id++, Dt::f32, score_sz, Lt::strided);
    op div(id++, op::kind::Divide, "scale_div");
    div.add_inputs({score, impl->scale});
    div.add_outputs({scaled});
    logical_tensor masked(id++, Dt::f32, score_sz, Lt::strided);
    op add(id++, op::kind::Add, "mask_add");
    add.add_inputs({scaled, mm});
    add.add_outputs({masked});
    logical_tensor probs(id++, Dt::f32, score_sz, Lt::strided);
    op softmax(id++, op::kind::SoftMax, "softmax");
    softmax.set_attr<int64_t>(op::attr::axis, -1);
    softmax.add_inputs({masked});
    softmax.add_outputs({probs});
    logical_tensor out5(id++, Dt::f32, gqa ? q5 : q_sz, Lt::strided);
    op bmm2(id++, op::kind::MatMul, "bmm2");
    bmm2.add_inputs({probs, vv});
    bmm2.add_outputs({gqa ? out5 : impl->out});
    g.add_op(bmm1);
    g.add_op(div);
    g.add_op(add);
    g.add_op(softmax);
    g.add_op(bmm2);
    if (gqa) {
      op r(id++, op::kind::StaticReshape, "reshape_out");
      r.set_attr(op::attr::shape, q_sz);
      r.set_attr(op::attr::special_zero, false);
      r.add_inputs({out5});
      r.add_outputs({impl->out});
      g.add_op(r);
    }
    g.finalize();
    auto parts = g.get_partitions();
    if (parts.size() != 1) {
      *why = "oneDNN split the SDPA graph into " + std::to_string(parts.size()) + " partitions";
      return nullptr;
    }
    impl->cp = parts[0].compile({impl->q, impl->k, impl->scale, impl->mask, impl->v}, {impl->out},
                                DnnlContext::Get().engine());
    impl->scale_data = {std::sqrt(static_cast<float>(d))};
    int64_t mask_n = 1;
    for (auto x : mask_sz) mask_n *= x;
    impl->mask_data.assign(mask_n, 0.0f);
    if (causal) {
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < nk; ++j)
          if (j > i + nk - nq) impl->mask_data[int64_t{i} * nk + j] = -std::numeric_limits<float>::infinity();
    }
    auto r = std::unique_ptr<GraphSdpa>(new GraphSdpa());
    r->impl_ = std::move(impl);
    return r;
  } catch (const dnnl::error& e) {
    *why = e.what();
    return nullptr;
  }
}

void GraphSdpa::Run(float* q, float* k, float* v, float* out) {
  const auto& eng = DnnlContext::Get().engine();
  using dnnl::graph::tensor;
  tensor tq(impl_->q, eng, q), tk(impl_->k, eng, k), tv(impl_->v, eng, v);
  tensor ts(impl_->scale, eng, impl_->scale_data.data());
  tensor tm(impl_->mask, eng, impl_->mask_data.data());
  tensor to(impl_->out, eng, out);
  dnnl::stream& s = DnnlContext::Get().ThreadStream();
  impl_->cp.execute(s, {tq, tk, ts, tm, tv}, {to});
  s.wait();
}

}  // namespace attnserve::bench
