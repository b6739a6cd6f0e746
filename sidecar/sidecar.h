#ifndef SIDECAR_SIDECAR_H_
#define SIDECAR_SIDECAR_H_

// breaker-sidecar as a whole: the client library towards breakerd, the observer of the beacon
// node and the warmer of the upstreams' connections before the node's proposals (when
// beacon_node_url is set), the enforcer, the upstreams' ports, and the validator port (when
// validator_listen is set).

#include <memory>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "sidecar/beacon/beacon_watcher.h"
#include "sidecar/builder/enforcer.h"
#include "sidecar/builder/proposal_warmer.h"
#include "sidecar/builder/proxy.h"
#include "sidecar/config.h"
#include "sidecar/metrics.h"
#include "sidecar/validator/validator_port.h"

namespace breaker::sidecar {

class Sidecar {
 public:
  // Starts the client library with `settings`' breakerd addresses, TLS, token, node id and
  // network, then the observer of the beacon node when `settings` names one, then serves every
  // upstream's port and the metrics (when metrics_listen is set). INVALID_ARGUMENT / NOT_FOUND
  // naming the file for bad TLS or token files, INVALID_ARGUMENT for a metrics_listen that is
  // not host:port, FAILED_PRECONDITION naming both values for a beacon node of another chain,
  // UNAVAILABLE for a port that cannot be bound.
  static absl::StatusOr<std::unique_ptr<Sidecar>> Start(const SidecarSettings& settings);

  ~Sidecar();

  // Stops the warmer, closes the validator port and the upstreams' ports, stops the observer,
  // then the client library.
  // Idempotent.
  void Stop();

  client::BreakerClient& client() { return *client_; }
  // The validator port; null when validator_listen is not set.
  const validator::ValidatorPort* validator_port() const { return validator_port_.get(); }

 private:
  Sidecar() = default;

  // Start's steps, in order. The client library towards breakerd, the enforcer on it, and
  // the record of the upstreams' answer times.
  absl::Status StartClient(const SidecarSettings& settings);
  // The beacon node's face, when the settings name a node: the proposal warmer, and the
  // watcher that feeds the observer (on the library's chain) and tells the enforcer the
  // node's preset.
  absl::Status StartBeaconFace(const SidecarSettings& settings);
  // The builder API's face: every upstream's port, the warmer's targets.
  absl::Status StartBuilderFace(const SidecarSettings& settings);
  // The validator client's face, when validator_listen is set: the validator port, which knows
  // the upstreams' ports by the urls a validator client may name them by.
  absl::Status StartValidatorFace(const SidecarSettings& settings);
  // /metrics, when metrics_listen is set.
  absl::Status StartMetrics(const SidecarSettings& settings);

  std::unique_ptr<client::BreakerClient> client_;
  // Told of reorgs by the watcher: declared before it, so destroyed after.
  std::unique_ptr<ProposalWarmer> warmer_;
  std::unique_ptr<BeaconWatcher> watcher_;
  std::unique_ptr<Enforcer> enforcer_;
  // Told by the proxy: declared before it, so destroyed after.
  std::unique_ptr<UpstreamLatency> latency_;
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<validator::ValidatorPort> validator_port_;
  // Reads the enforcer and the client: declared after them, so destroyed first.
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace breaker::sidecar

#endif  // SIDECAR_SIDECAR_H_
