#include "proto/codec/request_checks.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/input_bounds.h"

namespace breaker::codec {

namespace v1 = ::breaker::v1;
namespace bounds = ::breaker::core::bounds;

// Returns the first failure of the checks that follow it.
#define BREAKER_RETURN_IF_ERROR(expr)  \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

absl::Status CheckHello(const v1::Hello& hello) {
  BREAKER_RETURN_IF_ERROR(bounds::CheckNodeId("hello.node_id", hello.node_id()));
  BREAKER_RETURN_IF_ERROR(bounds::CheckMaxBytes("hello.client_version", hello.client_version(),
                                                bounds::kMaxClientVersionBytes));
  // Empty says "not known" (a first hello, an older client); any other is an identifier.
  if (!hello.network().empty()) {
    BREAKER_RETURN_IF_ERROR(
        bounds::CheckIdentifier("hello.network", hello.network(), bounds::kMaxNetworkBytes));
  }
  if (hello.fleet_id().empty()) return absl::OkStatus();
  return bounds::CheckIdentifier("hello.fleet_id", hello.fleet_id(), bounds::kMaxFleetIdBytes);
}

absl::Status CheckBatchSize(int observations) {
  if (observations <= bounds::kMaxObservationsPerBatch) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("a batch of ", observations,
                                                 " observations; send at most ",
                                                 bounds::kMaxObservationsPerBatch, " per message"));
}

absl::Status CheckReportRequest(const v1::ReportRequest& request) {
  BREAKER_RETURN_IF_ERROR(bounds::CheckNodeId("node_id", request.node_id()));
  return CheckBatchSize(request.observations().observations_size());
}

absl::Status CheckAdminAction(const state::v1::AdminAction& action) {
  // Every case and no default: an action added to the oneof does not compile (-Wswitch) until
  // its strings are bounded here.
  switch (action.action_case()) {
    case state::v1::AdminAction::kBan:
      return bounds::CheckMaxBytes("reason", action.ban().reason(), bounds::kMaxReasonBytes);
    case state::v1::AdminAction::kUnban:
    case state::v1::AdminAction::kBuilderTrust:
      return absl::OkStatus();  // numbers only
    case state::v1::AdminAction::kRelayTrust:
      return bounds::CheckMaxBytes("relay", action.relay_trust().relay(), bounds::kMaxRelayIdBytes);
    case state::v1::AdminAction::kReset:
      return bounds::CheckMaxBytes("reason", action.reset().reason(), bounds::kMaxReasonBytes);
    case state::v1::AdminAction::kResetNode:
      BREAKER_RETURN_IF_ERROR(bounds::CheckNodeId("node_id", action.reset_node().node_id()));
      return bounds::CheckMaxBytes("reason", action.reset_node().reason(), bounds::kMaxReasonBytes);
    case state::v1::AdminAction::kBanRelay:
      BREAKER_RETURN_IF_ERROR(
          bounds::CheckMaxBytes("relay", action.ban_relay().relay(), bounds::kMaxRelayIdBytes));
      return bounds::CheckMaxBytes("reason", action.ban_relay().reason(), bounds::kMaxReasonBytes);
    case state::v1::AdminAction::kUnbanRelay:
      return bounds::CheckMaxBytes("relay", action.unban_relay().relay(), bounds::kMaxRelayIdBytes);
    case state::v1::AdminAction::ACTION_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "the operator action is empty, or of a kind this breakerd does not know; send one of "
      "the Admin rpcs that change the state");
}

#undef BREAKER_RETURN_IF_ERROR

}  // namespace breaker::codec
