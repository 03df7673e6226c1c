// The one oneDNN CPU engine of the process, per-thread streams and per-thread
// scratchpads. Built once on first use and immutable afterwards (the engine
// handle is thread-safe in oneDNN); the only mutable state is thread_local,
// so concurrent callers on different threads never share a stream or a
// scratchpad.
#ifndef ATTNSERVE_ENGINE_DNNL_CONTEXT_H_
#define ATTNSERVE_ENGINE_DNNL_CONTEXT_H_

#include <cstddef>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace attnserve {

class DnnlContext {
 public:
  // The process-wide context; thread-safe (function-local static).
  static const DnnlContext& Get();

  const dnnl::engine& engine() const { return engine_; }
  // A stream owned by the calling thread, created on its first call.
  dnnl::stream& ThreadStream() const;
  // A 64-byte-aligned scratch buffer owned by the calling thread, grown as
  // needed; valid until the next call on this thread. Primitives run with
  // scratchpad_mode::user and get their scratchpad from here, so two threads
  // executing the same primitive never share one.
  void* ThreadScratch(size_t bytes) const;

 private:
  DnnlContext();
  dnnl::engine engine_;
};

// Converts a dnnl::error into a Status naming what was being done.
absl::Status DnnlErrorToStatus(const dnnl::error& e, absl::string_view what);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_DNNL_CONTEXT_H_
