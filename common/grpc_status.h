#ifndef COMMON_GRPC_STATUS_H_
#define COMMON_GRPC_STATUS_H_

// The two conversions between absl::Status and grpc::Status at the project's gRPC edges: the
// services answer with ToGrpcStatus, the callers read answers with FromGrpcStatus. The
// canonical codes have the same numbers in both.

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace breaker {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace breaker

#endif  // COMMON_GRPC_STATUS_H_
