#ifndef CTL_UNARY_CALL_H_
#define CTL_UNARY_CALL_H_

// One unary rpc, called and waited for. Shared by breakerctl and the tests that call
// breakerd's Admin API.
//
// Through gRPC's callback API, not the blocking one: ThreadSanitizer reports the blocking
// API's hand-over of an error status from gRPC's uninstrumented threads as a race in gRPC's
// header code.

#include <functional>
#include <future>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/channel_security.h"
#include "common/grpc_deadline.h"
#include "common/grpc_status.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace breaker::ctl {

// An answer's status as breakerctl shows it: its code, and its message as the client library
// describes it (a message refused for its size says what that means).
inline absl::Status DescribedStatus(const grpc::Status& status) {
  return absl::Status(FromGrpcStatus(status).code(), client::DescribeStatus(status));
}

// Calls `method` of `stub` (e.g. &breaker::v1::Admin::Stub::async::GetPolicy) with `request`
// and a deadline `timeout` after the call starts, and waits for the answer. Returns the service's
// error, or UNAVAILABLE / DEADLINE_EXCEEDED from gRPC itself when the service cannot be reached in
// time.
// (`Async` is the stub's nested `async` class, deduced from `method`: clang does not name it
// as `Stub::async` in a template, where the stub's member function async() hides it.)
template <typename Stub, typename Async, typename Request, typename Response>
absl::StatusOr<Response> CallUnary(Stub& stub,
                                   void (Async::*method)(grpc::ClientContext*, const Request*,
                                                         Response*,
                                                         std::function<void(grpc::Status)>),
                                   const Request& request, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(GrpcDeadlineIn(timeout));
  Response response;
  std::promise<absl::Status> done;
  (stub.async()->*method)(&context, &request, &response, [&done](grpc::Status status) {
    done.set_value(DescribedStatus(status));
  });
  if (absl::Status status = done.get_future().get(); !status.ok()) return status;
  return response;
}

}  // namespace breaker::ctl

#endif  // CTL_UNARY_CALL_H_
