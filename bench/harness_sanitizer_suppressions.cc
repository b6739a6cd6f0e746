// ThreadSanitizer's suppressions for the fleet harness: the system libraries' (see
// third_party/sanitizer_suppressions.cc), and one more. Each simulated node opens a new channel
// for every attempt from the harness's scheduler thread, and gRPC's executor thread then reads
// that channel's arguments, handed over under the uninstrumented gRPC's own locks: the read's
// stack holds nothing but libstdc++'s string copy, which the system list cannot name. It is
// suppressed here only, in a benchmark tool, not in breakerd or the client library.

#include "third_party/sanitizer_suppressions.h"

extern "C" const char* __tsan_default_suppressions() {
  return BREAKER_SYSTEM_LIBRARY_TSAN_SUPPRESSIONS
      "race:std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
      ">::_M_assign\n";
}
