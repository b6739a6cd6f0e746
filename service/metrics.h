#ifndef SERVICE_METRICS_H_
#define SERVICE_METRICS_H_

// breakerd's Prometheus metrics, served over HTTP at /metrics on a port of their own
// (--metrics_listen). Counters and histograms are fed by the fleet and the node streams
// through MetricsSink; the gauges that describe the state (mode, policy version, bans, nodes)
// are read from the fleet at each scrape, so they can never drift from what the Admin API says.
// docs/operations.md ("breakerd's metrics") lists every metric.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/metrics_exposer.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "service/fleet.h"
#include "service/metrics_sink.h"

namespace breaker::service {

// This class is thread-safe.
class Metrics final : public MetricsSink {
 public:
  // Serves /metrics on `listen_address` ("host:port"; port 0 picks a free port). Returns
  // INVALID_ARGUMENT for an address that is not host:port, UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(const std::string& listen_address);

  ~Metrics() override;

  // The port actually bound.
  int port() const { return port_; }

  // Reports the state of `fleet` from now on; null stops (before the fleet goes away). Until
  // then the state's gauges are absent.
  void SetFleet(const Fleet* fleet);

  // A replica on etcd, leader or standby: from now on exports breakerd_etcd_reachable and
  // breakerd_leader (both 0 until told otherwise) and breakerd_leadership_changes_total, which
  // starts from `leadership_changes` (those of the replicas this process ran before this one)
  // and adds to it. Without this call (SQLite) the three are absent.
  // REQUIRES: called once, before EtcdAnswered and LeadershipChanged; `leadership_changes` is
  // not null.
  void ReportReplica(std::shared_ptr<std::atomic<uint64_t>> leadership_changes);
  // Whether etcd answered this replica's last call to it (EtcdStateStore::Options::on_answered).
  void EtcdAnswered(bool answered);
  // This replica took (true) or lost (false) the lead; the same twice in a row is one change.
  void LeadershipChanged(bool leading);

  // MetricsSink.
  void ObservationHandled(absl::string_view kind, ObservationOutcome outcome) override;
  void Refused(RefusedInput input, absl::StatusCode code) override;
  void FailureRecorded(FailureTarget target) override;
  void StoreWrite(StoreOperation operation, absl::Duration duration) override;
  void FanOut(absl::Duration latency) override;
  void WriteTimedOut(StreamRpc rpc) override;

 private:
  class StateCollector;

  Metrics();

  const std::shared_ptr<prometheus::Registry> registry_;
  const std::shared_ptr<StateCollector> state_;

  prometheus::Family<prometheus::Counter>& observations_family_;
  prometheus::Family<prometheus::Counter>& refused_family_;
  prometheus::Family<prometheus::Counter>& failures_family_;
  prometheus::Family<prometheus::Histogram>& store_write_family_;

  // Every known label combination is made at construction, so that each series exists (at 0)
  // from the first scrape, and the hot paths look up an immutable map without the family's
  // lock. A combination not made up front is added to its family on first use.
  absl::flat_hash_map<std::pair<std::string, ObservationOutcome>, prometheus::Counter*>
      observations_;
  absl::flat_hash_map<std::pair<RefusedInput, absl::StatusCode>, prometheus::Counter*> refused_;
  absl::flat_hash_map<FailureTarget, prometheus::Counter*> failures_;
  absl::flat_hash_map<StoreOperation, prometheus::Histogram*> store_writes_;
  prometheus::Histogram* fan_out_ = nullptr;
  absl::flat_hash_map<StreamRpc, prometheus::Counter*> write_timeouts_;

  // Set by ReportReplica before the replica's threads report to them.
  prometheus::Gauge* etcd_reachable_ = nullptr;
  prometheus::Gauge* leader_ = nullptr;
  prometheus::Counter* leadership_changes_ = nullptr;
  std::shared_ptr<std::atomic<uint64_t>> leadership_tally_;
  std::atomic<bool> leading_{false};

  std::unique_ptr<common::MetricsServer> exposer_;
  int port_ = 0;
};

}  // namespace breaker::service

#endif  // SERVICE_METRICS_H_
