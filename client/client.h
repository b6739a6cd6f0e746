#ifndef CLIENT_CLIENT_H_
#define CLIENT_CLIENT_H_

// The library a beacon node links to take part in the fleet's shared breaker.
//
// A beacon node makes three calls: Report what it sees, ask IsAllowed at block production, and
// Subscribe to policy changes. None of them ever waits for the network: observations are
// buffered and streamed by the library's own threads, and the policy is read from an immutable
// snapshot.
//
// When breakerd is unreachable the last fleet policy stays in force (fail-static). Past the
// staleness limit the library also runs the breaker engine locally over this node's own
// observations and applies the stricter of the two; when breakerd is back, the fleet policy
// takes over again once breakerd has acknowledged what the node saw meanwhile and the node holds
// the policy that reflects it (so a builder the node saw fail is never allowed in between).
// Before any fleet policy has arrived, the local one applies. client/policy_in_force.h states
// these rules exactly.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/policy_snapshot.h"
#include "common/clock.h"
#include "core/config.h"
#include "core/observation.h"
#include "core/policy.h"
#include "core/types.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace breaker::client {

// The level of a line the library logs.
enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2 };

// Receives each line the library logs (no trailing newline).
using LogFunction = std::function<void(LogLevel level, absl::string_view message)>;

struct ClientOptions {
  // breakerd addresses ("host:port"): every replica's, when breakerd runs on etcd. Tried in
  // turn: when one fails (down, or a standby), the next at once; the backoff below waits once
  // every one has failed since the last wait or the last stream that was answered, and only
  // its first step while a standby names a leader (see client/address_rotation.h). Required.
  std::vector<std::string> addresses;
  // Channel credentials; null means plaintext (loopback or a private network only).
  // MakeChannelCredentials (client/channel_security.h) makes TLS ones from PEM files.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Sent with every call as `authorization: Bearer <token>`, when breakerd's access file knows
  // the node by token rather than by client certificate. Empty: none.
  std::string bearer_token;
  // This node's stable id in the fleet. Required.
  std::string node_id;
  // The network the node follows; breakerd refuses a node of another network. Empty: not
  // checked.
  std::string network;
  // Reported to breakerd for ListNodes.
  std::string client_version = "breaker-client/1";

  // Observations kept until breakerd acknowledges them. When full, the oldest bids are
  // dropped first, then other non-failure observations, failures last; drops are counted.
  size_t max_buffered_observations = 65536;
  // Observations per message: 1..core::bounds::kMaxObservationsPerBatch, which breakerd accepts.
  size_t max_batch = 500;

  // Reconnect backoff: the first wait, its growth, its cap, and +/- jitter (a fraction). After
  // each wait the library opens a new connection at once: these waits, and nothing of gRPC's
  // own reconnect backoff, decide when a node comes back to a breakerd that is back.
  absl::Duration initial_backoff = absl::Seconds(1);
  double backoff_multiplier = 1.6;
  absl::Duration max_backoff = absl::Seconds(30);
  double backoff_jitter = 0.2;

  // Unreachable for longer than this, the node also applies its local engine's policy.
  // Default: two epochs of the chain.
  std::optional<absl::Duration> staleness_limit;
  // The local engine's configuration until breakerd sends its own (it does at every connect,
  // and again after every reload that changed it), e.g. from a local file. Default:
  // core::Config{} with `network`'s chain.
  std::optional<core::Config> fallback_config;
  // How often the library moves the local engine to the clock's slot and re-evaluates the
  // policy in force (staleness included), in real time. Tests with a fake clock shorten it.
  absl::Duration evaluation_interval = absl::Seconds(1);

  // Where the library's log lines go. Empty: glog, as the program has set it up (the library
  // never initializes glog; the sidecar and breakerd do). Set: every line, at every level, goes
  // to `log` and nothing to glog. `log` is called on a thread of the client's own (not the
  // caller's, nor the one of policy callbacks), one line at a time, in order, with no lock of
  // the library held: it may call the client (stats, policy), but not Stop. Lines are queued
  // (client/log_thread.h): a slow `log` delays nothing but later lines.
  // Levels: kInfo for what goes as expected (connected, the fleet's policy in force, a failed
  // connection attempt, which repeats while breakerd is away), kWarning for what an operator
  // should know (a stream that ended, an observation breakerd refused, the local engine's
  // policy taking part), kError for what
  // needs an operator (breakerd sent what this client cannot use, sequence numbers ran out).
  LogFunction log;

  // REQUIRES: outlives the client.
  const Clock* clock = &SystemClock();
};

struct ClientStats {
  bool connected = false;
  // The address of the current (or last) connection.
  std::string address;
  uint64_t reconnects = 0;
  // Observations reported, acknowledged by breakerd, waiting (sent or not), dropped when the
  // buffer was full (bids, other non-failures, failures), and refused by breakerd.
  uint64_t reported = 0;
  uint64_t acknowledged = 0;
  uint64_t buffered = 0;
  uint64_t dropped_bids = 0;
  uint64_t dropped_other = 0;
  uint64_t dropped_failures = 0;
  uint64_t refused = 0;
  // Why the last observation refused was refused, at the call or by breakerd (whose refusals
  // name the observation's sequence number); empty when none was.
  std::string last_refusal;
  // Observations breakerd acknowledged as replays (numbers it had handled already).
  uint64_t replayed = 0;
  // breakerd has handled this node's last sequence number (2^62): observations stay buffered,
  // unsent, until an operator runs `breakerctl reset --node=ID` (the library logs an error).
  bool sequence_exhausted = false;
  uint64_t fleet_policy_version = 0;
  PolicySource source = PolicySource::kLocal;
  // The node's own local engine takes part in the policy in force (source is not kFleet):
  // breakerd has been unreachable past the staleness limit, has not caught up with the node
  // yet, or has never been reached. The signal for a "fallback active somewhere" alert.
  bool fallback_active = true;
};

// In sync with breakerd: a stream is up, breakerd has acknowledged every observation reported
// so far (none is buffered), and the policy in force is the fleet's. What a node waits for at
// start and before its first proposal; the C API and every binding use this one definition.
inline bool IsSynced(const ClientStats& stats) {
  return stats.connected && stats.buffered == 0 && stats.source == PolicySource::kFleet;
}

// Thread-safe: every method may be called from any thread.
class BreakerClient {
 public:
  virtual ~BreakerClient() = default;

  // Queues an observation of this node about `slot`. Never blocks on the network.
  // Refuses, queuing nothing, what breakerd would refuse for its shape, with breakerd's own
  // code and message: INVALID_ARGUMENT for a relay that does not normalize (or is longer than
  // core::bounds::kMaxRelayIdBytes), a public key neither empty nor 48 bytes, more than
  // core::bounds::kMaxBlockRootsPerSlot roots, the self-build index where a builder is needed,
  // an attested fraction outside [0, 1], a finalized epoch after the slot's; OUT_OF_RANGE for a
  // slot outside the window as the library's clock sees it: more than max_future_slots (2)
  // ahead of its current slot, or more than amendment_window_slots (64) behind, from
  // breakerd's configuration once connected. breakerd judges again by its own clock: with the
  // two clocks apart, an observation near an edge may pass here and be refused there
  // (ClientStats::refused counts those).
  virtual absl::Status Report(core::Slot slot, core::Event event) = 0;

  // The policy in force. Wait-free in the common case (no lock shared with the network path).
  virtual std::shared_ptr<const PolicySnapshot> policy() const = 0;

  // May the node take a bid of `builder` received through `relay` (any spelling; empty for
  // P2P)? Answers from the policy in force, without blocking.
  virtual bool IsAllowed(core::BuilderIndex builder, absl::string_view relay) const = 0;

  // Calls `callback` with every new policy in force (a new fleet version, or a change of
  // source), on a library thread, never on the caller's. Returns an id for Unsubscribe.
  using PolicyCallback = std::function<void(std::shared_ptr<const PolicySnapshot>)>;
  virtual int Subscribe(PolicyCallback callback) = 0;
  // After it returns, the callback is not called any more (unless it is running on the
  // library's thread, which waits for nothing).
  virtual void Unsubscribe(int id) = 0;

  virtual ClientStats stats() const = 0;

  // The chain the library follows, chosen at its start: the fallback configuration's, else
  // the built-in one of its network. A user that checks other parties' chains (the sidecar,
  // its beacon node's) checks them against this one rather than choosing again.
  virtual core::ChainSpec chain() const = 0;

  // Stops the library's threads; buffered observations not yet acknowledged are lost (a
  // restarted node reports anew). Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

// Starts a client over gRPC. Returns INVALID_ARGUMENT for missing addresses or node id,
// a bad fallback configuration, or options out of range (named).
absl::StatusOr<std::unique_ptr<BreakerClient>> StartGrpcClient(ClientOptions options);

}  // namespace breaker::client

#endif  // CLIENT_CLIENT_H_
