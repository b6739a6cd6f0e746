#ifndef PROTO_CODEC_SCENARIO_CODEC_H_
#define PROTO_CODEC_SCENARIO_CODEC_H_

// The conveniences of hand-written observations (scenario files, scripted nodes), and the
// operators' actions applied to an engine. See breaker/v1/scenario.proto.

#include "absl/status/status.h"
#include "breaker/v1/breaker.pb.h"
#include "breaker/v1/state.pb.h"
#include "core/engine.h"
#include "core/types.h"

namespace breaker::codec {

// Completes a hand-written observation into the API's form: `slot` 0 becomes `current_slot`,
// and every block root shorter than 32 bytes (a label such as "r1") is zero-padded to 32
// bytes. The sequence number is left as it is.
breaker::v1::Observation ExpandScriptedObservation(breaker::v1::Observation observation,
                                                   core::Slot current_slot);

// Applies an operator's action to `engine`, as the Admin rpc that made it does. Returns the
// engine's error for the action, or INVALID_ARGUMENT for an empty action. The caller
// refreshes the policy.
absl::Status ApplyAdminAction(const breaker::v1::AdminAction& action, core::Engine& engine);

}  // namespace breaker::codec

#endif  // PROTO_CODEC_SCENARIO_CODEC_H_
