#include "service/metrics_sink.h"

namespace breaker::service {

absl::string_view Label(ObservationOutcome outcome) {
  switch (outcome) {
    case ObservationOutcome::kApplied:
      return "applied";
    case ObservationOutcome::kNoEffect:
      return "no_effect";
    case ObservationOutcome::kDuplicate:
      return "duplicate";
    case ObservationOutcome::kRefused:
      return "refused";
  }
  return "unknown";
}

absl::string_view Label(RefusedInput input) {
  switch (input) {
    case RefusedInput::kObservation:
      return "observation";
    case RefusedInput::kMessage:
      return "message";
    case RefusedInput::kConnect:
      return "connect";
    case RefusedInput::kReport:
      return "report";
    case RefusedInput::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::string_view Label(FailureTarget target) {
  switch (target) {
    case FailureTarget::kBuilder:
      return "builder";
    case FailureTarget::kRelay:
      return "relay";
  }
  return "unknown";
}

absl::string_view Label(StoreOperation operation) {
  switch (operation) {
    case StoreOperation::kAppend:
      return "append";
    case StoreOperation::kSnapshot:
      return "snapshot";
  }
  return "unknown";
}

absl::string_view Label(StreamRpc rpc) {
  switch (rpc) {
    case StreamRpc::kConnect:
      return "connect";
    case StreamRpc::kWatchPolicy:
      return "watch_policy";
  }
  return "unknown";
}

}  // namespace breaker::service
