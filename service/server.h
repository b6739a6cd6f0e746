#ifndef SERVICE_SERVER_H_
#define SERVICE_SERVER_H_

// breakerd assembled: the fleet state over a SQLite store, the node and admin services, health
// and reflection, on one gRPC server.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "grpcpp/channel.h"
#include "grpcpp/server.h"
#include "grpcpp/support/channel_arguments.h"
#include "service/admin_service.h"
#include "service/fleet.h"
#include "service/node_service.h"

namespace breaker::service {

struct ServerOptions {
  // Address to listen on, "host:port". Port 0 picks a free port.
  std::string listen_address = "127.0.0.1:50051";
  // Directory holding the persistent state (breakerd.db); created when missing.
  std::string state_dir = "breakerd-state";
  // Text-format breaker.v1.Config; empty: the defaults (mainnet), and no reload.
  std::string config_path;
  // REQUIRES: outlives the server.
  const core::Clock* clock = &core::SystemClock();
  // Move time along at every slot boundary by itself. Tests with a fake clock turn it off and
  // call fleet()->Tick().
  bool run_ticker = true;
};

// A running breakerd. This class is thread-safe.
class Server {
 public:
  // Starts serving. Returns the configuration file's errors (NOT_FOUND, INVALID_ARGUMENT
  // naming the field), INVALID_ARGUMENT when the state directory cannot be created, the state
  // store's errors, or UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);

  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }

  Fleet* fleet() { return fleet_.get(); }

  // A channel to this server that bypasses the network (tests, in-process tools).
  // REQUIRES: not shut down.
  std::shared_ptr<grpc::Channel> InProcessChannel() {
    return server_->InProcessChannel(grpc::ChannelArguments());
  }

  // Health goes NOT_SERVING, node streams end with UNAVAILABLE (nodes reconnect), calls in
  // flight get a few seconds to finish, then the state is flushed. Idempotent.
  void Shutdown();

 private:
  Server() = default;

  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<NodeService> node_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
  // The state directory's lock, held while the server lives.
  int lock_fd_ = -1;
};

}  // namespace breaker::service

#endif  // SERVICE_SERVER_H_
