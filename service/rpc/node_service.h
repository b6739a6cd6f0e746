#ifndef SERVICE_RPC_NODE_SERVICE_H_
#define SERVICE_RPC_NODE_SERVICE_H_

// breaker.v1.Breaker: the beacon nodes' Connect streams and unary Report.

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "breaker/v1/breaker.grpc.pb.h"
#include "common/mutex.h"
#include "service/fleet.h"
#include "service/rpc/authorizer.h"
#include "service/rpc/served_fleet.h"

namespace breaker::service {

class NodeStream;

// Connect is served raw (grpc::ByteBuffer): every stream writes the policy's one shared
// serialization instead of serializing it again. This class is thread-safe.
class NodeService final
    : public breaker::v1::Breaker::WithCallbackMethod_Report<
          breaker::v1::Breaker::WithRawCallbackMethod_Connect<breaker::v1::Breaker::Service>> {
 public:
  // Connect and Report need Permission::kNodeStream, and a node credential may only name its
  // own node id. By the fleet's clock: a Connect stream that has not said hello within
  // `hello_timeout` is ended with DEADLINE_EXCEEDED and counted (breakerd_refused_total, input
  // "connect"), and one whose node has not read a message breakerd wrote to it within
  // `write_timeout` is ended with DEADLINE_EXCEEDED at once, the write abandoned, and counted
  // (breakerd_write_timeouts_total): streams that never speak, or stop reading, cannot pile
  // up.
  // REQUIRES: `fleet` and `authorizer` outlive the service and every stream.
  NodeService(Fleet* fleet, const Authorizer* authorizer,
              absl::Duration hello_timeout = kDefaultHelloTimeout,
              absl::Duration write_timeout = kDefaultWriteTimeout);
  // As above, over the fleet `served` is given once the gate opens: until then every call ends
  // with ServedFleet::Admit's refusal, whoever makes it. REQUIRES: `authorizer`, and the fleet
  // given, outlive the service and every stream.
  NodeService(std::shared_ptr<const ServedFleet> served, const Authorizer* authorizer,
              absl::Duration hello_timeout = kDefaultHelloTimeout,
              absl::Duration write_timeout = kDefaultWriteTimeout);
  ~NodeService() override;

  static constexpr absl::Duration kDefaultHelloTimeout = absl::Seconds(10);
  static constexpr absl::Duration kDefaultWriteTimeout = absl::Seconds(30);
  // How often, in real time, the streams are checked for their hello and write deadlines.
  static constexpr absl::Duration kDeadlineCheckPeriod = absl::Seconds(1);

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const breaker::v1::ReportRequest* request,
                                   breaker::v1::ReportResponse* response) override;

  // Ends every stream with `why` (UNAVAILABLE: shutdown, or a replica that stopped leading;
  // nodes reconnect elsewhere or later) and refuses new ones.
  void Shutdown(
      const absl::Status& why = absl::UnavailableError("breakerd is shutting down; reconnect"));

  // Checks every stream's credential against the access file in force (after a reload) and
  // ends, with PERMISSION_DENIED, each one that lost Permission::kNodeStream or whose node id
  // the file no longer binds to it. Returns how many it ended.
  size_t Reauthorize();

 private:
  friend class NodeStream;

  // Makes `stream` the node's stream and records the node as connected, holding policy
  // `held_version`, ending the stream it replaces. UNAVAILABLE when shutting down or while the
  // state store fails, RESOURCE_EXHAUSTED for a new node beyond max_connected_nodes or
  // max_known_nodes.
  grpc::Status Register(const breaker::v1::Hello& hello, uint64_t held_version,
                        const std::string& peer, const std::shared_ptr<NodeStream>& stream);
  // Forgets `stream`, and records the node as disconnected, if it is still the node's
  // stream; a replaced stream changes nothing.
  void Unregister(const std::string& node_id, const NodeStream* stream);
  // `stream` is done (OnDone).
  void Closed(const NodeStream* stream);

  // REQUIRES: ServedFleet::Admit returned OK for the call, or for the one of the stream.
  Fleet* fleet() const { return served_->fleet(); }
  // Ends the streams past their hello or write deadline, every kDeadlineCheckPeriod until
  // stopped.
  void CheckDeadlines();

  const std::shared_ptr<const ServedFleet> served_;
  const Authorizer* const authorizer_;
  const absl::Duration hello_timeout_;
  const absl::Duration write_timeout_;
  Mutex mu_;
  CondVar stop_checks_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Not OK once Shutdown ran: what every stream is ended with.
  absl::Status shutdown_ ABSL_GUARDED_BY(mu_);
  // The stream of each node that said hello.
  absl::flat_hash_map<std::string, std::weak_ptr<NodeStream>> streams_ ABSL_GUARDED_BY(mu_);
  // Every stream not yet done, hello or not, for Shutdown.
  absl::flat_hash_map<const NodeStream*, std::weak_ptr<NodeStream>> open_streams_
      ABSL_GUARDED_BY(mu_);
  // Runs CheckDeadlines. Last: it starts once the rest is built.
  std::thread deadline_checks_;
};

}  // namespace breaker::service

#endif  // SERVICE_RPC_NODE_SERVICE_H_
