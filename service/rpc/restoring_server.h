#ifndef SERVICE_RPC_RESTORING_SERVER_H_
#define SERVICE_RPC_RESTORING_SERVER_H_

// What answers on breakerd's address while it restores its state: health says NOT_SERVING
// (overall and for both services), and every other call is UNAVAILABLE, so that health
// checkers see breakerd restoring rather than a refused connection, and nodes retry.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace breaker::service {

class RestoringServer {
 public:
  // Listens on `address` with `credentials`. UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<RestoringServer>> Start(
      const std::string& address, const std::shared_ptr<grpc::ServerCredentials>& credentials);

  // Stops answering and releases the port, for breakerd's server to bind it.
  ~RestoringServer();

  // The port bound (the one picked, for port 0).
  int port() const { return port_; }

 private:
  RestoringServer() = default;

  // Answers every call the health service does not.
  std::unique_ptr<grpc::CallbackGenericService> unavailable_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// `address` ("host:port", "[v6]:port") with its port replaced by `port`; other forms ("unix:")
// as they are.
std::string WithPort(const std::string& address, int port);

}  // namespace breaker::service

#endif  // SERVICE_RPC_RESTORING_SERVER_H_
