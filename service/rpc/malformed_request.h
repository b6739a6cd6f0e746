#ifndef SERVICE_RPC_MALFORMED_REQUEST_H_
#define SERVICE_RPC_MALFORMED_REQUEST_H_

// gRPC answers a request it cannot parse into the rpc's request message with UNIMPLEMENTED and
// no message, and logs nothing: a client sending bad bytes learns nothing, and neither does
// the operator. This interceptor turns that answer into INVALID_ARGUMENT naming the rpc and
// what to send, and logs it.

#include <memory>

#include "grpcpp/support/server_interceptor.h"

namespace breaker::service {

// Install with ServerBuilder::experimental().SetInterceptorCreators.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeMalformedRequestInterceptorFactory();

}  // namespace breaker::service

#endif  // SERVICE_RPC_MALFORMED_REQUEST_H_
