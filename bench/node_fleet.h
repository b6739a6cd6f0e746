#ifndef BENCH_NODE_FLEET_H_
#define BENCH_NODE_FLEET_H_

// N simulated beacon nodes, each holding a breaker.v1.Breaker.Connect stream as the client
// library does (hello with the policy held, an acknowledgement for every policy, reconnects
// with the library's backoff, each attempt on a new channel of its own), on gRPC's callback API
// so that thousands of streams need no thread each. Optionally several streams share one
// channel (one connection), which they then keep across attempts. Server messages are read
// raw, as ServerMessageViews (see there why).
//
// Every figure is taken where the node sees it, in gRPC's callbacks, with the steady clock; the
// harness's thread only polls for completion.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/server_message_view.h"
#include "bench/server_messages.h"
#include "breaker/v1/breaker.pb.h"
#include "client/address_rotation.h"
#include "common/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/generic/generic_stub.h"

namespace breaker::bench {

struct FleetOptions {
  // The servers, "host:port": each attempt goes to the next, in turn, as the client library's
  // (breakerd's replicas, of which one leads). Nodes sharing a channel use the first only.
  std::vector<std::string> addresses;
  int nodes = 0;
  // Streams sharing one channel (one HTTP/2 connection). 1: a new channel for every attempt,
  // as the client library opens.
  int streams_per_channel = 1;
  // Sent in every hello.
  std::string network = "mainnet";
  // The client library's reconnect backoff (ClientOptions' defaults).
  absl::Duration initial_backoff = absl::Seconds(1);
  double backoff_multiplier = 1.6;
  absl::Duration max_backoff = absl::Seconds(30);
  double backoff_jitter = 0.2;
};

struct Node;
class NodeStream;

// Breaker.Connect with typed requests and raw responses.
using ConnectStub = grpc::TemplatedGenericStub<breaker::v1::NodeMessage, grpc::ByteBuffer>;

// This class is thread-safe.
class NodeFleet {
 public:
  explicit NodeFleet(FleetOptions options);
  NodeFleet(const NodeFleet&) = delete;
  NodeFleet& operator=(const NodeFleet&) = delete;
  // Disconnects.
  ~NodeFleet();

  int size() const { return static_cast<int>(nodes_.size()); }

  // Opens every node's stream; a node whose stream fails retries with backoff.
  void ConnectAll();

  // Waits until every node's stream has answered and every node holds the same policy version;
  // returns it. DEADLINE_EXCEEDED says how many nodes are not there.
  absl::StatusOr<uint64_t> WaitConverged(absl::Duration timeout) const;

  // Waits until every node holds `version` or a later one; returns, per node, when the harness
  // saw it holding one (on the steady clock, polled every millisecond). DEADLINE_EXCEEDED says
  // how many do not.
  absl::StatusOr<std::vector<std::chrono::steady_clock::time_point>> WaitAllHold(
      uint64_t version, absl::Duration timeout) const;

  // --- Fan-out ---
  // Sends a failure that bans `builder` through node `sender` and waits until every node holds
  // a newer policy than now. Returns, for each node that does within `timeout`, the time from
  // the send to its receipt of the policy, in ms; `missed` counts the others.
  // REQUIRES: converged (WaitConverged), no ingestion running.
  std::vector<double> FanOutTrial(int sender, uint64_t builder, absl::Duration timeout,
                                  int* missed);

  // --- Ingestion ---
  // `senders` nodes, spread evenly over the fleet, each send `batch`-observation batches, the
  // next as soon as the last one is acknowledged, until StopIngestion.
  void StartIngestion(int senders, int batch);
  // Observations acknowledged so far, all nodes.
  uint64_t acked_observations() const { return acked_observations_.load(); }
  // Observations the server refused (listed in acknowledgements; a server may list only the
  // first ones of a batch, so this is a lower bound).
  uint64_t refused_observations() const { return refused_observations_.load(); }
  // Stops sending and waits until every batch sent is acknowledged. Returns the batches' round
  // trips (send to acknowledgement) since StartIngestion or the last call, in ms.
  absl::StatusOr<std::vector<double>> StopIngestion(absl::Duration timeout);
  // Forgets the round trips recorded so far (the warm-up's).
  void ClearBatchLatencies();

  // --- Reconnect storm ---
  // From now on, a node is "back" once a stream opened after this call has answered and the
  // node holds `version`.
  void ArmStorm(uint64_t version);
  // Waits until every node is back or `timeout` passes. Returns the time, in seconds after the
  // steady-clock instant `since`, at which each node that is back came back; `missed` counts
  // the others. (*attempts)[k] counts the nodes back on their (k+1)-th stream since ArmStorm,
  // so that k is the number of backoffs they waited after the first.
  std::vector<double> WaitAllBack(std::chrono::steady_clock::time_point since,
                                  absl::Duration timeout, int* missed, std::vector<int>* attempts);

  // The configuration and policies node 0 has received, in version order.
  ServerMessages Captured() const;

  // Cancels every stream, stops reconnecting, and waits for the streams to end.
  void Disconnect();

 private:
  friend class NodeStream;

  // Opens `node`'s stream unless it has one.
  void Open(Node& node);
  // Schedules `node`'s next attempt, at the address and after the wait its rotation gives for
  // how `done` ended (`attempt`), and the destruction of `done`, on the scheduler's thread.
  void ScheduleReconnect(Node& node, std::shared_ptr<NodeStream> done,
                         const client::AddressRotation::Attempt& attempt);
  void SchedulerLoop();
  void SendBatch(Node& node);

  // The callbacks of a node's stream.
  void OnUp(Node& node);
  void OnMessage(Node& node, const NodeStream& stream, grpc::ByteBuffer& message);
  void OnPolicy(Node& node, const ServerMessageView& policy, grpc::ByteBuffer& message,
                int64_t now_ns);
  void OnObservationAck(Node& node, uint64_t sequence, int64_t now_ns);
  void OnStreamDone(Node& node, std::shared_ptr<NodeStream> stream,
                    const client::AddressRotation::Attempt& attempt);

  const FleetOptions options_;
  // The shared channels' stubs (empty with one stream per channel).
  std::vector<std::unique_ptr<ConnectStub>> stubs_;
  std::vector<std::unique_ptr<Node>> nodes_;

  std::atomic<int> live_streams_{0};
  std::atomic<int> up_nodes_{0};

  // Fan-out trial in progress: nodes that reach a version above trial_base_ are counted.
  std::atomic<bool> trial_active_{false};
  std::atomic<uint64_t> trial_base_{0};
  std::atomic<int> trial_reached_{0};

  std::atomic<bool> ingesting_{false};
  std::atomic<int> ingest_batch_{0};
  std::atomic<uint64_t> acked_observations_{0};
  std::atomic<uint64_t> refused_observations_{0};
  Mutex latencies_mu_;
  std::vector<double> batch_latencies_ms_ ABSL_GUARDED_BY(latencies_mu_);

  std::atomic<uint64_t> storm_version_{0};
  std::atomic<int64_t> storm_armed_ns_{0};
  std::atomic<int> back_nodes_{0};

  mutable Mutex capture_mu_;
  std::string captured_config_ ABSL_GUARDED_BY(capture_mu_);
  std::map<uint64_t, std::string> captured_policies_ ABSL_GUARDED_BY(capture_mu_);

  Mutex scheduler_mu_;
  CondVar scheduler_changed_;
  bool reconnecting_ ABSL_GUARDED_BY(scheduler_mu_) = true;
  std::multimap<std::chrono::steady_clock::time_point, Node*> due_ ABSL_GUARDED_BY(scheduler_mu_);
  // Streams done, destroyed by the scheduler's thread (or Disconnect), never in a callback.
  std::vector<std::shared_ptr<NodeStream>> retired_ ABSL_GUARDED_BY(scheduler_mu_);
  std::thread scheduler_;
};

}  // namespace breaker::bench

#endif  // BENCH_NODE_FLEET_H_
