#ifndef SERVICE_RPC_SERVER_H_
#define SERVICE_RPC_SERVER_H_

// breakerd assembled: the fleet state over a SQLite or etcd store, the node and admin services,
// health and reflection, on one gRPC server.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/server.h"
#include "grpcpp/support/channel_arguments.h"
#include "service/fleet.h"
#include "service/rpc/access_policy.h"
#include "service/rpc/admin_service.h"
#include "service/rpc/authorizer.h"
#include "service/rpc/node_service.h"
#include "service/rpc/restore_gate.h"
#include "service/rpc/served_fleet.h"
#include "service/rpc/server_settings.h"
#include "service/rpc/transport_security.h"
#include "service/service_limits.h"
#include "service/storage/store_selection.h"

namespace breaker::service {

struct ServerOptions {
  // Address to listen on, "host:port". Port 0 picks a free port.
  std::string listen_address = "127.0.0.1:50051";
  // TLS or mutual TLS; none: plaintext, which only a loopback address accepts unless
  // allow_insecure_listen.
  ServerTlsFiles tls;
  bool allow_insecure_listen = false;
  // Text-format breaker.v1.AccessPolicy: who may call what. Empty: every caller that reaches
  // the port is an admin.
  std::string access_file;
  // Where the state is kept: "sqlite", in state_dir, or "etcd", as `etcd` says (see
  // service/storage/store_selection.h).
  std::string store = "sqlite";
  // Directory holding the persistent state (breakerd.db); created when missing.
  std::string state_dir = "breakerd-state";
  EtcdSelection etcd;
  // With store "etcd": where nodes and operators reach this replica, "host:port". The leader
  // key holds it while this replica leads, and standbys name it. Empty: listen_address.
  std::string advertise_address;
  // With store "etcd": called once, from a thread of the server's, when this replica stops
  // leading (etcd deposed it) or cannot restore the state it won, with why. The owner then
  // destroys the server and, when `why` is UNAVAILABLE, starts another one, which campaigns
  // again (see RunBreakerd). Must not block nor destroy the server itself.
  std::function<void(const absl::Status& why)> on_stepped_down;
  // With store "etcd": how often the servers started with copies of these options took or
  // lost the lead. Copies share it, so that breakerd_leadership_changes_total counts on across
  // the servers one process starts one after another (RunBreakerd, after each step-down).
  std::shared_ptr<std::atomic<uint64_t>> leadership_changes =
      std::make_shared<std::atomic<uint64_t>>(0);
  // Text-format breaker.v1.Config; empty: the defaults (mainnet), and no reload.
  std::string config_path;
  // Address to serve Prometheus metrics on (HTTP, /metrics), "host:port"; port 0 picks a free
  // port. Empty: no metrics.
  std::string metrics_listen;
  // REQUIRES: outlives the server.
  const Clock* clock = &SystemClock();
  // Move time along at every slot boundary by itself. Tests with a fake clock turn it off and
  // call fleet()->Tick().
  bool run_ticker = true;

  // Transport limits: they hold per connection and cannot change while the server runs, so
  // they are options (flags), not configuration.
  //
  // Largest message a client may send, in bytes; gRPC ends a call that sends a larger one with
  // RESOURCE_EXHAUSTED ("Received message larger than max"). A full batch of 1000
  // observations takes about 100 KB (bids with 48-byte keys; 300 KB with 200-character relay
  // URLs), so 1 MiB leaves room without letting one message cost much.
  int max_receive_message_bytes = kDefaultMaxReceiveMessageBytes;
  // Calls one HTTP/2 connection may hold open at once (a node needs one, a dashboard a few);
  // beyond it, the client's next call waits until one ends.
  int max_concurrent_streams = 100;
  // At shutdown, how long health reports NOT_SERVING while streams and calls go on, so that
  // load balancers and health-checking clients move away before the streams end.
  absl::Duration drain_period = absl::ZeroDuration();
  // How long a Connect stream may stay open without saying hello (by `clock`); then it ends
  // with DEADLINE_EXCEEDED, counted.
  absl::Duration hello_timeout = absl::Seconds(10);
  // How long a message breakerd writes to a stream (Connect, WatchPolicy) may wait for its peer
  // to read it (by `clock`); then the stream ends with DEADLINE_EXCEEDED at once, counted.
  absl::Duration write_timeout = absl::Seconds(30);
};

// How long a call that arrives while the state is restored waits for it; then it ends with
// UNAVAILABLE and the client retries. Restoring takes well under a second with a snapshot of
// the usual size.
inline constexpr absl::Duration kMaxRestoreHold = absl::Seconds(30);

// How long a replica that stepped down keeps its port open before its server shuts down: a call
// already sent to it (a paused leader's sockets hold them) reaches the services, which refuse it
// naming the step-down, instead of being cancelled, saying nothing, by the server's shutdown.
inline constexpr absl::Duration kStepDownRefusalPeriod = absl::Milliseconds(200);

// How long a replica that could not campaign (etcd out of reach) waits before it tries again:
// from the first, doubling up to the last.
inline constexpr absl::Duration kFirstCampaignRetry = absl::Seconds(1);
inline constexpr absl::Duration kMaxCampaignRetry = absl::Seconds(10);

// The ranges CheckServerOptions accepts.
inline constexpr int kMinReceiveMessageBytes = 64 << 10;
inline constexpr int kMaxReceiveMessageBytes = 64 << 20;
inline constexpr int kMinConcurrentStreams = 4;
inline constexpr int kMaxConcurrentStreams = 100'000;
inline constexpr absl::Duration kMaxDrainPeriod = absl::Minutes(10);
inline constexpr absl::Duration kMinHelloTimeout = absl::Seconds(1);
inline constexpr absl::Duration kMaxHelloTimeout = absl::Minutes(10);
inline constexpr absl::Duration kMinWriteTimeout = absl::Seconds(1);
inline constexpr absl::Duration kMaxWriteTimeout = absl::Minutes(10);

// INVALID_ARGUMENT, naming the flag, for an address without a port, a message limit, stream
// limit, drain period, hello or write timeout outside its range, a store selection
// CheckStoreSelection refuses, or an advertised address without --store=etcd.
absl::Status CheckServerOptions(const ServerOptions& options);

class Metrics;

// A running breakerd. Its methods may be called from any thread; Shutdown() is idempotent, but
// not to be called from two threads at once (the destructor calls it).
class Server {
 public:
  // Binds the address, restores the state, then serves. While the state is restored, health
  // says NOT_SERVING and every call to breakerd's services waits (RestoreGate), at most
  // kMaxRestoreHold: a node reconnecting during a restart is answered as soon as the state is
  // restored, instead of being refused and backing off. A restore that fails ends the calls
  // waiting with UNAVAILABLE, saying so.
  //
  // On etcd (a replica), returns once bound: the server campaigns on a thread of its own. Until
  // it leads, it is a standby: health NOT_SERVING, and every call to breakerd's services ends
  // at once with UNAVAILABLE naming the leader's advertised address (or why there is none).
  // Once it leads, it restores the state as above and serves. When etcd deposes it, it ends
  // its streams with UNAVAILABLE, goes NOT_SERVING, acknowledges nothing more, and calls
  // on_stepped_down.
  // Returns CheckServerOptions' errors, the configuration file's errors (NOT_FOUND,
  // INVALID_ARGUMENT naming the field), the TLS files' and access file's errors,
  // FAILED_PRECONDITION for plaintext on a non-loopback address (see MakeServerCredentials),
  // INVALID_ARGUMENT when the state directory cannot be created, the state store's errors, or
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);

  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // The metrics port actually bound; 0 when metrics are off.
  int metrics_port() const;

  // REQUIRES: leading (on SQLite: always; on etcd: WaitUntilLeading returned true).
  Fleet* fleet() { return fleet_.get(); }

  // Waits until the state is restored and served, at most `timeout`. False on timeout, or once
  // shut down or stepped down.
  bool WaitUntilLeading(absl::Duration timeout);

  // Re-reads the access file (--access_file) and puts it in force, then ends every node stream
  // and WatchPolicy call whose credential lost its access, with PERMISSION_DENIED saying that
  // the access file changed. FAILED_PRECONDITION without an access file; otherwise the file's
  // errors (NOT_FOUND, INVALID_ARGUMENT naming the principal), and nothing changes. Logs the
  // outcome. What SIGHUP and Admin.ReloadAccess do.
  absl::StatusOr<breaker::v1::ReloadAccessResponse> ReloadAccess();

  // A channel to this server that bypasses the network (tests, in-process tools).
  // REQUIRES: not shut down.
  std::shared_ptr<grpc::Channel> InProcessChannel() {
    return server_->InProcessChannel(grpc::ChannelArguments());
  }

  // Health goes NOT_SERVING (overall and for both services) for the drain period, then node
  // streams end with UNAVAILABLE (nodes reconnect), calls in flight get a few seconds to
  // finish, and the state is flushed. Idempotent.
  void Shutdown();

 private:
  Server();

  // The phases of a replica on etcd.
  enum class Role { kStandby, kLeading, kSteppedDown };

  // Opens the fleet over `store`. The fleet's errors.
  absl::Status Restore(const ServerOptions& options, ServiceConfig config,
                       std::unique_ptr<StateStore> store, EtcdStateStore* etcd);
  // Gives the services the fleet, lets the held calls on to them, and health follow the store.
  void Serve();
  // A replica's life on etcd: campaigns (standby meanwhile), restores and serves once it
  // leads, then steps down when deposed. Returns at shutdown or once stepped down.
  void RunReplica(const ServerOptions& options, const ServiceConfig& config);
  // Ends the streams with `why`, goes NOT_SERVING and tells the owner.
  void StepDown(const ServerOptions& options, const absl::Status& why);
  // A leader's planned stop: ends the streams and operators' calls (no more writes), waits
  // until the journal holds what was submitted, then resigns the lead, so that a standby
  // leads at once, before the drain and the server's shutdown.
  void HandOver();
  // Marks the replica stepped down and tells the owner why.
  void StoppedLeading(const ServerOptions& options, const absl::Status& why);
  // Tells the metrics, if any, that this replica took (true) or lost (false) the lead.
  void ReportLeading(bool leading);
  // Waits up to `timeout` for Shutdown; true when it began.
  bool WaitForShutdown(absl::Duration timeout);
  absl::StatusOr<breaker::v1::Replication> ReadReplication() const;

  // Before the fleet, which reports to it until its destructor returns.
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Authorizer> authorizer_;
  // The services are registered before the fleet exists: they serve it once the gate opens,
  // after Serve binds it. Before the server, which calls them until it has shut down.
  std::unique_ptr<RestoreGate> gate_;
  std::shared_ptr<ServedFleet> served_fleet_;
  std::unique_ptr<NodeService> node_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  absl::Duration drain_period_;
  int port_ = 0;
  bool shut_down_ = false;

  // A replica on etcd: its thread, the store it leads with (owned by the fleet) and its phase.
  std::thread replica_;
  EtcdStateStore* etcd_ = nullptr;
  mutable Mutex replica_mu_;
  CondVar replica_changed_;
  Role role_ ABSL_GUARDED_BY(replica_mu_) = Role::kStandby;
  bool stopping_ ABSL_GUARDED_BY(replica_mu_) = false;
  // Not OK once etcd deposed the store: why. Cleared when a campaign fails, whose store never led.
  absl::Status deposed_ ABSL_GUARDED_BY(replica_mu_);
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_SERVER_H_
