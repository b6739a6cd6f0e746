#ifndef SIDECAR_METRICS_H_
#define SIDECAR_METRICS_H_

// breaker-sidecar's Prometheus metrics, served over HTTP at /metrics on a port of their own
// (the configuration's metrics_listen). Every sample is read at each scrape, from the
// enforcer's counters, the beacon node's observer, the proposal warmer, the upstreams' pools
// and answer times, and the client library's policy snapshot and stats, so the metrics can
// never drift from what the sidecar does. docs/operations.md ("breaker-sidecar's metrics")
// lists every metric.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "prometheus/exposer.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "sidecar/beacon/beacon_watcher.h"
#include "sidecar/builder/enforcer.h"
#include "sidecar/builder/proposal_warmer.h"
#include "sidecar/builder/upstream_pool.h"
#include "sidecar/validator/validator_port.h"

namespace breaker::sidecar {

// How long each upstream took to answer, by route: what the proxy measures and /metrics serves
// as breaker_sidecar_upstream_request_seconds. This class is thread-safe.
class UpstreamLatency {
 public:
  // One histogram per upstream (its relay identifier, in the enforcer's order) and route, each
  // there from the start.
  explicit UpstreamLatency(std::vector<std::string> upstreams);

  // Upstream `index` answered a request to `endpoint` after `answer_time`.
  // REQUIRES: index < the number of upstreams.
  void Observe(size_t index, Endpoint endpoint, absl::Duration answer_time);

  // The family, labelled by upstream and route.
  prometheus::MetricFamily Collect() const;

  // The route label of `endpoint`: status, header, blinded_blocks, register_validators, or
  // other (the Gloas endpoints and anything else forwarded).
  static absl::string_view RouteLabel(Endpoint endpoint);

 private:
  static constexpr Endpoint kRoutes[] = {Endpoint::kStatus, Endpoint::kGetHeader,
                                         Endpoint::kSubmitBlindedBlock,
                                         Endpoint::kRegisterValidators, Endpoint::kOther};
  static size_t RouteIndex(Endpoint endpoint);

  const std::vector<std::string> upstreams_;
  // upstreams_.size() × std::size(kRoutes), upstream-major.
  std::vector<std::unique_ptr<prometheus::Histogram>> histograms_;
};

// What the metrics are read from, at every scrape. Each must outlive the Metrics.
struct MetricsSources {
  MetricsSources(const Enforcer& enforcer, const client::BreakerClient& client)
      : enforcer(&enforcer), client(&client) {}

  const Enforcer* enforcer;
  const client::BreakerClient* client;
  // The observer of the beacon node; null when the sidecar has none (then its metrics are not
  // served), as is the proposal warmer.
  const BeaconWatcher* watcher = nullptr;
  const ProposalWarmer* warmer = nullptr;
  // The connections to each upstream, in the enforcer's order (none in tests without a proxy).
  std::vector<const UpstreamPool*> pools;
  // The upstreams' answer times; null: not served.
  const UpstreamLatency* latency = nullptr;
  // The validator port; null when the sidecar has none (then its metrics are not served).
  const validator::ValidatorPort* validator_port = nullptr;
};

// This class is thread-safe.
class Metrics {
 public:
  // Serves /metrics on `listen_address` ("host:port"; port 0 picks a free port), read from
  // `sources`. Returns INVALID_ARGUMENT for an address that is not host:port, UNAVAILABLE when
  // it cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(const std::string& listen_address,
                                                        MetricsSources sources);

  // Stops serving.
  ~Metrics();

  // The port actually bound.
  int port() const { return port_; }

 private:
  class Collector;
  class WarmerCollector;
  class LatencyCollector;
  class ValidatorPortCollector;

  Metrics() = default;

  std::shared_ptr<Collector> collector_;
  std::shared_ptr<WarmerCollector> warmer_collector_;
  std::shared_ptr<LatencyCollector> latency_collector_;
  std::shared_ptr<ValidatorPortCollector> validator_port_collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_METRICS_H_
