// ThreadSanitizer reads this hook at start-up. The system's Abseil and gRPC libraries (with
// upb, which gRPC encodes its own messages with) are not built with -fsanitize=thread, so their
// own synchronization (futexes, lock-free queues) is invisible to it and shows up as races
// inside those libraries, and inside OpenSSL's, whose
// TLS buffers gRPC hands between its threads under those locks. Debian's cpp-httplib is a
// compiled library too (libcpp-httplib.so): its server's worker threads show races whose every
// frame lies inside it (its buffers compared and copied by memcmp and memcpy, the only accesses
// TSan sees there). Races that involve a frame of
// this project's code are still reported, but for one: gRPC's sync client hands a call's
// status over from its own threads through code inlined into our binaries
// (CallOpClientRecvStatus::FinishOp), synchronized inside the uninstrumented library.
// And one more that no library's name can catch: a channel's arguments, made by the thread that
// starts a call, are read by gRPC's timer or event-engine thread, handed over under gRPC's own
// locks. The read's stack holds nothing but libstdc++'s string copy (no frame of ours: those
// threads run no instrumented code) and the write's cannot be restored. It is suppressed by
// that copy's name, so a race whose one side is a string copy-assignment goes unreported too;
// TSan's deduplication by address (see BREAKER_TSAN_DEFAULT_OPTIONS) used to hide this one in
// part, and real races with it.

#include "third_party/sanitizer_suppressions.h"

extern "C" const char* __tsan_default_suppressions() {
  return BREAKER_SYSTEM_LIBRARY_TSAN_SUPPRESSIONS;
}

extern "C" const char* __tsan_default_options() { return BREAKER_TSAN_DEFAULT_OPTIONS; }
