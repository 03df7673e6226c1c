#include "engine/dnnl/context.h"

#include <cstdlib>
#include <memory>

#include "absl/log/check.h"
#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

struct ThreadState {
  std::unique_ptr<dnnl::stream> stream;
  std::unique_ptr<void, FreeDeleter> scratch;
  size_t scratch_bytes = 0;
};

ThreadState& State() {
  thread_local ThreadState state;
  return state;
}

}  // namespace

DnnlContext::DnnlContext() : engine_(dnnl::engine::kind::cpu, 0) {}

const DnnlContext& DnnlContext::Get() {
  static const DnnlContext* const context = new DnnlContext();
  return *context;
}

dnnl::stream& DnnlContext::ThreadStream() const {
  ThreadState& s = State();
  if (!s.stream) s.stream = std::make_unique<dnnl::stream>(engine_);
  return *s.stream;
}

void* DnnlContext::ThreadScratch(size_t bytes) const {
  ThreadState& s = State();
  if (bytes > s.scratch_bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    CHECK(p != nullptr) << "out of memory for a " << rounded << "-byte scratchpad";
    s.scratch.reset(p);
    s.scratch_bytes = rounded;
  }
  return s.scratch.get();
}

absl::Status DnnlErrorToStatus(const dnnl::error& e, absl::string_view what) {
  return absl::InternalError(absl::StrCat("oneDNN error in ", what, ": ", e.what(),
                                          " (status ", static_cast<int>(e.status), ")"));
}

}  // namespace attnserve
