#ifndef SERVICE_GRPC_STATUS_H_
#define SERVICE_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace breaker::service {

// The one conversion from absl::Status to grpc::Status at the service's edge. The canonical
// codes have the same numbers in both.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace breaker::service

#endif  // SERVICE_GRPC_STATUS_H_
