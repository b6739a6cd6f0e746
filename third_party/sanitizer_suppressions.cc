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

#include "third_party/sanitizer_suppressions.h"

extern "C" const char* __tsan_default_suppressions() {
  return BREAKER_SYSTEM_LIBRARY_TSAN_SUPPRESSIONS;
}
