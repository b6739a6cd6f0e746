#ifndef PROTO_CODEC_ADMIN_ACTION_H_
#define PROTO_CODEC_ADMIN_ACTION_H_

// The operators' actions of breakerd's journal (breaker.state.v1.AdminAction, state.proto) executed
// on the engine: what breakerd does live and at restore, and `breakerctl simulate` does offline
// (both through journal_apply.h).

#include "absl/status/status.h"
#include "breaker/state/v1/state.pb.h"
#include "core/engine.h"

namespace breaker::codec {

// Applies an operator's action to `engine`, as the Admin rpc that made it does. Returns the
// engine's error for the action, or INVALID_ARGUMENT for an empty action. The caller
// refreshes the policy.
absl::Status ApplyAdminAction(const breaker::state::v1::AdminAction& action, core::Engine& engine);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_ADMIN_ACTION_H_
