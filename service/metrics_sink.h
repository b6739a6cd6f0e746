#ifndef SERVICE_METRICS_SINK_H_
#define SERVICE_METRICS_SINK_H_

// What the fleet and the node streams tell the metrics, as named events. An interface with
// no-op defaults, so that the fleet, the node service and whatever links them without
// metrics (fuzzers, benchmarks) neither see nor link prometheus-cpp; service/metrics.h
// implements it.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace breaker::service {

// What an observation came to, and its label value.
enum class ObservationOutcome { kApplied, kNoEffect, kDuplicate, kRefused };
// Where refused input came in.
enum class RefusedInput {
  kObservation,  // one observation of a batch; the rest are kept
  kMessage,      // a Connect stream's message: the stream ends
  kConnect,      // a Connect stream, before its first message
  kReport,       // a Report call
  kAdmin,        // an Admin call
};
// What a recorded failure is held against.
enum class FailureTarget { kBuilder, kRelay };
// What the state store wrote.
enum class StoreOperation { kAppend, kSnapshot };
// The rpc of a stream breakerd writes to.
enum class StreamRpc { kConnect, kWatchPolicy };

// Each enum's values, and their Prometheus label values ("no_effect", "message", ...).
inline constexpr ObservationOutcome kObservationOutcomes[] = {
    ObservationOutcome::kApplied, ObservationOutcome::kNoEffect, ObservationOutcome::kDuplicate,
    ObservationOutcome::kRefused};
inline constexpr RefusedInput kRefusedInputs[] = {RefusedInput::kObservation,
                                                  RefusedInput::kMessage, RefusedInput::kConnect,
                                                  RefusedInput::kReport, RefusedInput::kAdmin};
inline constexpr FailureTarget kFailureTargets[] = {FailureTarget::kBuilder, FailureTarget::kRelay};
inline constexpr StoreOperation kStoreOperations[] = {StoreOperation::kAppend,
                                                      StoreOperation::kSnapshot};
inline constexpr StreamRpc kStreamRpcs[] = {StreamRpc::kConnect, StreamRpc::kWatchPolicy};
absl::string_view Label(ObservationOutcome outcome);
absl::string_view Label(RefusedInput input);
absl::string_view Label(FailureTarget target);
absl::string_view Label(StoreOperation operation);
absl::string_view Label(StreamRpc rpc);

// Implementations are thread-safe and never block: they are called on the fleet's writer
// thread and on gRPC's threads, some under the fleet's engine lock.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  // A node's observation was handled. `kind` is its event's field name in
  // breaker.v1.Observation ("payload_missing", ...; "none" when unset).
  virtual void ObservationHandled(absl::string_view /*kind*/, ObservationOutcome /*outcome*/) {}

  // Input refused with `code`.
  virtual void Refused(RefusedInput /*input*/, absl::StatusCode /*code*/) {}

  // A failure report completed its vote and the engine recorded a failure against a builder
  // or (pre-Gloas) a relay.
  virtual void FailureRecorded(FailureTarget /*target*/) {}

  // The state store wrote: a group commit of journal entries, or a snapshot.
  virtual void StoreWrite(StoreOperation /*operation*/, absl::Duration /*duration*/) {}

  // A node stream finished writing a policy version `latency` after the fleet published it.
  virtual void FanOut(absl::Duration /*latency*/) {}

  // A stream of `rpc` was ended because a message written to it was not read in time: its
  // peer stopped reading.
  virtual void WriteTimedOut(StreamRpc /*rpc*/) {}
};

// The sink used when metrics are off.
inline MetricsSink& NoMetrics() {
  static MetricsSink* const sink = new MetricsSink();
  return *sink;
}

// Times a store operation for `metrics`, from construction to destruction, by the clock's
// monotonic reading.
class StoreTimer {
 public:
  StoreTimer(MetricsSink& metrics, const Clock& clock, StoreOperation operation)
      : metrics_(metrics), clock_(clock), operation_(operation), start_(clock.Monotonic()) {}
  ~StoreTimer() { metrics_.StoreWrite(operation_, clock_.Monotonic() - start_); }

  StoreTimer(const StoreTimer&) = delete;
  StoreTimer& operator=(const StoreTimer&) = delete;

 private:
  MetricsSink& metrics_;
  const Clock& clock_;
  const StoreOperation operation_;
  const absl::Duration start_;
};

}  // namespace breaker::service

#endif  // SERVICE_METRICS_SINK_H_
