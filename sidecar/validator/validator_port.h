#ifndef SIDECAR_VALIDATOR_VALIDATOR_PORT_H_
#define SIDECAR_VALIDATOR_VALIDATOR_PORT_H_

// The sidecar's validator-facing port: the validator client's Beacon API, forwarded to the
// beacon node, with block production rewritten to the policy in force when the request arrived
// (block_production.h).
//
//   - Every other request passes unchanged: method, path, query, end-to-end headers and body,
//     and back the node's status, end-to-end headers and body. Hop-by-hop headers and Host are
//     the connection's own. Answers stream through as they come (Server-Sent Events of
//     /eth/v1/events included), with a bounded buffer: a caller that reads slowly slows the node's
//     sending, never grows the sidecar's memory.
//   - A beacon node that refuses the connection, or does not accept it within connect_timeout, is
//     answered at once: 503 naming it, so that the validator client moves to its fallback node.
//     One that accepts but sends no answer head within answer_timeout: 504.
//   - Connections to the node are kept alive between requests (node_connections.h); one the
//     node closed while it was idle is found closed before the next request, which opens another.
//   - Bounds: a request body over max_body_bytes is refused (413) before the node is contacted;
//     a request line or header over 8 KiB is refused by the HTTP server (414 or 400). A caller
//     that sends its request or reads its answer slower than caller_timeout per read or write
//     is disconnected; so no caller holds a thread forever.
//   - Block production: produceBlockV4's body and produceBlockV3's query are rewritten to the
//     rules of the policy in force at arrival (its version named in the log line). The answer's
//     headers tell who won (ReadBlockOutcome), counted by mode and source; when a builder-API
//     entry other than the sidecar's own ports won, its bid is reported to breakerd as a BidSeen
//     (builder index read from the answer's signed_execution_payload_bid: in JSON, or in SSZ a
//     Gloas BeaconBlock laid out by the node's preset; an answer it cannot be read from is
//     counted as unreported).
//
// This class is thread-safe.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "core/types.h"
#include "sidecar/ssz/beacon_block.h"
#include "sidecar/validator/block_production.h"
#include "sidecar/validator/node_connections.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace breaker::sidecar::validator {

struct ValidatorPortOptions {
  // Where the port listens; port 0: one the kernel picks.
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;
  // The beacon node: its URL as configured (named in errors), "scheme://host[:port]", and the
  // path put before every request's.
  std::string beacon_node_url;
  std::string beacon_node_base;
  std::string beacon_node_path_prefix;
  // The sidecar's builder-API ports, by normalized url, each with the upstream behind it.
  absl::flat_hash_map<std::string, OwnPortUpstream> own_ports;
  size_t max_body_bytes = 16 << 20;
  absl::Duration connect_timeout = absl::Seconds(1);
  absl::Duration answer_timeout = absl::Seconds(60);
  absl::Duration caller_timeout = absl::Seconds(5);
  // Connections served at once, each on a thread of its own (an idle kept-alive one or an event
  // stream holds its thread, and nothing else); more wait for a thread.
  size_t max_connections = 256;
  // Kept-alive connections to the beacon node, idle between requests: at most this many, each
  // for at most node_idle_timeout (short, so that the node's server seldom closes one first).
  size_t max_idle_node_connections = 8;
  absl::Duration node_idle_timeout = absl::Seconds(4);
  // The beacon node's preset, which an SSZ block's layout depends on (the sidecar's beacon
  // watcher learns it); mainnet's when not set.
  std::function<sidecar::ssz::Preset()> preset = [] { return sidecar::ssz::Preset::kMainnet; };
};

// What the port did, since its start.
struct ValidatorPortCounters {
  uint64_t requests = 0;
  // Requests that took a kept-alive connection an earlier one had opened (a new one is opened
  // in its place when the node closed it while it was idle).
  uint64_t node_connections_reused = 0;
  // Answered 503 or 504 by the sidecar: the beacon node was down or did not answer in time.
  uint64_t beacon_node_unreachable = 0;
  // produceBlockV4 bodies and produceBlockV3 queries changed by the policy, by mode.
  std::array<uint64_t, 3> rewritten_by_mode = {};
  // produceBlockV4 bodies whose top level could not be read, by mode.
  std::array<uint64_t, 3> unreadable_by_mode = {};
  // Entries dropped as malformed, and by the policy; keys dropped from kept entries.
  uint64_t entries_malformed = 0;
  uint64_t entries_refused = 0;
  uint64_t keys_dropped = 0;
  // Blocks produced (200 answers), by mode and PayloadSource.
  std::array<std::array<uint64_t, 4>, 3> blocks_by_mode_and_source = {};
  // Builder-API wins reported as a BidSeen, and those not reported: the builder could not be
  // read, or the client library refused the observation.
  uint64_t bids_reported = 0;
  uint64_t bids_unreported = 0;
};

class ValidatorPort {
 public:
  // REQUIRES: `client` and `clock` outlive the port.
  ValidatorPort(ValidatorPortOptions options, client::BreakerClient& client, const Clock& clock);
  ~ValidatorPort();

  ValidatorPort(const ValidatorPort&) = delete;
  ValidatorPort& operator=(const ValidatorPort&) = delete;

  // Binds and serves on a thread of its own. UNAVAILABLE naming the address when it cannot be
  // bound.
  absl::Status Start();
  // The port served. REQUIRES: Start() succeeded.
  int port() const { return port_; }
  // Closes the port and ends every exchange in flight. Idempotent.
  void Stop();

  ValidatorPortCounters counters() const;

 private:
  class Exchange;
  void Handle(const void* request, void* response);
  // Reports the bid of the builder-API entry at `builder_url` that won `slot` (the answer's
  // `body` of `content_type`) as a BidSeen.
  void ReportWin(const std::string& body, const std::string& content_type,
                 const std::string& builder_url, core::Slot slot);

  const ValidatorPortOptions options_;
  client::BreakerClient& client_;
  NodeConnections connections_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable Mutex mu_;
  ValidatorPortCounters counters_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Exchange*> in_flight_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace breaker::sidecar::validator

#endif  // SIDECAR_VALIDATOR_VALIDATOR_PORT_H_
