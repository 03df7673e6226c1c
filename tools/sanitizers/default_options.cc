// Default ASan / UBSan / LSan options, compiled into every executable of a
// sanitizer build (ATTNSERVE_SANITIZE=ON) so that ctest, a test binary run by
// hand and the server started by the Python integration tests all stop on the
// first finding with a stack, without anyone remembering to export
// ASAN_OPTIONS. The environment still wins: the runtimes parse these first and
// ASAN_OPTIONS / UBSAN_OPTIONS / LSAN_OPTIONS afterwards.
//
// ATTNSERVE_LSAN_SUPPRESSIONS is the absolute path of tools/sanitizers/lsan.supp,
// set by CMake at configure time (so a clone anywhere finds its own file).

extern "C" {

__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  // halt_on_error: the first report ends the process (and fails the test).
  // detect_leaks: LeakSanitizer at exit (the default on x86-64 Linux; stated
  // here so nobody wonders). strict_string_checks / check_initialization_order:
  // cheap checks that are off by default.
  // allow_user_poisoning=0: Abseil's flat_hash_map headers poison empty
  // slots in our instrumented code, and Debian's uninstrumented
  // libabsl_raw_hash_set.so never unpoisons the slot it hands back, so the
  // first insert is a false use-after-poison (KvCache::AddSequence). Ignoring
  // manual poisoning costs nothing else: heap, stack and global checks stay.
  return "halt_on_error=1:detect_leaks=1:print_stacktrace=1:strict_string_checks=1:"
         "check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0:"
         "allow_user_poisoning=0";
}

__attribute__((visibility("default"), used)) const char* __ubsan_default_options() {
  // UBSan prints no stack by default, which makes a report in a 40-layer
  // transformer stack useless.
  return "halt_on_error=1:print_stacktrace=1";
}

__attribute__((visibility("default"), used)) const char* __lsan_default_options() {
  return "suppressions=" ATTNSERVE_LSAN_SUPPRESSIONS ":print_suppressions=0";
}

}  // extern "C"
