#include "service/rpc/served_fleet.h"

namespace breaker::service {

absl::Status ServedFleet::Admit(grpc::CallbackServerContext* context) const {
  // The gate opens after Bind: a call that sees it open sees the fleet.
  if (gate_ == nullptr || gate_->open()) return absl::OkStatus();
  return gate_->Refusal(context);
}

}  // namespace breaker::service
