#ifndef THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_
#define THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_

// ThreadSanitizer's suppressions for the prebuilt system libraries (see
// sanitizer_suppressions.cc, which explains them).
#define BREAKER_SYSTEM_LIBRARY_TSAN_SUPPRESSIONS       \
  "race:libabsl_\n"                                    \
  "race:libgrpc\n"                                     \
  "race:libgpr\n"                                      \
  "race:libupb\n"                                      \
  "race:libprotobuf\n"                                 \
  "race:libcrypto\n"                                   \
  "race:libssl\n"                                      \
  "race:libcpp-httplib\n"                              \
  "race:grpc::internal::CallOpClientRecvStatus::FinishOp\n" \
  "race:std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> " \
  ">::_M_assign\n"                                     \
  "deadlock:libabsl_\n"                                \
  "deadlock:libgrpc\n"

// ThreadSanitizer's options (TSAN_OPTIONS adds to them). By default TSan compares each race's
// address with those of every race it met before, suppressed or not, under a lock of its own,
// to report an address once. The system libraries' suppressed races are met anew at every
// connection a process accepts: in a breakerd taking over from a killed leader that list grew
// to a quarter of a million and its scans took nine tenths of the CPU, in gRPC's own threads,
// so that its calls to etcd missed their deadlines and it lost the lead it had just won.
// Without the check a suppressed race ends as soon as its stack holds a frame a suppression
// matched before; a real race may be reported twice (a test's halt_on_error stops at the first).
#define BREAKER_TSAN_DEFAULT_OPTIONS "suppress_equal_addresses=0"

#endif  // THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_
