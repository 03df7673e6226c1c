// What the engine was built with and dispatches to at run time, for logs and
// the attnserve_build_info / attnserve_engine_info metrics.
#ifndef ATTNSERVE_ENGINE_CORE_BUILD_INFO_H_
#define ATTNSERVE_ENGINE_CORE_BUILD_INFO_H_

#include <string>

namespace attnserve {

struct EngineInfo {
  std::string onednn_version;  // "3.7.2"
  std::string cpu_isa;         // the ISA oneDNN dispatches to, e.g. "avx2"
  int threads = 0;             // OpenMP threads the engine uses
};

// Thread-safe; queries oneDNN and OpenMP each call.
EngineInfo GetEngineInfo();

// Sets the engine's thread count (OpenMP, which oneDNN uses) for the calling
// thread only: OpenMP keeps it per thread (engine_thread.h). 0 keeps the
// runtime default (OMP_NUM_THREADS, else all cores). Call on every thread
// that runs engine work, before its first compute.
void SetEngineThreads(int threads);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_BUILD_INFO_H_
