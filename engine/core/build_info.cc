#include "engine/core/build_info.h"

#include <omp.h>

#include "absl/strings/str_format.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {
namespace {

std::string IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2_vnni_2: return "avx2_vnni_2";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx10_1_512: return "avx10_1_512";
    case dnnl::cpu_isa::avx10_1_512_amx: return "avx10_1_512_amx";
    case dnnl::cpu_isa::avx10_1_512_amx_fp16: return "avx10_1_512_amx_fp16";
    default: return "other";
  }
}

}  // namespace

EngineInfo GetEngineInfo() {
  const dnnl_version_t* v = dnnl_version();
  EngineInfo info;
  info.onednn_version = absl::StrFormat("%d.%d.%d", v->major, v->minor, v->patch);
  info.cpu_isa = IsaName(dnnl::get_effective_cpu_isa());
  info.threads = omp_get_max_threads();
  return info;
}

void SetEngineThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attnserve
