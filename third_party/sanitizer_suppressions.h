#ifndef THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_
#define THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_

// ThreadSanitizer's suppressions for the prebuilt system libraries (see
// sanitizer_suppressions.cc, which explains them), for a binary that adds its own.
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
  "deadlock:libabsl_\n"                                \
  "deadlock:libgrpc\n"

#endif  // THIRD_PARTY_SANITIZER_SUPPRESSIONS_H_
