// What the CPU offers, asked once. Every AVX2 kernel in the engine is
// compiled with per-function target attributes and chosen at run time by
// this check, so the library still runs on CPUs without AVX2.
#ifndef ATTNSERVE_ENGINE_CORE_CPU_FEATURES_H_
#define ATTNSERVE_ENGINE_CORE_CPU_FEATURES_H_

namespace attnserve {

// AVX2 and FMA (the pair every AVX2 kernel here needs).
inline bool CpuHasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// AVX-512F (with AVX2 and FMA, which every AVX-512 CPU has).
inline bool CpuHasAvx512F() {
  static const bool has = CpuHasAvx2Fma() && __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_CPU_FEATURES_H_
