// ThreadSanitizer reads this hook at start-up. The system's Abseil and gRPC libraries are not
// built with -fsanitize=thread, so their own synchronization (futexes, lock-free queues) is
// invisible to it and shows up as races inside those libraries, and inside OpenSSL's, whose
// TLS buffers gRPC hands between its threads under those locks. Races that involve a frame of
// this project's code are still reported, but for one: gRPC's sync client hands a call's
// status over from its own threads through code inlined into our binaries
// (CallOpClientRecvStatus::FinishOp), synchronized inside the uninstrumented library.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libabsl_\n"
         "race:libgrpc\n"
         "race:libgpr\n"
         "race:libprotobuf\n"
         "race:libcrypto\n"
         "race:libssl\n"
         "race:grpc::internal::CallOpClientRecvStatus::FinishOp\n"
         "deadlock:libabsl_\n"
         "deadlock:libgrpc\n";
}
