#ifndef COMMON_GRPC_DEADLINE_H_
#define COMMON_GRPC_DEADLINE_H_

// gRPC deadlines that read no clock. gRPC compares a deadline with its own clock, and takes
// one relative to when it receives it: a gpr_timespec of clock type GPR_TIMESPAN, which it
// adds to its own time when the call starts (grpc::ClientContext::set_deadline) or the wait
// begins (grpc::Server::Shutdown). So the project never turns a timeout into a time point by
// reading the system's clock (see common/clock.h), and a deadline is as long as it says
// whatever the wall clock does meanwhile.

#include "absl/time/time.h"
#include "grpc/support/time.h"

namespace breaker {

// A deadline `timeout` after gRPC takes it: for a call, after the call starts. An infinite
// timeout is no deadline; zero or less has passed already.
inline gpr_timespec GrpcDeadlineIn(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return gpr_inf_future(GPR_TIMESPAN);
  // Saturates: the longest finite timeouts, and the negative infinite one, stay in range.
  return gpr_time_from_nanos(absl::ToInt64Nanoseconds(timeout), GPR_TIMESPAN);
}

}  // namespace breaker

#endif  // COMMON_GRPC_DEADLINE_H_
