#ifndef SIDECAR_METRICS_H_
#define SIDECAR_METRICS_H_

// breaker-sidecar's Prometheus metrics, served over HTTP at /metrics on a port of their own
// (the configuration's metrics_listen). Every sample is read at each scrape, from the
// enforcer's counters, the beacon node's observer and the client library's policy snapshot and
// stats, so the metrics
// can never drift from what the sidecar does. README.md ("Sidecar") lists every metric.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "prometheus/exposer.h"
#include "sidecar/beacon_watcher.h"
#include "sidecar/enforcer.h"
#include "sidecar/proposal_warmer.h"
#include "sidecar/upstream_pool.h"

namespace breaker::sidecar {

// This class is thread-safe.
class Metrics {
 public:
  // Serves /metrics on `listen_address` ("host:port"; port 0 picks a free port). Returns
  // INVALID_ARGUMENT for an address that is not host:port, UNAVAILABLE when it cannot be bound.
  // `watcher` is the observer of the beacon node, null when the sidecar has none (then its
  // metrics are not served).
  // `pools`: the connections to each upstream, in the enforcer's order (none in tests that
  // have no proxy).
  // REQUIRES: `enforcer`, `client`, `watcher` and `pools` outlive the returned object.
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(const std::string& listen_address,
                                                        const Enforcer& enforcer,
                                                        const client::BreakerClient& client,
                                                        const BeaconWatcher* watcher,
                                                        std::vector<const UpstreamPool*> pools = {});

  // Stops serving.
  ~Metrics();

  // The port actually bound.
  int port() const { return port_; }

  // Serves the proposal warmer's counters too. REQUIRES: called at most once; `warmer`
  // outlives this object.
  void AddProposalWarmer(const ProposalWarmer& warmer);

 private:
  class Collector;
  class WarmerCollector;

  Metrics() = default;

  std::shared_ptr<Collector> collector_;
  std::shared_ptr<WarmerCollector> warmer_collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_METRICS_H_
