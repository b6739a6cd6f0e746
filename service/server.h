#ifndef SERVICE_SERVER_H_
#define SERVICE_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"

namespace breaker::service {

struct ServerOptions {
  // Address to listen on, "host:port". Port 0 picks a free port.
  std::string listen_address = "127.0.0.1:50051";
  // Directory holding the service's persistent state; created when missing.
  std::string state_dir = "breakerd-state";
};

// A running breakerd: the gRPC server with reflection and the standard health service.
// This class is thread-safe.
class Server {
 public:
  // Starts serving. Returns INVALID_ARGUMENT when the state directory cannot be created or
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);

  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }

  // Stops accepting calls and waits for the ones in flight to end.
  void Shutdown();

 private:
  Server(std::unique_ptr<grpc::Server> server, int port);

  std::unique_ptr<grpc::Server> server_;
  int port_;
};

}  // namespace breaker::service

#endif  // SERVICE_SERVER_H_
