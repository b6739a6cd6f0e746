#ifndef SERVICE_METRICS_SINK_H_
#define SERVICE_METRICS_SINK_H_

// What the fleet and the node streams tell the metrics, as named events. An interface with
// no-op defaults, so that the fleet, the node service and whatever links them without
// metrics (fuzzers, benchmarks) neither see nor link prometheus-cpp; service/metrics.h
// implements it.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace breaker::service {

// Implementations are thread-safe and never block: they are called on the fleet's writer
// thread and on gRPC's threads, some under the fleet's engine lock.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  // A node's observation was handled. `kind` is its event's field name in
  // breaker.v1.Observation ("payload_missing", ...; "none" when unset); `outcome` is one of
  // "applied", "no_effect", "duplicate", "refused".
  virtual void ObservationHandled(absl::string_view /*kind*/, absl::string_view /*outcome*/) {}

  // Input refused with `code`. `input` says what was refused: "observation" (one observation
  // of a batch, the rest kept), "message" (a Connect stream, ended), "report" (a Report call).
  virtual void Refused(absl::string_view /*input*/, absl::StatusCode /*code*/) {}

  // A failure report completed its vote and the engine recorded a failure against a
  // "builder" or (pre-Gloas) a "relay".
  virtual void FailureRecorded(absl::string_view /*target*/) {}

  // The state store wrote: `operation` is "append" (a group commit of journal entries) or
  // "snapshot".
  virtual void StoreWrite(absl::string_view /*operation*/, absl::Duration /*duration*/) {}

  // A node stream finished writing a policy version `latency` after the fleet published it.
  virtual void FanOut(absl::Duration /*latency*/) {}
};

// The sink used when metrics are off.
inline MetricsSink& NoMetrics() {
  static MetricsSink* const sink = new MetricsSink();
  return *sink;
}

}  // namespace breaker::service

#endif  // SERVICE_METRICS_SINK_H_
